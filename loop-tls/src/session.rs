//! One connection's TLS server session as a byte-stream layer: the
//! methods mirror `loop_transports::ByteLayer` so the adapter is a line
//! each.

use crate::error::SessionError;

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
}

pub struct TlsSession {
    _private: (),
}

impl std::fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSession").finish_non_exhaustive()
    }
}

impl TlsSession {
    /// Ciphertext arrived; the plaintext it completes is appended to `app`.
    pub fn decode(&mut self, wire: &[u8], app: &mut Vec<u8>) -> Result<(), SessionError> {
        let _ = (wire, app);
        todo!()
    }

    /// Plaintext to send; its records are appended to `wire`.
    pub fn encode(&mut self, app: &[u8], wire: &mut Vec<u8>) -> Result<(), SessionError> {
        let _ = (app, wire);
        todo!()
    }

    /// Records the session sends on its own (handshake, alerts, tickets).
    pub fn take_output(&mut self, wire: &mut Vec<u8>) {
        let _ = wire;
        todo!()
    }

    /// The handshake is not complete: input is needed whatever the
    /// protocol above wants.
    pub fn wants_read(&self) -> bool {
        todo!()
    }

    pub fn is_handshaking(&self) -> bool {
        todo!()
    }

    /// Queue `close_notify`; its record is appended to `wire`.
    pub fn close(&mut self, wire: &mut Vec<u8>) {
        let _ = wire;
        todo!()
    }

    /// The peer sent EOF.
    pub fn eof(&mut self) -> Eof {
        todo!()
    }

    /// What was negotiated; `None` before the handshake completes.
    pub fn info(&self) -> Option<TlsInfo> {
        todo!()
    }
}
