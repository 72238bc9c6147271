//! One connection's TLS server session as a byte-stream layer: the
//! methods mirror `loop_transports::ByteLayer` so the adapter is a line
//! each.

use crate::error::{SessionError, SessionErrorKind};
use crate::name;
use crate::pem;
use crate::sni::SniResolver;
use rustls::{AlertDescription, HandshakeKind, ServerConnection};
use std::io::{self, Read, Write};
use std::sync::Arc;

/// How the peer's EOF ended the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eof {
    /// After the peer's `close_notify`.
    Clean,
    /// Without `close_notify`: the data may have been cut short.
    Truncated,
}

/// What an established session negotiated: the ASGI TLS extension's
/// fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsInfo {
    /// 0x0303 for TLS 1.2, 0x0304 for TLS 1.3.
    pub tls_version: u16,
    /// The IANA number of the suite.
    pub cipher_suite: u16,
    /// The certificate this connection was served (PEM, leaf only).
    pub server_cert: String,
    /// The client's certificates, PEM, leaf first (empty without one).
    pub client_cert_chain: Vec<String>,
    /// The client leaf's subject as an RFC 4514 distinguished name.
    pub client_cert_name: Option<String>,
    /// The SNI host name the client sent.
    pub server_name: Option<String>,
    /// The application protocol ALPN chose; `None` when the client offered
    /// none.
    pub alpn: Option<Vec<u8>>,
}

pub struct TlsSession {
    conn: ServerConnection,
    /// Picks the certificate served, again, for `info()`.
    resolver: Arc<SniResolver>,
    max_handshake_bytes: usize,
    /// Ciphertext consumed while handshaking.
    handshake_bytes: usize,
    /// Nothing decoded yet: a first byte that is not a TLS handshake
    /// record means the peer does not speak TLS.
    first: bool,
    peer_closed: bool,
    /// The alert of the error that failed the session, once it failed.
    alert: Option<Alert>,
}

/// A TLS alert that ended a session, by its IANA name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alert {
    /// The peer sent it (else rustls sends it to the peer).
    pub received: bool,
    /// `"unknown_ca"`, `"bad_certificate"`, … (RFC 8446 §6, IANA).
    pub name: &'static str,
}

/// The record content type a client's first flight starts with.
const HANDSHAKE_RECORD: u8 = 0x16;

impl std::fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSession")
            .field("handshaking", &self.conn.is_handshaking())
            .finish_non_exhaustive()
    }
}

fn error(kind: SessionErrorKind, message: impl Into<String>) -> SessionError {
    SessionError {
        kind,
        message: message.into(),
    }
}

impl TlsSession {
    pub(crate) fn new(
        conn: ServerConnection,
        resolver: Arc<SniResolver>,
        max_handshake_bytes: usize,
    ) -> Self {
        TlsSession {
            conn,
            resolver,
            max_handshake_bytes,
            handshake_bytes: 0,
            first: true,
            peer_closed: false,
            alert: None,
        }
    }

    /// Ciphertext arrived; the plaintext it completes is appended to `app`.
    /// After an error, [`take_output`](Self::take_output) yields the alert
    /// rustls sends.
    pub fn decode(&mut self, wire: &[u8], app: &mut Vec<u8>) -> Result<(), SessionError> {
        if self.first && !wire.is_empty() {
            self.first = false;
            if wire[0] != HANDSHAKE_RECORD {
                return Err(error(
                    SessionErrorKind::NotTls,
                    "the client did not start a TLS handshake (plaintext on a TLS port?)",
                ));
            }
        }
        let mut rest = wire;
        while !rest.is_empty() {
            let handshaking = self.conn.is_handshaking();
            let n = self.conn.read_tls(&mut rest).map_err(|e| {
                error(
                    SessionErrorKind::Protocol,
                    format!("TLS input not taken: {e}"),
                )
            })?;
            if handshaking {
                self.handshake_bytes += n;
                if self.handshake_bytes > self.max_handshake_bytes {
                    return Err(error(
                        SessionErrorKind::HandshakeTooLarge,
                        format!(
                            "the handshake took more than {} bytes",
                            self.max_handshake_bytes
                        ),
                    ));
                }
            }
            let state = self.conn.process_new_packets().map_err(|e| {
                self.alert = alert_of(&e);
                classify(&e, handshaking)
            })?;
            self.drain_plaintext(app)?;
            if state.peer_has_closed() {
                self.peer_closed = true;
            }
            if n == 0 {
                break;
            }
        }
        Ok(())
    }

