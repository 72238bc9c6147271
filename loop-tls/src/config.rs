//! TLS settings (PEM file paths and choices, with uvicorn's meanings
//! resolved by the caller) and the rustls server configuration built
//! from them.

use crate::ciphers;
use crate::error::{ConfigError, SessionError, SessionErrorKind};
use crate::pem;
use crate::session::TlsSession;
use crate::sni::SniResolver;
use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::server::{ProducesTickets, ServerSessionMemoryCache, StoresServerSessions};
use rustls::{RootCertStore, ServerConfig};
use std::path::PathBuf;
use std::sync::Arc;

/// Whether a client certificate is asked for (uvicorn's `ssl_cert_reqs`
/// 0 / 1 / 2). `Optional` and `Required` need `ca_certs`; with `None` a
/// `ca_certs` file is still read and checked, but no certificate is asked
/// for. A certificate that fails verification fails the handshake in
/// both `Optional` and `Required` (rustls has no "verified: no" state).
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
    /// The application protocols offered in ALPN (`http/1.1`, `h2`), most
    /// preferred first: the server offers what its protocol kinds speak.
    /// A client that offers ALPN but none of these is refused
    /// (`no_application_protocol`); one that offers none gets no ALPN.
    /// Empty: no ALPN at all.
    pub alpn: Vec<Vec<u8>>,
}

impl TlsSettings {
    pub const DEFAULT_MAX_HANDSHAKE_BYTES: usize = 64 * 1024;
}

/// The shared configuration new sessions start from.
#[derive(Clone)]
pub struct TlsConfig {
    inner: Arc<ServerConfig>,
    resolver: Arc<SniResolver>,
    max_handshake_bytes: usize,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig").finish_non_exhaustive()
    }
}

/// Session resumption state, kept across reloads.
struct Resumption {
    ticketer: Arc<dyn ProducesTickets>,
    cache: Arc<dyn StoresServerSessions>,
}

/// TLS 1.2 session ids remembered by the server.
const SESSION_CACHE_ENTRIES: usize = 4096;

impl TlsConfig {
    /// Read and check every file the settings name.
    pub fn load(settings: &TlsSettings) -> Result<TlsConfig, ConfigError> {
        let ticketer = crate::provider::Ticketer::new()
            .map_err(|e| ConfigError::Invalid(format!("session tickets: {e}")))?;
        let resumption = Resumption {
            ticketer,
            cache: ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES),
        };
        build(settings, resumption)
    }

    /// Re-read the files for a certificate reload. Session tickets issued
    /// under `self` stay valid (the ticket keys are kept), as do cached
    /// TLS 1.2 session ids.
    pub fn reload(&self, settings: &TlsSettings) -> Result<TlsConfig, ConfigError> {
        let resumption = Resumption {
            ticketer: self.inner.ticketer.clone(),
            cache: self.inner.session_storage.clone(),
        };
        build(settings, resumption)
    }

    /// A new server session for one accepted connection.
    pub fn session(&self) -> Result<TlsSession, SessionError> {
        let conn = rustls::ServerConnection::new(self.inner.clone()).map_err(|e| SessionError {
            kind: SessionErrorKind::Handshake,
            message: format!("cannot start a TLS session: {e}"),
        })?;
        Ok(TlsSession::new(
            conn,
            self.resolver.clone(),
            self.max_handshake_bytes,
        ))
    }
}

fn build(settings: &TlsSettings, resumption: Resumption) -> Result<TlsConfig, ConfigError> {
    let suites = ciphers::select(settings.ciphers.as_deref(), settings.min_version)?;
    let provider = Arc::new(CryptoProvider {
        cipher_suites: suites,
        ..crate::provider::default_provider()
    });
    let versions: &[&'static rustls::SupportedProtocolVersion] = match settings.min_version {
        MinVersion::Tls12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        MinVersion::Tls13 => &[&rustls::version::TLS13],
    };
    let resolver = Arc::new(SniResolver::load(
        &settings.certfile,
        &settings.keyfile,
        settings.password.as_deref(),
        &settings.sni,
    )?);
    let verifier = client_verifier(settings, &provider)?;
    let builder = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| ConfigError::Invalid(format!("ssl_ciphers / ssl_min_version: {e}")))?;
    let builder = match verifier {
        Some(v) => builder.with_client_cert_verifier(v),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(resolver.clone());
    config.alpn_protocols = settings.alpn.clone();
    config.ticketer = resumption.ticketer;
    config.session_storage = resumption.cache;
    Ok(TlsConfig {
        inner: Arc::new(config),
        resolver,
        max_handshake_bytes: settings.max_handshake_bytes,
    })
}

fn client_verifier(
    settings: &TlsSettings,
    provider: &Arc<CryptoProvider>,
) -> Result<Option<Arc<dyn ClientCertVerifier>>, ConfigError> {
    let Some(ca_path) = &settings.ca_certs else {
        if settings.client_auth != ClientAuth::None {
            return Err(ConfigError::Invalid(format!(
                "ssl_cert_reqs {:?} needs ssl_ca_certs (the CAs client certificates are verified against)",
                settings.client_auth
            )));
        }
        return Ok(None);
    };
    let mut roots = RootCertStore::empty();
    for (i, cert) in pem::load_certs(ca_path)?.into_iter().enumerate() {
        roots.add(cert).map_err(|e| {
            pem::file_error(
                ca_path,
                format!("certificate {}: not a usable CA: {e}", i + 1),
            )
        })?;
    }
    let roots = Arc::new(roots);
    let mut crls = Vec::new();
    for path in &settings.crls {
        let file_crls = pem::load_crls(path)?;
        // webpki parses CRLs when the verifier is built: build one per
        // file so a bad CRL's error names its file.
        WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .with_crls(file_crls.clone())
            .build()
            .map_err(|e| pem::file_error(path, format!("not a usable CRL: {e}")))?;
        crls.extend(file_crls);
    }
    if settings.client_auth == ClientAuth::None {
        // Read and checked, but no certificate is asked for.
        return Ok(None);
    }
    let mut builder =
        WebPkiClientVerifier::builder_with_provider(roots, provider.clone()).with_crls(crls);
    if settings.client_auth == ClientAuth::Optional {
        builder = builder.allow_unauthenticated();
    }
    let verifier = builder
        .build()
        .map_err(|e| ConfigError::Invalid(format!("ssl_ca_certs / ssl_crl: {e}")))?;
    Ok(Some(verifier))
}
