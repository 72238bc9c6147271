//! Server settings the native side needs, validated by `ferroloop.Config`
//! before they reach here, and the fixed bounds of a connection.

use super::proxy::Trust;
use loop_http::Limits;

pub struct Settings {
    pub limits: Limits,
    pub timeout_request_head: f64,
    pub timeout_keep_alive: f64,
    /// Kestrel's rule: after `body_rate_grace` seconds of waiting for a
    /// request body, it must average at least this many bytes per second.
    pub min_body_rate: Option<f64>,
    pub body_rate_grace: f64,
    pub limit_concurrency: Option<usize>,
    pub root_path: String,
    pub server_header: Option<Vec<u8>>,
    pub date_header: bool,
    /// `None` when proxy headers are off.
    pub proxy: Option<Trust>,
    pub access_log: bool,
}

/// Request body received but not yet taken by the app: reading pauses
/// beyond this, so a client cannot grow a connection's memory.
pub const BODY_BUFFER: usize = 256 * 1024;
/// Unread body the server skips after a response to keep the connection.
pub const DISCARD_LIMIT: u64 = 64 * 1024;
/// Pipelined bytes held while a request is in flight.
pub const PIPELINE_BUFFER: usize = 64 * 1024;
/// Response bytes buffered before `send()` waits (asyncio's water marks).
pub const WRITE_HIGH: usize = 64 * 1024;
pub const WRITE_LOW: usize = 16 * 1024;
/// How long a closing connection may take to write what it has buffered
/// (an error response to a client that stopped reading).
pub const CLOSING_DRAIN: f64 = 10.0;
/// How long a closing connection keeps reading (and discarding) so that an
/// error response is not destroyed by an RST for unread input.
pub const LINGER: f64 = 2.0;
/// One `recv` into the server's shared read buffer.
pub const READ_CHUNK: usize = 256 * 1024;