    fn drain_plaintext(&mut self, app: &mut Vec<u8>) -> Result<(), SessionError> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match self.conn.reader().read(&mut buf) {
                Ok(0) => {
                    self.peer_closed = true;
                    return Ok(());
                }
                Ok(n) => app.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                // EOF without close_notify is reported by `eof`, not here.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(error(SessionErrorKind::Protocol, format!("TLS read: {e}"))),
            }
        }
    }

    /// Plaintext to send; its records are appended to `wire`.
    pub fn encode(&mut self, app: &[u8], wire: &mut Vec<u8>) -> Result<(), SessionError> {
        let mut rest = app;
        while !rest.is_empty() {
            // rustls buffers a bounded amount: write what it takes, move
            // those records out, go on.
            let n = self
                .conn
                .writer()
                .write(rest)
                .map_err(|e| error(SessionErrorKind::Protocol, format!("TLS write: {e}")))?;
            rest = &rest[n..];
            let flushed = self.flush(wire);
            if n == 0 && flushed == 0 {
                return Err(error(
                    SessionErrorKind::Protocol,
                    "TLS write: no progress (session closed?)",
                ));
            }
        }
        self.flush(wire);
        Ok(())
    }

    /// Move every pending record to `wire`; how many bytes.
    fn flush(&mut self, wire: &mut Vec<u8>) -> usize {
        let mut total = 0;
        while self.conn.wants_write() {
            // Writing into a Vec cannot fail.
            match self.conn.write_tls(wire) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
        total
    }

    /// Records the session sends on its own (handshake, alerts, tickets).
    pub fn take_output(&mut self, wire: &mut Vec<u8>) {
        self.flush(wire);
    }

    /// The handshake is not complete: input is needed whatever the
    /// protocol above wants.
    pub fn wants_read(&self) -> bool {
        self.conn.is_handshaking()
    }

    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Queue `close_notify`; its record is appended to `wire`.
    pub fn close(&mut self, wire: &mut Vec<u8>) {
        self.conn.send_close_notify();
        self.flush(wire);
    }

    /// The peer's `close_notify` arrived: no more plaintext will follow.
    pub fn peer_closed(&self) -> bool {
        self.peer_closed
    }

    /// The peer sent EOF.
    pub fn eof(&mut self) -> Eof {
        if self.peer_closed {
            Eof::Clean
        } else {
            Eof::Truncated
        }
    }

    /// The handshake resumed an earlier session (a TLS 1.3 ticket or a
    /// TLS 1.2 session id) instead of a full one.
    pub fn is_resumed(&self) -> bool {
        self.conn.handshake_kind() == Some(HandshakeKind::Resumed)
    }

    /// The alert the failed session sent or received, when the error that
    /// failed it names one (see [`alert_of`]).
    pub fn alert(&self) -> Option<Alert> {
        self.alert
    }

    /// What was negotiated; `None` before the handshake completes.
    pub fn info(&self) -> Option<TlsInfo> {
        if self.conn.is_handshaking() {
            return None;
        }
        let version = self.conn.protocol_version()?;
        let suite = self.conn.negotiated_cipher_suite()?;
        let chain = self.conn.peer_certificates().unwrap_or_default();
        let server_name = self.conn.server_name().map(str::to_string);
        Some(TlsInfo {
            tls_version: u16::from(version),
            cipher_suite: u16::from(suite.suite()),
            server_cert: self.resolver.pick(server_name.as_deref()).leaf_pem.clone(),
            client_cert_chain: chain.iter().map(|c| pem::cert_pem(c)).collect(),
            client_cert_name: chain.first().and_then(|c| name::subject_of(c)),
            server_name,
            alpn: self.conn.alpn_protocol().map(<[u8]>::to_vec),
        })
    }
}

