//! TLS on the server's connections: a `loop_tls::TlsSession` behind
//! `loop_transports::ByteLayer` (the adapter is a line per method), what a
//! connection keeps of it (the negotiated [`TlsInfo`] once established:
//! the ALPN protocol the connection's kind is chosen by, the scope's TLS
//! extension), and where it counts handshakes, resumptions and failures
//! (the counters are [`crate::counters`]').
//!
//! The layer sits inside the connection's `LayeredStream`, under whichever
//! protocol kind runs on it (HTTP/1.1, and WebSocket after an upgrade).
//!
//! Session tickets are per process: a reload keeps the ticket keys
//! (`TlsConfig::reload`), but another worker process has its own, so a
//! ticket resumes only on the process that issued it.

use crate::counters::{ServerCounters, Timeout};
use loop_tls::{Alert, SessionError, SessionErrorKind, TlsConfig, TlsInfo, TlsSession};
use loop_transports::{ByteLayer, Eof, LayerError};
use std::sync::{Arc, OnceLock};

/// A session failed: counted by kind, and by alert when it names one.
fn failed(counters: &ServerCounters, kind: SessionErrorKind, alert: Option<Alert>) {
    let t = &counters.tls;
    match kind {
        SessionErrorKind::NotTls => &t.not_tls,
        SessionErrorKind::Handshake => &t.handshake_failed,
        SessionErrorKind::HandshakeTooLarge => &t.too_large,
        SessionErrorKind::Protocol => &t.protocol_errors,
    }
    .bump();
    match alert {
        Some(Alert {
            received: true,
            name,
        }) => t.alerts.bump(name),
        Some(Alert { name, .. }) => t.alerts_sent.bump(name),
        None => {}
    }
}

/// What a connection knows of its TLS layer (the layer itself is inside
/// the stream): shared between the two.
#[derive(Debug)]
pub struct TlsState {
    info: OnceLock<TlsInfo>,
    counters: Arc<ServerCounters>,
}

impl TlsState {
    /// What the handshake negotiated; `None` while it runs.
    pub fn info(&self) -> Option<&TlsInfo> {
        self.info.get()
    }

    pub fn established(&self) -> bool {
        self.info.get().is_some()
    }

    /// The handshake did not complete within `ssl_handshake_timeout`.
    pub fn timed_out(&self) {
        self.counters.tls.timed_out.bump();
        self.counters.timed_out(Timeout::TlsHandshake);
    }
}

/// A [`TlsSession`] as a stream's [`ByteLayer`].
struct TlsLayer {
    session: TlsSession,
    state: Arc<TlsState>,
}

impl TlsLayer {
    /// Publish what was negotiated the first time the handshake is seen
    /// complete (the request it carried is parsed after this returns).
    fn note_progress(&mut self) {
        if self.state.info.get().is_some() || self.session.is_handshaking() {
            return;
        }
        if let Some(info) = self.session.info() {
            if self.state.info.set(info).is_ok() {
                let tls = &self.state.counters.tls;
                tls.handshakes.bump();
                if self.session.is_resumed() {
                    tls.resumptions.bump();
                }
            }
        }
    }
}

impl ByteLayer for TlsLayer {
    fn decode(&mut self, wire: &[u8], app: &mut Vec<u8>) -> Result<(), LayerError> {
        match self.session.decode(wire, app) {
            Ok(()) => {
                self.note_progress();
                Ok(())
            }
            Err(err) => {
                let kind = if self.state.established() {
                    SessionErrorKind::Protocol
                } else {
                    err.kind
                };
                failed(&self.state.counters, kind, self.session.alert());
                // Boxed as itself: `session_error` gets it back for the log.
                Err(Box::new(err))
            }
        }
    }

    fn encode(&mut self, app: &[u8], wire: &mut Vec<u8>) -> Result<(), LayerError> {
        self.session
            .encode(app, wire)
            .map_err(|e| Box::new(e) as LayerError)
    }

