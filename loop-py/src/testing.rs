//! Test hooks: the submodule `ferroloop._native._testing`, compiled only
//! with the `test-hooks` feature. That is the test build `cargo xtask test`
//! and `cargo xtask develop` install into the project venvs; shipped wheels
//! (`cargo xtask wheel`, and the wheel `test` smoke-tests in a fresh venv)
//! are built without it, and the smoke test checks they have none of this.
//!
//! The hooks live in this extension, not in a separate test-only one,
//! because what they test depends on it: PyO3's `PanicException` is a type
//! object per extension module, and ferroloop resumes a panic only when it
//! fetches its own `PanicException`.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Panics with `message`: proves that a Rust panic inside a callback
/// reaches the exception handler as a `RuntimeError` and leaves the loop
/// running.
#[pyfunction(name = "panic")]
fn test_panic(message: &str) {
    panic!("{message}");
}

/// The WebSocket limits the native server takes from a `ferroloop.Config`
/// (`ServerSettings::ws`), by `loop_ws::Config` field; `None` for
/// `ws="none"`.
#[pyfunction]
fn ws_settings<'py>(config: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(ws) = crate::asgi::settings::from_config(config)?.ws else {
        return Ok(None);
    };
    let d = PyDict::new(config.py());
    d.set_item("max_message_size", ws.max_message_size)?;
    d.set_item("max_frame_size", ws.max_frame_size)?;
    d.set_item("max_queue", ws.max_queue)?;
    d.set_item("max_queue_bytes", ws.max_queue_bytes)?;
    d.set_item("ping_interval", ws.ping_interval)?;
    d.set_item("ping_timeout", ws.ping_timeout)?;
    d.set_item("close_timeout", ws.close_timeout)?;
    d.set_item("per_message_deflate", ws.per_message_deflate)?;
    Ok(Some(d))
}

/// Whether module init confirmed the private layouts context sharing
/// reads (`context_layout`): (a Context's variables, the thread's current
/// context). Tests assert both on every tested Python, so a version whose
/// layout moved fails loudly instead of silently losing the fast path.
#[pyfunction]
fn context_layouts() -> (bool, bool) {
    crate::context_layout::confirmed()
}

/// Adds `_testing` to `_native` and to `sys.modules` (so that `import
/// ferroloop._native._testing` works as well as `from ferroloop._native
/// import _testing`).
pub fn register(native: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = native.py();
    let testing = PyModule::new(py, "ferroloop._native._testing")?;
    testing.add_function(wrap_pyfunction!(test_panic, &testing)?)?;
    testing.add_function(wrap_pyfunction!(ws_settings, &testing)?)?;
    testing.add_function(wrap_pyfunction!(context_layouts, &testing)?)?;
    native.add("_testing", &testing)?;
    py.import("sys")?
        .getattr("modules")?
        .set_item("ferroloop._native._testing", &testing)?;
    Ok(())
}
