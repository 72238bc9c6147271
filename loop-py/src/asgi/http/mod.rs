//! The HTTP/1.1 exchange as the ASGI app sees it (the connection, its
//! framing and its end are the driver's, `loop_server`):
//!
//! - [`request`]: a request's scope (the connection's template, proxy
//!   headers, the TLS extension).
//! - [`exchange`]: the app's `receive`/`send` callables and the futures
//!   they wait on, and what the driver's events do to them.
//! - [`start`]: a request's app call and `AppTask`, and what the app's end
//!   means for its response.
//!
//! Each file uses only those listed before it
//! (`tests/test_module_layers.py`).

mod exchange;
mod request;
mod start;

pub(super) use exchange::{
    client_disconnected, deliver, ended, fail_or_release, send_error, writable, Receive, Send,
};
pub(super) use request::scope as request_scope;
pub(super) use start::{begin_with_app, over_limit, request};
