//! TLS on the server's connections: a `loop_tls::TlsSession` behind
//! `loop_transports::ByteLayer` (the adapter is a line per method), what a
//! connection keeps of it (the negotiated [`TlsInfo`] once established),
//! and the server's handshake counters.
//!
//! Encrypted bytes never reach Python: the layer sits inside the
//! connection's `LayeredStream`, under HTTP and, after an upgrade, under
//! the WebSocket session that takes the stream over.
//!
//! Session tickets are per process: a reload keeps the ticket keys
//! (`TlsConfig::reload`), but another worker process (a later issue) has
//! its own, so a ticket resumes only on the process that issued it.

use loop_tls::{SessionError, SessionErrorKind, TlsConfig, TlsInfo, TlsSession};
use loop_transports::{ByteLayer, Eof, LayerError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Handshake counters of one server (`Server.tls_stats()`). Atomics, as
/// every connection's layer holds them and a layer must be `Sync`.
#[derive(Debug, Default)]
pub(super) struct TlsStats {
    handshakes: AtomicU64,
    not_tls: AtomicU64,
    handshake_failed: AtomicU64,
    too_large: AtomicU64,
    timed_out: AtomicU64,
    /// The client closed (or reset) before its handshake completed.
    abandoned: AtomicU64,
    /// Bad records or alerts after the handshake.
    protocol_errors: AtomicU64,
    /// EOF without `close_notify` after the handshake.
    truncated: AtomicU64,
    reloads: AtomicU64,
    reload_errors: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl TlsStats {
    fn failed(&self, kind: SessionErrorKind) {
        bump(match kind {
            SessionErrorKind::NotTls => &self.not_tls,
            SessionErrorKind::Handshake => &self.handshake_failed,
            SessionErrorKind::HandshakeTooLarge => &self.too_large,
            SessionErrorKind::Protocol => &self.protocol_errors,
        });
    }

    pub(super) fn reloaded(&self, ok: bool) {
        bump(if ok {
            &self.reloads
        } else {
            &self.reload_errors
        });
    }

    /// The counters by name, for Python.
    pub(super) fn snapshot(&self) -> Vec<(&'static str, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let failed = [
            &self.not_tls,
            &self.handshake_failed,
            &self.too_large,
            &self.timed_out,
            &self.abandoned,
        ]
        .into_iter()
        .map(get)
        .sum();
        vec![
            ("handshakes", get(&self.handshakes)),
            ("handshakes_failed", failed),
            ("failed_not_tls", get(&self.not_tls)),
            ("failed_handshake", get(&self.handshake_failed)),
            ("failed_too_large", get(&self.too_large)),
            ("failed_timeout", get(&self.timed_out)),
            ("failed_abandoned", get(&self.abandoned)),
            ("protocol_errors", get(&self.protocol_errors)),
            ("truncated", get(&self.truncated)),
            ("reloads", get(&self.reloads)),
            ("reload_errors", get(&self.reload_errors)),
        ]
    }
}

/// What a connection knows of its TLS layer (the layer itself is inside
/// the stream): shared between the two.
#[derive(Debug)]
pub(in crate::asgi) struct TlsState {
    info: OnceLock<TlsInfo>,
    stats: Arc<TlsStats>,
}

impl TlsState {
    /// What the handshake negotiated; `None` while it runs.
    pub(in crate::asgi) fn info(&self) -> Option<&TlsInfo> {
        self.info.get()
    }

    pub(in crate::asgi) fn established(&self) -> bool {
        self.info.get().is_some()
    }

    /// The handshake did not complete within `ssl_handshake_timeout`.
    pub(in crate::asgi) fn timed_out(&self) {
        bump(&self.stats.timed_out);
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
                bump(&self.state.stats.handshakes);
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
                self.state.stats.failed(kind);
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
            bump(&self.state.stats.abandoned);
        } else if eof == loop_tls::Eof::Truncated {
            bump(&self.state.stats.truncated);
        }
        match eof {
            loop_tls::Eof::Clean => Eof::Clean,
            loop_tls::Eof::Truncated => Eof::Truncated,
        }
    }
}

/// A new connection's layer, started from the server's current config,
/// and the connection's view of it.
pub(super) fn layer(
    config: &TlsConfig,
    stats: &Arc<TlsStats>,
) -> Result<(Box<dyn ByteLayer>, Arc<TlsState>), SessionError> {
    let session = config.session()?;
    let state = Arc::new(TlsState {
        info: OnceLock::new(),
        stats: stats.clone(),
    });
    let layer = TlsLayer {
        session,
        state: state.clone(),
    };
    Ok((Box::new(layer), state))
}

/// The TLS session's error inside a stream's, if that is what failed.
pub(in crate::asgi) fn session_error(err: &loop_transports::Error) -> Option<&SessionError> {
    match err {
        loop_transports::Error::Layer(inner) => inner.downcast_ref::<SessionError>(),
        _ => None,
    }
}

/// Why a TLS connection ended, for its debug line.
pub(in crate::asgi) fn describe(err: &SessionError) -> String {
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
    fn failures_are_counted_by_kind_and_summed() {
        let stats = TlsStats::default();
        stats.failed(SessionErrorKind::NotTls);
        stats.failed(SessionErrorKind::HandshakeTooLarge);
        stats.failed(SessionErrorKind::Protocol);
        bump(&stats.timed_out);
        stats.reloaded(true);
        stats.reloaded(false);
        let snapshot: std::collections::HashMap<_, _> = stats.snapshot().into_iter().collect();
        assert_eq!(snapshot["failed_not_tls"], 1);
        assert_eq!(snapshot["failed_too_large"], 1);
        assert_eq!(snapshot["failed_timeout"], 1);
        // A protocol error after the handshake is no failed handshake.
        assert_eq!(snapshot["handshakes_failed"], 3);
        assert_eq!(snapshot["protocol_errors"], 1);
        assert_eq!((snapshot["reloads"], snapshot["reload_errors"]), (1, 1));
    }
}
