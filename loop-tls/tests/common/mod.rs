//! Test PKI made at test time (rcgen), files in a fresh directory, and a
//! rustls client pumped against a `TlsSession` in memory.
#![allow(dead_code)]

use loop_tls::{TlsSession, TlsSettings};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A directory of its own for each test.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "loop-tls-{}-{}-{}",
        name,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub struct Ca {
    pub cert: rcgen::Certificate,
    pub key: KeyPair,
    pub params: CertificateParams,
}

pub struct Issued {
    pub cert: rcgen::Certificate,
    pub key: KeyPair,
}

impl Issued {
    pub fn chain(&self) -> Vec<CertificateDer<'static>> {
        vec![self.cert.der().clone()]
    }
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.serialize_der()))
    }
}

pub fn ca(cn: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().unwrap();
    let cert = params.clone().self_signed(&key).unwrap();
    Ca { cert, key, params }
}

impl Ca {
    pub fn issue(&self, params: CertificateParams) -> Issued {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        Issued { cert, key }
    }

    pub fn server(&self, names: &[&str]) -> Issued {
        let mut params =
            CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, names[0]);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(params)
    }

    pub fn client(&self, cn: &str) -> Issued {
        self.issue(client_params(cn))
    }

    pub fn roots(&self) -> RootCertStore {
        let mut roots = RootCertStore::empty();
        roots.add(self.cert.der().clone()).unwrap();
        roots
    }

    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        write(dir, name, &self.cert.pem())
    }
}

pub fn client_params(cn: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CountryName, "FR");
    dn.push(DnType::OrganizationName, "Ferro, Loop & Co");
    dn.push(DnType::CommonName, cn);
    params.distinguished_name = dn;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Cert and key files for `issued`.
pub fn write_pair(dir: &Path, stem: &str, issued: &Issued) -> (PathBuf, PathBuf) {
    (
        write(dir, &format!("{stem}.crt"), &issued.cert.pem()),
        write(dir, &format!("{stem}.key"), &issued.key.serialize_pem()),
    )
}

pub fn settings(certfile: PathBuf, keyfile: PathBuf) -> TlsSettings {
    TlsSettings {
        certfile,
        keyfile,
        password: None,
        ca_certs: None,
        client_auth: Default::default(),
        crls: Vec::new(),
        min_version: Default::default(),
        ciphers: None,
        sni: Vec::new(),
        max_handshake_bytes: TlsSettings::DEFAULT_MAX_HANDSHAKE_BYTES,
        alpn: vec![b"http/1.1".to_vec()],
    }
}

/// A server: CA, a "localhost" certificate, and its settings.
pub struct Fixture {
    pub dir: PathBuf,
    pub ca: Ca,
    pub settings: TlsSettings,
}

pub fn fixture(name: &str) -> Fixture {
    let dir = temp_dir(name);
    let ca = ca("Test CA");
    let server = ca.server(&["localhost"]);
    let (c, k) = write_pair(&dir, "server", &server);
    let settings = settings(c, k);
    Fixture { dir, ca, settings }
}

pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

pub fn client_config(
    roots: RootCertStore,
    versions: &[&'static rustls::SupportedProtocolVersion],
    client_cert: Option<&Issued>,
) -> Arc<ClientConfig> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match client_cert {
        Some(c) => builder
            .with_client_auth_cert(c.chain(), c.key_der())
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

pub fn client(config: &Arc<ClientConfig>, host: &str) -> ClientConnection {
    ClientConnection::new(config.clone(), host.to_string().try_into().unwrap()).unwrap()
}

/// Both ends of one connection, moving bytes in memory.
pub struct Pair {
    pub client: ClientConnection,
    pub server: TlsSession,
    /// Plaintext the server decoded so far.
    pub server_app: Vec<u8>,
    /// Plaintext the client read so far.
    pub client_app: Vec<u8>,
}

pub type PumpResult = Result<(), String>;

impl Pair {
    pub fn new(client: ClientConnection, server: TlsSession) -> Pair {
        Pair {
            client,
            server,
            server_app: Vec::new(),
            client_app: Vec::new(),
        }
    }

    /// Client records to the server.
    pub fn client_to_server(&mut self) -> Result<usize, loop_tls::SessionError> {
        let mut wire = Vec::new();
        while self.client.wants_write() {
            self.client.write_tls(&mut wire).unwrap();
        }
        if !wire.is_empty() {
            self.server.decode(&wire, &mut self.server_app)?;
        }
        Ok(wire.len())
    }

    /// Server records (its own and `out`) to the client.
    pub fn server_to_client(&mut self, extra: &[u8]) -> Result<usize, rustls::Error> {
        let mut wire = extra.to_vec();
        self.server.take_output(&mut wire);
        let mut rest = &wire[..];
        while !rest.is_empty() {
            self.client.read_tls(&mut rest).unwrap();
            self.client.process_new_packets()?;
            let mut buf = [0u8; 65536];
            while let Ok(n) = self.client.reader().read(&mut buf) {
                if n == 0 {
                    break;
                }
                self.client_app.extend_from_slice(&buf[..n]);
            }
        }
        Ok(wire.len())
    }

    /// Until neither side has anything to send.
    pub fn pump(&mut self) -> PumpResult {
        loop {
            let a = self
                .client_to_server()
                .map_err(|e| format!("server: {e} ({:?})", e.kind))?;
            let b = self
                .server_to_client(&[])
                .map_err(|e| format!("client: {e}"))?;
            if a == 0 && b == 0 {
                return Ok(());
            }
        }
    }

    pub fn handshake(&mut self) -> PumpResult {
        self.pump()?;
        if self.client.is_handshaking() || self.server.is_handshaking() {
            return Err("handshake did not complete".into());
        }
        Ok(())
    }

    /// Server plaintext to the client; what the client reads.
    pub fn send_to_client(&mut self, data: &[u8]) -> Vec<u8> {
        let mut wire = Vec::new();
        self.server.encode(data, &mut wire).unwrap();
        self.server_to_client(&wire).unwrap();
        std::mem::take(&mut self.client_app)
    }

    pub fn send_to_server(&mut self, data: &[u8]) -> Vec<u8> {
        // The client buffers a bounded amount: a chunk at a time.
        for chunk in data.chunks(16 * 1024) {
            self.client.writer().write_all(chunk).unwrap();
            self.pump().unwrap();
        }
        self.pump().unwrap();
        std::mem::take(&mut self.server_app)
    }
}

/// A handshake with `host` as SNI (or none for an IP) through `config`.
pub fn connect(
    tls: &loop_tls::TlsConfig,
    client_config: &Arc<ClientConfig>,
    host: &str,
) -> (Pair, PumpResult) {
    let mut pair = Pair::new(client(client_config, host), tls.session().unwrap());
    let r = pair.handshake();
    (pair, r)
}
