//! loop-core errors as the exceptions asyncio raises.

use loop_core::Error;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::PyErr;

pub fn to_pyerr(err: Error) -> PyErr {
    match err {
        // io::Error → the matching OSError subclass, errno set.
        Error::Io(e) => PyErr::from(e),
        Error::InvalidFd(fd) => PyValueError::new_err(format!("Invalid file descriptor: {fd}")),
        Error::Closed => PyRuntimeError::new_err("Event loop is closed"),
        other => PyOSError::new_err(other.to_string()),
    }
}

pub fn closed() -> PyErr {
    PyRuntimeError::new_err("Event loop is closed")
}

pub fn not_thread_safe() -> PyErr {
    PyRuntimeError::new_err(
        "Non-thread-safe operation invoked on an event loop other than the current one",
    )
}
