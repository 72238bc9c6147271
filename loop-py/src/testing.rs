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

/// Panics with `message`: proves that a Rust panic inside a callback
/// reaches the exception handler as a `RuntimeError` and leaves the loop
/// running.
#[pyfunction(name = "panic")]
fn test_panic(message: &str) {
    panic!("{message}");
}

/// Adds `_testing` to `_native` and to `sys.modules` (so that `import
/// ferroloop._native._testing` works as well as `from ferroloop._native
/// import _testing`).
pub fn register(native: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = native.py();
    let testing = PyModule::new(py, "ferroloop._native._testing")?;
    testing.add_function(wrap_pyfunction!(test_panic, &testing)?)?;
    native.add("_testing", &testing)?;
    py.import("sys")?
        .getattr("modules")?
        .set_item("ferroloop._native._testing", &testing)?;
    Ok(())
}
