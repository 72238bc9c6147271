//! What a server connection is configured with: the parser's limits, the
//! deadlines, and the bounds on what a connection may hold.

use crate::{DefaultHeaders, Limits};

/// One server's connection settings; connections share it (`Arc`).
///
/// Times are seconds on the caller's clock: the state machine never reads
/// a clock, every method that starts or checks a deadline takes `now`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionConfig {
    pub limits: Limits,
    /// From connect (or the end of the previous response) to a complete
    /// request head; a partial head past it is answered 408.
    pub timeout_request_head: f64,
    /// How long a kept connection may sit with no new request.
    pub timeout_keep_alive: f64,
    /// Kestrel's rule: after `body_rate_grace` seconds of waiting for a
    /// request body, it must have averaged at least this many bytes per
    /// second. `None`: no rule.
    pub min_body_rate: Option<f64>,
    pub body_rate_grace: f64,
    /// Request body received but not yet taken by the app: reading pauses
    /// beyond this, so a client cannot grow a connection's memory.
    pub body_buffer: usize,
    /// Unread body skipped after a response to keep the connection; more
    /// than this closes it instead.
    pub discard_limit: u64,
    /// Pipelined bytes held while a request is in flight.
    pub pipeline_buffer: usize,
    /// Added to every response, the connection's own error answers too.
    pub default_headers: DefaultHeaders,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            limits: Limits::default(),
            timeout_request_head: 10.0,
            timeout_keep_alive: 5.0,
            min_body_rate: Some(240.0),
            body_rate_grace: 5.0,
            body_buffer: 256 * 1024,
            discard_limit: 64 * 1024,
            pipeline_buffer: 64 * 1024,
            default_headers: DefaultHeaders::default(),
        }
    }
}
