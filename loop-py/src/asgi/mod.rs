//! The native ASGI HTTP/1.1 server: a connection is a Rust state machine
//! (socket → `loop-http` codec → ASGI exchange) and Python sees only
//! `app(scope, receive, send)`.
//!
//! - [`server`]: listeners, accepting, the connection registry, timeouts.
//! - [`connection`]: one connection's socket and loop registrations around
//!   `loop_http::ServerConnection`, which decides everything HTTP.
//! - [`dispatch`]: a request's scope, the app's call, what its end means.
//! - [`exchange`]: the app's `receive`/`send` callables and their futures.
//! - [`messages`]: decoding the app's `send()` messages.
//! - [`app_task`]: the task that steps the app's coroutine.
//! - [`scope`]: the scope and messages as Python objects.
//! - [`proxy`]: trusted proxy headers.
//! - [`settings`]: configuration; raw socket calls are `crate::net`.

mod app_task;
mod connection;
mod dispatch;
mod exchange;
mod messages;
mod proxy;
mod scope;
mod server;
mod settings;

use pyo3::prelude::*;

pyo3::create_exception!(
    ferroloop,
    ClientDisconnected,
    pyo3::exceptions::PyOSError,
    "Raised by an ASGI `send()` after the client went away."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<server::HttpServer>()?;
    m.add_class::<connection::HttpConnection>()?;
    m.add_class::<exchange::Receive>()?;
    m.add_class::<exchange::Send>()?;
    m.add_class::<app_task::AppTask>()?;
    m.add(
        "ClientDisconnected",
        m.py().get_type::<ClientDisconnected>(),
    )?;
    m.add("ASGI_SPEC_VERSION", scope::SPEC_VERSION)?;
    m.add_function(wrap_pyfunction!(_check_forwarded_allow_ips, m)?)?;
    Ok(())
}

/// Validate a `forwarded_allow_ips` list the way the server will read it.
#[pyfunction]
fn _check_forwarded_allow_ips(spec: &str) -> PyResult<()> {
    proxy::Trust::parse(spec)
        .map(drop)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("forwarded_allow_ips: {e}")))
}
