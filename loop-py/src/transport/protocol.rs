//! Calling a transport's protocol, and reporting what goes wrong the way
//! asyncio's transports do.

use crate::pyapi;
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PySystemExit};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `KeyboardInterrupt` and `SystemExit` leave a callback; everything else
/// a protocol raises is its transport's failure.
pub(super) fn is_exit(py: Python<'_>, err: &PyErr) -> bool {
    err.is_instance_of::<PyKeyboardInterrupt>(py) || err.is_instance_of::<PySystemExit>(py)
}

/// What a failed protocol call means: leave the callback (an exit
/// exception), or the exception to fail the transport with.
pub(super) enum Failed {
    Exit(PyErr),
    With(PyErr),
}

impl Failed {
    pub(super) fn of(py: Python<'_>, err: PyErr) -> Failed {
        if is_exit(py, &err) {
            Failed::Exit(err)
        } else {
            Failed::With(err)
        }
    }
}

/// The report half of asyncio's `_fatal_error`: an `OSError` (the peer's
/// doing: a reset, a broken pipe) is only logged in debug mode; anything
/// else goes to the loop's exception handler with `message`.
pub(super) fn report_fatal(
    event_loop: &Bound<'_, PyAny>,
    transport: &Bound<'_, PyAny>,
    protocol: Option<&Bound<'_, PyAny>>,
    exc: &Bound<'_, PyAny>,
    message: &str,
) -> PyResult<()> {
    let py = event_loop.py();
    if exc.is_instance_of::<PyOSError>() {
        if is_debug(event_loop)? {
            let kwargs = PyDict::new(py);
            kwargs.set_item("exc_info", exc)?;
            pyapi::asyncio_logger(py)?.call_method(
                "debug",
                ("%r: %s", transport, message),
                Some(&kwargs),
            )?;
        }
        return Ok(());
    }
    report_to_handler(event_loop, transport, protocol, exc, message)
}

/// A transport's failure to the loop's exception handler, whatever it is.
pub(super) fn report_to_handler(
    event_loop: &Bound<'_, PyAny>,
    transport: &Bound<'_, PyAny>,
    protocol: Option<&Bound<'_, PyAny>>,
    exc: &Bound<'_, PyAny>,
    message: &str,
) -> PyResult<()> {
    let py = event_loop.py();
    let context = PyDict::new(py);
    context.set_item("message", message)?;
    context.set_item("exception", exc)?;
    context.set_item("transport", transport)?;
    context.set_item("protocol", protocol)?;
    event_loop.call_method1("call_exception_handler", (context,))?;
    Ok(())
}

/// `protocol.pause_writing()` (`pause`) or `resume_writing()`: a failure
/// goes to the exception handler (`protocol.pause_writing() failed`), the
/// transport carries on.
pub(super) fn flow_callback(
    event_loop: &Bound<'_, PyAny>,
    transport: &Bound<'_, PyAny>,
    protocol: &Bound<'_, PyAny>,
    pause: bool,
) -> PyResult<()> {
    let py = event_loop.py();
    let method = if pause {
        "pause_writing"
    } else {
        "resume_writing"
    };
    let Err(err) = protocol.call_method0(method) else {
        return Ok(());
    };
    if is_exit(py, &err) {
        return Err(err);
    }
    let exc = err.into_value(py).into_any().into_bound(py);
    let message = format!("protocol.{method}() failed");
    report_to_handler(event_loop, transport, Some(protocol), &exc, &message)
}

pub(super) fn is_debug(event_loop: &Bound<'_, PyAny>) -> PyResult<bool> {
    event_loop.call_method0("get_debug")?.is_truthy()
}

/// asyncio's debug line for a transport event (`%r pauses reading`).
pub(super) fn debug_log(
    event_loop: &Bound<'_, PyAny>,
    transport: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<()> {
    if is_debug(event_loop)? {
        let format = format!("%r {what}");
        pyapi::asyncio_logger(event_loop.py())?.call_method1("debug", (format, transport))?;
    }
    Ok(())
}
