//! loop-core and loop-transports errors as the exceptions asyncio raises.

use loop_core::Error;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::PyErr;

pub fn to_pyerr(err: Error) -> PyErr {
    match err {
        Error::Io(e) => os_error(&e),
        Error::InvalidFd(fd) => PyValueError::new_err(format!("Invalid file descriptor: {fd}")),
        Error::Closed => PyRuntimeError::new_err("Event loop is closed"),
        Error::UnknownBackend(_) => PyValueError::new_err(err.to_string()),
        Error::BackendUnavailable { .. } => PyRuntimeError::new_err(err.to_string()),
        other => PyOSError::new_err(other.to_string()),
    }
}

/// `OSError(errno, strerror)`: Python picks the subclass (`PermissionError`,
/// …) from the errno and sets `.errno`, as the stdlib's own errors do.
pub fn os_error(err: &std::io::Error) -> PyErr {
    match err.raw_os_error() {
        Some(code) => {
            let text = err.to_string();
            let message = text
                .strip_suffix(&format!(" (os error {code})"))
                .unwrap_or(&text)
                .to_string();
            PyOSError::new_err((code, message))
        }
        None => PyOSError::new_err(err.to_string()),
    }
}

/// A transport core's error as the exception asyncio's transports raise.
pub fn transport_error(err: &loop_transports::Error) -> PyErr {
    use loop_transports::Error as E;
    match err {
        E::InvalidWaterMarks { .. } => PyValueError::new_err(err.to_string()),
        E::WriteAfterEof | E::NotWritable => PyRuntimeError::new_err(err.to_string()),
        other => match other.io_error() {
            Some(io) => os_error(io),
            None => PyRuntimeError::new_err(other.to_string()),
        },
    }
}

#[cold]
pub fn closed() -> PyErr {
    PyRuntimeError::new_err("Event loop is closed")
}

#[cold]
pub fn not_thread_safe() -> PyErr {
    PyRuntimeError::new_err(
        "Non-thread-safe operation invoked on an event loop other than the current one",
    )
}
