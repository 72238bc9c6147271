//! The limits and timeouts of a WebSocket session.

/// Every bound a session has. Memory per connection is bounded by these,
/// never by what a client sends (for compressed messages: by the
/// *decompressed* size).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Largest message (after decompression) the peer may send; larger is
    /// refused with 1009. uvicorn's `ws_max_size`: 16 MiB.
    pub max_message_size: usize,
    /// Largest single frame payload (on the wire); larger is 1009. Default:
    /// `max_message_size`.
    pub max_frame_size: usize,
    /// Messages received and not yet taken by the application before
    /// reading pauses. uvicorn's `ws_max_queue`: 32.
    pub max_queue: usize,
    /// Bytes of queued messages before reading pauses, whatever their
    /// number (so 32 × 16 MiB cannot pile up). Default 16 MiB.
    pub max_queue_bytes: usize,
    /// Seconds between the server's pings; `None`: no pings (20 s).
    pub ping_interval: Option<f64>,
    /// Seconds a ping may wait for its pong before the connection is
    /// failed with 1011; `None`: no limit (20 s).
    pub ping_timeout: Option<f64>,
    /// Seconds to wait for the peer's close frame (and FIN) after ours.
    pub close_timeout: f64,
    /// Accept permessage-deflate when the client offers it.
    pub per_message_deflate: bool,
}

impl Default for Config {
    fn default() -> Self {
        const MIB: usize = 1024 * 1024;
        Config {
            max_message_size: 16 * MIB,
            max_frame_size: 16 * MIB,
            max_queue: 32,
            max_queue_bytes: 16 * MIB,
            ping_interval: Some(20.0),
            ping_timeout: Some(20.0),
            close_timeout: 10.0,
            per_message_deflate: true,
        }
    }
}
