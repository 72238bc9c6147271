//! The ASGI `websocket` session: what the app's `receive()` and `send()`
//! mean (the wire is the driver's: the handshake's HTTP exchange, then
//! the WebSocket kind on the same connection).
//!
//! - [`decode`]: the app's `send()` messages as Rust values.
//! - [`events`]: what a `receive()` gets, in ASGI's order, and the waiter
//!   one that found nothing leaves.
//! - [`receiving`]: the native awaitable `receive()` returns.
//! - [`session`]: the session's stages, its `receive`/`send` callables, the
//!   driver's events for it, and the app's end.
//!
//! Each file uses only those listed before it
//! (`tests/test_module_layers.py`).

mod decode;
mod events;
mod receiving;
mod session;

pub(super) use events::WsRef;
pub(super) use session::{ended, request, wake_receiver, WsReceive, WsSend};
