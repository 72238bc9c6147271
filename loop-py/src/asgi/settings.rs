//! Server settings the native side needs, validated by `ferroloop.Config`
//! before they reach here, and the I/O bounds of a connection (the HTTP
//! bounds are `loop_http::ConnectionConfig`'s).

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

/// Response bytes buffered before `send()` waits (asyncio's water marks).
pub const WRITE_HIGH: usize = 64 * 1024;
pub const WRITE_LOW: usize = 16 * 1024;
/// One `recv` into the server's shared read buffer.
pub const READ_CHUNK: usize = 256 * 1024;
