//! The WebSocket protocol kind: one session after the `101`, around the
//! sans-IO `loop_ws::Connection` (frames, pings, the closing handshake,
//! limits, the receive queue), with how it ended for the application.
//! What a session means for the application is the driver's WebSocket API
//! (`driver/ws_app.rs`).

use crate::counters::Timeout;
use crate::id::ExchangeId;
use crate::protocol::{Drained, Due, Protocol};
use loop_ws::{CloseCode, State, TimerAction};

pub(crate) struct WsKind {
    pub ws: loop_ws::Connection,
    /// Frames not handed to the stream yet.
    pub out: Vec<u8>,
    /// The exchange the session continues (its upgrade request's).
    pub ex: ExchangeId,
    /// The `websocket.disconnect` the application gets (code, reason),
    /// once known; the first reason stays.
    pub ended: Option<(u16, String)>,
    /// `client - "WebSocket /path"`: the session's access-log lines start
    /// so (`None` with the access log off).
    pub log_prefix: Option<String>,
}

impl WsKind {
    /// The session ends for the application with `code` (a first reason
    /// stays).
    pub fn end(&mut self, code: u16, reason: &str) {
        if self.ended.is_none() {
            self.ended = Some((code, reason.to_owned()));
        }
    }

    /// The protocol's own end (a close handshake completed, a failure), as
    /// the application's.
    pub fn end_from_state(&mut self) {
        if self.ws.state() == State::Closed {
            let (code, reason) = match self.ws.close_status() {
                Some((code, reason)) => (code.0, reason.to_owned()),
                None => (CloseCode::ABNORMAL.0, String::new()),
            };
            self.end(code, &reason);
        }
    }
}

impl Protocol for WsKind {
    #[inline]
    fn receive(&mut self, data: &[u8], now: f64) {
        self.ws.receive(data, now);
    }

    fn receive_eof(&mut self) {
        self.ws.receive_eof();
    }

    #[inline]
    fn output(&mut self) -> Option<&mut Vec<u8>> {
        // The session's own output (pongs, a close echo) goes out with the
        // application's frames.
        self.ws.take_output(&mut self.out);
        Some(&mut self.out)
    }

    fn wants_read(&self, output_paused: bool) -> bool {
        // Our output (pongs to a ping flood) bounds reading: paused while
        // the peer does not read what we write.
        !output_paused && self.ws.wants_read()
    }

    fn finished(&self) -> bool {
        self.ws.state() == State::Closed
    }

    fn deadline(&self) -> Option<f64> {
        self.ws.next_deadline()
    }

    fn on_timer(&mut self, now: f64) -> Due {
        if !self.ws.next_deadline().is_some_and(|due| due <= now) {
            return Due::Nothing;
        }
        match self.ws.on_timer(now) {
            TimerAction::Nothing => Due::Nothing,
            // An open session that a timer starts closing missed its pong
            // (closed with 1011).
            TimerAction::Output if self.ws.state() != State::Open => {
                self.end_from_state();
                Due::Expired(Timeout::WsPing)
            }
            TimerAction::Output => Due::Output,
            TimerAction::Abort => Due::Lose(Timeout::WsClose, "WebSocket close timeout"),
        }
    }

    fn drain(&mut self, _keep_idle: bool, _buffered: bool, now: f64) -> Drained {
        if self.ws.state() != State::Open {
            return Drained::AfterCurrent;
        }
        // Close with 1012 (service restart) and wait for the peer's close,
        // bounded by the close timeout and the grace period.
        let _ = self
            .ws
            .close(CloseCode::SERVICE_RESTART, "", now, &mut self.out);
        self.end(CloseCode::SERVICE_RESTART.0, "");
        Drained::Close
    }

    fn lose(&mut self) {
        self.ws.receive_eof();
        self.end_from_state();
        self.end(CloseCode::ABNORMAL.0, "");
        self.out = Vec::new();
    }
}
