//! TLS settings (PEM file paths and choices, with uvicorn's meanings
//! resolved by the caller) and the rustls server configuration built
//! from them.

use crate::error::{ConfigError, SessionError};
use crate::session::TlsSession;
use std::path::PathBuf;
use std::sync::Arc;

/// Whether a client certificate is asked for (uvicorn's `ssl_cert_reqs`
/// 0 / 1 / 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClientAuth {
    #[default]
    None,
    Optional,
    Required,
}

/// The lowest protocol version accepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MinVersion {
    #[default]
    Tls12,
    Tls13,
}

/// A certificate chosen when the client's SNI names `host`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SniCert {
    pub host: String,
    pub certfile: PathBuf,
    pub keyfile: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    /// The default certificate chain (leaf first), PEM.
    pub certfile: PathBuf,
    /// Its key: PKCS#8, PKCS#1 or SEC1 PEM; `ENCRYPTED PRIVATE KEY` with
    /// `password`.
    pub keyfile: PathBuf,
    pub password: Option<String>,
    /// CA certificates that client certificates are verified against.
    pub ca_certs: Option<PathBuf>,
    pub client_auth: ClientAuth,
    /// Certificate revocation lists (PEM or DER) for client certificates.
    pub crls: Vec<PathBuf>,
    pub min_version: MinVersion,
    /// Cipher suites by IANA or OpenSSL name, separated by `:` or `,`;
    /// OpenSSL class keywords (`DEFAULT`, `HIGH`, `TLSv1`, ...) mean
    /// rustls' defaults. `None`: the defaults.
    pub ciphers: Option<String>,
    /// Certificates chosen by SNI; the default one otherwise.
    pub sni: Vec<SniCert>,
    /// The most bytes a client may send before its handshake completes.
    pub max_handshake_bytes: usize,
}

impl TlsSettings {
    pub const DEFAULT_MAX_HANDSHAKE_BYTES: usize = 64 * 1024;
}

/// The shared configuration new sessions start from.
#[derive(Clone)]
pub struct TlsConfig {
    inner: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig").finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// Read and check every file the settings name.
    pub fn load(settings: &TlsSettings) -> Result<TlsConfig, ConfigError> {
        let _ = settings;
        todo!()
    }

    /// Re-read the files for a certificate reload. Session tickets issued
    /// under `self` stay valid (the ticket keys are kept).
    pub fn reload(&self, settings: &TlsSettings) -> Result<TlsConfig, ConfigError> {
        let _ = settings;
        todo!()
    }

    /// A new server session for one accepted connection.
    pub fn session(&self) -> Result<TlsSession, SessionError> {
        let _ = &self.inner;
        todo!()
    }
}