/// The alert behind a rustls error: the peer's, or the one rustls sends
/// for it where rustls maps that error to one alert (its `From` impls,
/// `DecryptError` → `bad_record_mac`, no common ALPN protocol). Errors
/// whose alert depends on where rustls found them (`PeerMisbehaved`,
/// `PeerIncompatible`, …) name none: they count by kind only.
fn alert_of(e: &rustls::Error) -> Option<Alert> {
    use rustls::Error as E;
    let (received, desc) = match e {
        E::AlertReceived(desc) => (true, *desc),
        E::InvalidMessage(m) => (false, AlertDescription::from(*m)),
        E::InvalidCertificate(c) => (false, AlertDescription::from(c.clone())),
        E::DecryptError => (false, AlertDescription::BadRecordMac),
        E::NoApplicationProtocol => (false, AlertDescription::NoApplicationProtocol),
        _ => return None,
    };
    Some(Alert {
        received,
        name: alert_name(desc),
    })
}

/// An alert's IANA name.
fn alert_name(desc: AlertDescription) -> &'static str {
    use AlertDescription as A;
    match desc {
        A::CloseNotify => "close_notify",
        A::UnexpectedMessage => "unexpected_message",
        A::BadRecordMac => "bad_record_mac",
        A::DecryptionFailed => "decryption_failed",
        A::RecordOverflow => "record_overflow",
        A::DecompressionFailure => "decompression_failure",
        A::HandshakeFailure => "handshake_failure",
        A::NoCertificate => "no_certificate",
        A::BadCertificate => "bad_certificate",
        A::UnsupportedCertificate => "unsupported_certificate",
        A::CertificateRevoked => "certificate_revoked",
        A::CertificateExpired => "certificate_expired",
        A::CertificateUnknown => "certificate_unknown",
        A::IllegalParameter => "illegal_parameter",
        A::UnknownCA => "unknown_ca",
        A::AccessDenied => "access_denied",
        A::DecodeError => "decode_error",
        A::DecryptError => "decrypt_error",
        A::ExportRestriction => "export_restriction",
        A::ProtocolVersion => "protocol_version",
        A::InsufficientSecurity => "insufficient_security",
        A::InternalError => "internal_error",
        A::InappropriateFallback => "inappropriate_fallback",
        A::UserCanceled => "user_canceled",
        A::NoRenegotiation => "no_renegotiation",
        A::MissingExtension => "missing_extension",
        A::UnsupportedExtension => "unsupported_extension",
        A::CertificateUnobtainable => "certificate_unobtainable",
        A::UnrecognisedName => "unrecognized_name",
        A::BadCertificateStatusResponse => "bad_certificate_status_response",
        A::BadCertificateHashValue => "bad_certificate_hash_value",
        A::UnknownPSKIdentity => "unknown_psk_identity",
        A::CertificateRequired => "certificate_required",
        A::NoApplicationProtocol => "no_application_protocol",
        A::EncryptedClientHelloRequired => "encrypted_client_hello_required",
        _ => "unknown",
    }
}

/// Which kind a rustls error is, for counters.
fn classify(e: &rustls::Error, handshaking: bool) -> SessionError {
    use rustls::Error as E;
    let kind = match e {
        E::InvalidMessage(_) if handshaking => SessionErrorKind::NotTls,
        _ if handshaking => SessionErrorKind::Handshake,
        _ => SessionErrorKind::Protocol,
    };
    error(kind, format!("TLS: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_names_the_alert_received_or_sent() {
        let got = alert_of(&rustls::Error::AlertReceived(AlertDescription::UnknownCA));
        assert_eq!(
            got,
            Some(Alert {
                received: true,
                name: "unknown_ca"
            })
        );
        let bad = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
        assert_eq!(
            alert_of(&bad).map(|a| (a.received, a.name)),
            Some((false, "certificate_expired"))
        );
        assert_eq!(alert_of(&rustls::Error::HandshakeNotComplete), None);
    }
}
