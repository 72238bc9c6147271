//! What can go wrong loading TLS settings (at startup, before anything
//! binds) and inside one session (per client: logged at debug level).

use std::path::PathBuf;

/// A TLS setting or file that cannot be used. Every variant names the
/// file (and, where there is one, the PEM block) and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {what}")]
    File { path: PathBuf, what: String },
    #[error("ssl_ciphers: unknown cipher suite {0:?}")]
    UnknownCipher(String),
    #[error("{0}")]
    Invalid(String),
}

/// How a session failed, for counters and debug logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionErrorKind {
    /// The peer's bytes were not TLS (plaintext HTTP to a TLS port).
    NotTls,
    /// The peer sent an alert, or the handshake could not agree.
    Handshake,
    /// The handshake took more bytes than the bound.
    HandshakeTooLarge,
    /// A bad record or other protocol error after the handshake.
    Protocol,
}

#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct SessionError {
    pub kind: SessionErrorKind,
    pub message: String,
}
