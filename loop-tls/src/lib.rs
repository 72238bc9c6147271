//! ferroloop's TLS server session, sans-IO: a rustls 0.23 server connection
//! (the **ring** provider, passed explicitly) as a byte-stream layer.
//! Ciphertext in, plaintext out; plaintext in, ciphertext out; no sockets,
//! no Python, no dependency on the other loop crates (docs/architecture.md,
//! "Layers"). The
//! glue that puts a [`TlsSession`] behind `loop_transports::ByteLayer`
//! lives where the stack is assembled (loop-py, and the example).
//!
//! [`TlsSettings`] names PEM files; [`TlsConfig::load`] reads and checks
//! them (every error names the file and what is wrong) and builds the
//! shared rustls configuration; [`TlsConfig::session`] starts one
//! connection's session.
//!
//! # What the settings mean
//!
//! - **Keys**: PKCS#8 (`PRIVATE KEY`), PKCS#1 (`RSA PRIVATE KEY`), SEC1
//!   (`EC PRIVATE KEY`), and encrypted PKCS#8 (`ENCRYPTED PRIVATE KEY`,
//!   with `password`). Legacy OpenSSL-encrypted PEM (`Proc-Type:
//!   4,ENCRYPTED`) is refused by name: convert it with `openssl pkcs8
//!   -topk8 -v2 aes-256-cbc`. A password for an unencrypted key, or none
//!   for an encrypted one, is an error. The key must match the
//!   certificate's public key. The key file may also hold certificates.
//! - **Client certificates**: `Optional` and `Required` verify against
//!   `ca_certs` (and the `crls`, PEM or DER); without `ca_certs` they are
//!   an error. With `ClientAuth::None` a `ca_certs` file is read and
//!   checked but no certificate is asked for. A certificate that fails
//!   verification fails the handshake, so an established session never
//!   carries a verification error.
//! - **Versions**: `Tls12` allows 1.2 and 1.3, `Tls13` only 1.3.
//! - **Cipher suites**: IANA or OpenSSL names of the suites ring offers;
//!   OpenSSL class keywords (`DEFAULT`, `HIGH`, `TLSv1`, ...) mean rustls'
//!   defaults, exclusions and `@STRENGTH` are ignored, anything else is
//!   [`ConfigError::UnknownCipher`]. A list naming no TLS 1.3 suite keeps
//!   the 1.3 defaults (rustls needs one per enabled version).
//! - **ALPN**: the protocols [`TlsSettings::alpn`] lists (the server's
//!   kinds: `http/1.1` today); a client offering ALPN but none of them is
//!   refused. [`TlsInfo::alpn`] is what was negotiated.
//! - **Resumption**: TLS 1.3 tickets (ring's rotating ticketer) and a
//!   TLS 1.2 session-id cache, both in memory, per process;
//!   [`TlsConfig::reload`] keeps them, so tickets survive a reload.
//! - **SNI**: an exact host (case-insensitive), then `*.parent` for one
//!   label, else the default certificate. An encrypted SNI key uses
//!   `password`.
//! - **Bounds**: more than `max_handshake_bytes` of ciphertext before the
//!   handshake completes fails the session
//!   ([`SessionErrorKind::HandshakeTooLarge`]); a first byte that is not a
//!   TLS handshake record is [`SessionErrorKind::NotTls`].

mod ciphers;
mod config;
mod error;
mod name;
mod pem;
mod provider;
mod session;
mod sni;

pub use config::{ClientAuth, MinVersion, SniCert, TlsConfig, TlsSettings};
pub use error::{ConfigError, SessionError, SessionErrorKind};
pub use provider::PROVIDER;
pub use session::{Alert, Eof, TlsInfo, TlsSession};