    fn take_output(&mut self, wire: &mut Vec<u8>) {
        self.session.take_output(wire);
    }

    fn wants_read(&self) -> bool {
        self.session.wants_read()
    }

    fn close(&mut self, wire: &mut Vec<u8>) {
        // A handshake that never completed (a timeout, a stray client)
        // ends with the bare close: there is no session to end in order.
        if self.state.established() {
            self.session.close(wire);
        }
    }

    fn peer_closed(&self) -> bool {
        self.session.peer_closed()
    }

    fn eof(&mut self) -> Eof {
        let eof = self.session.eof();
        if !self.state.established() {
            self.state.counters.tls.abandoned.bump();
        } else if eof == loop_tls::Eof::Truncated {
            self.state.counters.tls.truncated.bump();
        }
        match eof {
            loop_tls::Eof::Clean => Eof::Clean,
            loop_tls::Eof::Truncated => Eof::Truncated,
        }
    }
}

/// A new connection's layer, started from the server's current config,
/// and the connection's view of it.
pub fn layer(
    config: &TlsConfig,
    counters: &Arc<ServerCounters>,
) -> Result<(Box<dyn ByteLayer>, Arc<TlsState>), SessionError> {
    let session = config.session()?;
    let state = Arc::new(TlsState {
        info: OnceLock::new(),
        counters: counters.clone(),
    });
    let layer = TlsLayer {
        session,
        state: state.clone(),
    };
    Ok((Box::new(layer), state))
}

/// The TLS session's error inside a stream's, if that is what failed.
pub fn session_error(err: &loop_transports::Error) -> Option<&SessionError> {
    match err {
        loop_transports::Error::Layer(inner) => inner.downcast_ref::<SessionError>(),
        _ => None,
    }
}

/// A socket error (an RST, a broken pipe) ended a read, not TLS: the
/// connection counts as reset.
pub fn is_reset(err: Option<&loop_transports::Error>) -> bool {
    err.is_some_and(|e| session_error(e).is_none())
}

/// Why a TLS connection ended, for its debug line.
pub fn describe(err: &SessionError) -> String {
    let what = match err.kind {
        SessionErrorKind::NotTls => "not TLS (plaintext HTTP to the TLS port?)",
        SessionErrorKind::Handshake => "TLS handshake failed",
        SessionErrorKind::HandshakeTooLarge => "TLS handshake too large",
        SessionErrorKind::Protocol => "TLS error",
    };
    format!("{what}: {err}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_error_is_found_again_inside_the_streams_error() {
        let err = SessionError {
            kind: SessionErrorKind::NotTls,
            message: "not a TLS record".into(),
        };
        let stream_err = loop_transports::Error::Layer(Box::new(err));
        let found = session_error(&stream_err).map(|e| e.kind);
        assert_eq!(found, Some(SessionErrorKind::NotTls));
        let text = describe(session_error(&stream_err).unwrap_or_else(|| unreachable!()));
        assert!(text.starts_with("not TLS"), "{text}");
    }

    #[test]
    fn failures_are_counted_by_kind_and_by_alert() {
        let counters = ServerCounters::default();
        failed(&counters, SessionErrorKind::NotTls, None);
        let unknown_ca = Alert {
            received: true,
            name: "unknown_ca",
        };
        failed(&counters, SessionErrorKind::Handshake, Some(unknown_ca));
        let decode = Alert {
            received: false,
            name: "decode_error",
        };
        failed(&counters, SessionErrorKind::Handshake, Some(decode));
        let t = &counters.tls;
        assert_eq!((t.not_tls.get(), t.handshake_failed.get()), (1, 2));
        let snapshot: std::collections::HashMap<_, _> =
            counters.tls_snapshot().into_iter().collect();
        assert_eq!(snapshot["handshakes_failed"], 3);
    }
}
