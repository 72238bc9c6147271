//! The HTTP/1.1 protocol kind: `loop_http::ServerConnection` (framing,
//! pipelining, keep-alive, `100 Continue`, unread bodies, HTTP's
//! deadlines) and the bytes it produced for the stream. What a request
//! means for the application is the driver's HTTP API
//! (`driver/http_app.rs`).

use crate::counters::Timeout;
use crate::protocol::{Drained, Due, Protocol};
use loop_http::{ConnectionConfig, DrainAction, Expired, Phase, ServerConnection, TimerAction};
use std::sync::Arc;

pub(crate) struct Http1 {
    pub conn: ServerConnection,
    /// Response bytes not handed to the stream yet.
    pub out: Vec<u8>,
    /// `out` ends with a response head waiting for its first body part:
    /// a whole small response then leaves in one write (one TCP segment).
    pub hold: bool,
}

impl Http1 {
    /// A connection accepted at `accepted` (its request-head deadline runs
    /// from then).
    pub fn new(config: Arc<ConnectionConfig>, accepted: f64) -> Self {
        Http1 {
            conn: ServerConnection::new(config, accepted),
            out: Vec::new(),
            hold: false,
        }
    }
}

/// The counter of a deadline that ended a connection.
fn timeout_kind(expired: Expired) -> Timeout {
    match expired {
        Expired::Head => Timeout::RequestHead,
        Expired::KeepAlive => Timeout::KeepAlive,
        Expired::BodyRate => Timeout::Body,
    }
}

impl Protocol for Http1 {
    #[inline]
    fn receive(&mut self, data: &[u8], _now: f64) {
        self.conn.receive(data);
    }

    fn receive_eof(&mut self) {
        self.conn.receive_eof();
    }

    #[inline]
    fn output(&mut self) -> Option<&mut Vec<u8>> {
        (!self.hold).then_some(&mut self.out)
    }

    #[inline]
    fn wants_read(&self, _output_paused: bool) -> bool {
        // HTTP reads while it writes: pipelined input is bounded by
        // `pipeline_buffer`, a body by `body_buffer`, and a client that
        // goes away shows as EOF even while its response waits.
        self.conn.wants_read()
    }

    fn finished(&self) -> bool {
        self.conn.phase() == Phase::Closing
    }

    fn deadline(&self) -> Option<f64> {
        self.conn.deadline()
    }

    fn on_timer(&mut self, now: f64) -> Due {
        match self.conn.on_timer(now) {
            TimerAction::Nothing => Due::Nothing,
            TimerAction::Fail(status) => Due::Answer(status),
            TimerAction::Lose(expired) => Due::Lose(timeout_kind(expired), expired.as_str()),
        }
    }

    fn drain(&mut self, keep_idle: bool, buffered: bool, _now: f64) -> Drained {
        match self.conn.drain(buffered || !self.out.is_empty(), keep_idle) {
            DrainAction::AfterResponse => Drained::AfterCurrent,
            DrainAction::Flush => Drained::Close,
            DrainAction::Lose => Drained::Lose,
        }
    }

    fn lose(&mut self) {
        self.conn.lose();
        self.out = Vec::new();
        self.hold = false;
    }
}
