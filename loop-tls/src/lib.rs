//! ferroloop's TLS server session, sans-IO: a rustls 0.23 server connection
//! (the **ring** provider, passed explicitly) as a byte-stream layer.
//! Ciphertext in, plaintext out; plaintext in, ciphertext out; no sockets,
//! no Python, no dependency on the other loop crates (DESIGN.md §1). The
//! glue that puts a [`TlsSession`] behind `loop_transports::ByteLayer`
//! lives where the stack is assembled (loop-py, and the example).
//!
//! [`TlsSettings`] names PEM files; [`TlsConfig::load`] reads and checks
//! them (every error names the file and what is wrong) and builds the
//! shared rustls configuration; [`TlsConfig::session`] starts one
//! connection's session.

mod ciphers;
mod config;
mod error;
mod name;
mod pem;
mod session;
mod sni;

pub use config::{ClientAuth, MinVersion, SniCert, TlsConfig, TlsSettings};
pub use error::{ConfigError, SessionError, SessionErrorKind};
pub use session::{Eof, TlsInfo, TlsSession};
