//! The asyncio transports, native: each transport ferroloop hands a Python
//! protocol is a thin Python object (`ferroloop/_transports.py`, for
//! `isinstance(t, asyncio.Transport)` and the extra info) over one of these
//! classes, which own a `loop-transports` core and make every decision of
//! asyncio's transport contract in Rust:
//!
//! - [`stream`]: TCP and Unix stream sockets, read and write pipes
//!   ([`loop_transports::StreamCore`]): protocol dispatch, write-now-buffer-
//!   the-rest, water marks, half-close, close after draining, abort;
//! - [`listener`]: a listening socket's accept loop
//!   ([`loop_transports::ListenerCore`]) for asyncio's `Server`;
//! - [`datagram`]: UDP and Unix datagram sockets
//!   ([`loop_transports::DatagramCore`]).
//!
//! Readiness reaches them from the loop's reactor through an
//! [`IoPort`](crate::event_loop::IoPort), with no Python call; Python runs
//! only in the protocol's own methods. The core is never borrowed across a
//! call into Python, so a protocol may call back into its transport from
//! any callback.
//!
//! - [`protocol`]: calling the protocol and reporting its failures as
//!   asyncio does (`_fatal_error`, the flow-control callbacks).
//! - [`bytes`]: bytes-like arguments seen as slices.
//! - [`addr`]: socket addresses between the kernel's form and Python's.
//! - [`watch`]: what the reactor watches each transport's fd for.

mod addr;
mod bytes;
pub(crate) mod datagram;
pub(crate) mod listener;
mod protocol;
pub(crate) mod stream;
mod watch;

use pyo3::intern;
use pyo3::prelude::*;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<stream::StreamTransport>()?;
    m.add_class::<listener::Listener>()?;
    m.add_class::<datagram::DatagramTransport>()?;
    Ok(())
}

/// A transport's last step, after `connection_lost`: the fd's owner (the
/// socket or pipe file) closes it, then the Python transport cleans up after
/// itself (`_after_connection_lost`: its server, its registry entry), each
/// whatever the other did.
fn release(
    py: Python<'_>,
    owner: Option<&Py<PyAny>>,
    transport: Option<&Py<PyAny>>,
) -> PyResult<()> {
    let closed = match owner {
        Some(owner) => owner.bind(py).call_method0(intern!(py, "close")).map(drop),
        None => Ok(()),
    };
    let after = match transport {
        Some(t) => t
            .bind(py)
            .call_method0(intern!(py, "_after_connection_lost"))
            .map(drop),
        None => Ok(()),
    };
    closed.and(after)
}
