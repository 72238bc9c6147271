//! One exchange: a request's life on a connection, as the driver keeps it
//! beside the protocol's own state (loop-http's framing of the request and
//! response). The connection owns its exchanges: HTTP/1.1 serves one at a
//! time (a pipelined request waits its turn); a multiplexing kind would
//! hold several.

use crate::id::ExchangeId;
use loop_transports::FileSend;

pub(crate) struct Exchange<E> {
    pub id: ExchangeId,
    /// The host's state (its waiters and task).
    pub app: E,
    /// A response body from a file, while it is sent.
    pub file: Option<FileBody>,
    /// A `send` waits for the write buffer to drain.
    pub send_waits: bool,
    /// A WebSocket `receive` waits for input.
    pub recv_waits: bool,
    /// [`Event::Ended`](crate::Event::Ended) went out.
    pub ended: bool,
    /// When the head completed (for the access log's duration).
    pub started: f64,
    /// The request opens a WebSocket: its handshake, until answered.
    pub offer: Option<loop_ws::Offer>,
    /// `client - "WebSocket /path"`, the session's access-log prefix.
    pub ws_log: Option<String>,
}

impl<E> Exchange<E> {
    pub fn new(id: ExchangeId, app: E, started: f64) -> Self {
        Exchange {
            id,
            app,
            file: None,
            send_waits: false,
            recv_waits: false,
            ended: false,
            started,
            offer: None,
            ws_log: None,
        }
    }
}

/// A file region on its way to the client (`http.response.pathsend`,
/// `zerocopysend`).
pub(crate) struct FileBody {
    pub send: FileSend,
    /// The body goes on after the file.
    pub more: bool,
    /// Move the file's position past the region once sent.
    pub reposition: bool,
}
