//! ferroloop's CPython extension (`ferroloop._native`).
//!
//! The native half of the event loop: scheduling, timers, the tick and fd
//! callbacks. The Python package subclasses [`event_loop::Loop`] with
//! `asyncio.AbstractEventLoop` and adds the long tail (executors, signals,
//! asyncgen hooks, exception-handler plumbing) in Python.

use pyo3::prelude::*;

mod asgi;
mod awaitable;
mod call_args;
mod cli;
mod context_layout;
mod errors;
mod event_loop;
mod future_ops;
mod gil_cell;
mod handle;
mod handle_pool;
mod handle_tracking;
mod owner;
mod pyapi;
mod queue;
mod shared_context;
#[cfg(feature = "test-hooks")]
mod testing;
mod toolkit;
mod transport;

#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<event_loop::Loop>()?;
    context_layout::check(m.py())?;
    event_loop::install_fastcall_methods(m.py())?;
    m.add_class::<handle::Handle>()?;
    m.add_class::<handle::TimerHandle>()?;
    asgi::register(m)?;
    transport::register(m)?;
    queue::register(m)?;
    toolkit::register(m)?;
    m.add_function(wrap_pyfunction!(cli::parse_cli, m)?)?;
    m.add_function(wrap_pyfunction!(cli::server_settings, m)?)?;
    m.add_function(wrap_pyfunction!(cli::config_from_env, m)?)?;
    m.add_function(wrap_pyfunction!(cli::parse_dotenv, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    #[cfg(feature = "test-hooks")]
    testing::register(m)?;
    Ok(())
}
