//! The asyncio stream-protocol lifecycle, for Rust users of the
//! [`Driver`](super::driver::Driver).
//!
//! `connection_made` → `data_received`* → `eof_received`? →
//! `connection_lost`, with `pause_writing`/`resume_writing` in between.
//! Every callback gets the [`Transport`]; a protocol may also keep a clone
//! from `connection_made`. Calling the transport from inside a callback is
//! allowed: the driver holds no borrow of the connection while a callback
//! runs, and events caused by such a call (pause, connection lost) are
//! delivered after the callback returns.

use super::transport::Transport;
use loop_transports::Error;

/// A stream protocol, as asyncio's `Protocol`.
pub trait StreamProtocol {
    /// The connection is established.
    fn connection_made(&mut self, transport: &Transport);

    /// Bytes arrived. `data` is only valid during the call.
    fn data_received(&mut self, data: &[u8], transport: &Transport);

    /// The peer will send no more. Return `true` to keep the transport open
    /// for writing (half-close); `false` closes it, as asyncio does.
    fn eof_received(&mut self, transport: &Transport) -> bool {
        let _ = transport;
        false
    }

    /// The connection is over: `None` after a close, abort or clean EOF of a
    /// pipe, the error otherwise. Always the last callback.
    fn connection_lost(&mut self, err: Option<Error>);

    /// The write buffer went above the high water mark.
    fn pause_writing(&mut self, transport: &Transport) {
        let _ = transport;
    }

    /// The write buffer drained to the low water mark.
    fn resume_writing(&mut self, transport: &Transport) {
        let _ = transport;
    }

    /// A connect started by the driver failed; no other callback follows.
    fn connect_failed(&mut self, err: Error) {
        let _ = err;
    }
}
