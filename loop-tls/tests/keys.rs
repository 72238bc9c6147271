//! Key formats (PKCS#8, PKCS#1, SEC1, encrypted PKCS#8, legacy encrypted
//! PEM) and every configuration error, naming file and block. Keys in
//! formats rcgen does not write are made with the `openssl` CLI, which
//! these tests need (CI installs it): without it they fail, saying so.

mod common;

use common::*;
use loop_tls::{ClientAuth, ConfigError, SniCert, TlsConfig};
use std::path::Path;
use std::process::Command;

const BOTH: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

fn openssl(dir: &Path, args: &[&str]) {
    match Command::new("openssl").current_dir(dir).args(args).output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => panic!("these tests need the openssl CLI (apt-get install openssl): {e}"),
    }
}

fn message(r: Result<TlsConfig, ConfigError>) -> String {
    match r {
        Ok(_) => panic!("loaded"),
        Err(e) => e.to_string(),
    }
}

/// A "localhost" certificate for `key.pem`, signed by a CA `ca.pem`
/// (openssl).
fn self_signed(dir: &Path) {
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=DNS:localhost\n").unwrap();
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "30",
            "-subj",
            "/CN=test ca",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-key",
            "key.pem",
            "-subj",
            "/CN=localhost",
            "-out",
            "csr.pem",
        ],
    );
    openssl(
        dir,
        &[
            "x509", "-req", "-in", "csr.pem", "-CA", "ca.pem", "-CAkey", "ca.key", "-out",
            "cert.pem", "-days", "30", "-extfile", "ext.cnf",
        ],
    );
}

fn serves(dir: &Path, keyfile: &str, password: Option<&str>) {
    let mut s = settings(dir.join("cert.pem"), dir.join(keyfile));
    s.password = password.map(str::to_string);
    let tls = TlsConfig::load(&s).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    let cert = std::fs::read(dir.join("ca.pem")).unwrap();
    use rustls::pki_types::pem::PemObject;
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(&cert).unwrap())
        .unwrap();
    let config = client_config(roots, BOTH, None);
    connect(&tls, &config, "localhost").1.unwrap();
}

#[test]
fn pkcs1_rsa_key() {
    let dir = temp_dir("pkcs1");
    openssl(&dir, &["genrsa", "-traditional", "-out", "key.pem", "2048"]);
    assert!(std::fs::read_to_string(dir.join("key.pem"))
        .unwrap()
        .contains("BEGIN RSA PRIVATE KEY"));
    self_signed(&dir);
    serves(&dir, "key.pem", None);
}

#[test]
fn sec1_ec_key() {
    let dir = temp_dir("sec1");
    openssl(
        &dir,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            "key.pem",
        ],
    );
    assert!(std::fs::read_to_string(dir.join("key.pem"))
        .unwrap()
        .contains("BEGIN EC PRIVATE KEY"));
    self_signed(&dir);
    serves(&dir, "key.pem", None);
}

#[test]
fn encrypted_pkcs8_key_with_password() {
    let dir = temp_dir("enc");
    openssl(
        &dir,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            "key.pem",
        ],
    );
    self_signed(&dir);
    openssl(
        &dir,
        &[
            "pkcs8",
            "-topk8",
            "-v2",
            "aes-256-cbc",
            "-passout",
            "pass:s3cret",
            "-in",
            "key.pem",
            "-out",
            "enc.pem",
        ],
    );
    serves(&dir, "enc.pem", Some("s3cret"));

    let mut s = settings(dir.join("cert.pem"), dir.join("enc.pem"));
    let no_password = message(TlsConfig::load(&s));
    assert!(no_password.contains("enc.pem"), "{no_password}");
    assert!(no_password.contains("no password"), "{no_password}");
    s.password = Some("wrong".into());
    let wrong = message(TlsConfig::load(&s));
    assert!(
        wrong.contains("enc.pem") && wrong.contains("wrong password"),
        "{wrong}"
    );
    // A password for a key that is not encrypted.
    let mut s = settings(dir.join("cert.pem"), dir.join("key.pem"));
    s.password = Some("s3cret".into());
    let extra = message(TlsConfig::load(&s));
    assert!(
        extra.contains("key.pem") && extra.contains("not encrypted"),
        "{extra}"
    );
}

#[test]
fn legacy_encrypted_pem_is_refused_by_name() {
    let f = fixture("legacy");
    let key = write(
        &f.dir,
        "legacy.key",
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,00112233445566778899AABBCCDDEEFF\n\nAAAA\n-----END RSA PRIVATE KEY-----\n",
    );
    let mut s = f.settings.clone();
    s.keyfile = key;
    s.password = Some("x".into());
    let m = message(TlsConfig::load(&s));
    assert!(
        m.contains("legacy.key") && m.contains("legacy OpenSSL-encrypted PEM key"),
        "{m}"
    );
    assert!(m.contains("openssl pkcs8 -topk8"), "{m}");
}

#[test]
fn file_errors_name_the_file_and_block() {
    let f = fixture("errors");
    let load = |edit: &dyn Fn(&mut loop_tls::TlsSettings)| {
        let mut s = f.settings.clone();
        edit(&mut s);
        message(TlsConfig::load(&s))
    };
    let missing = f.dir.join("missing.pem");
    let m = load(&|s| s.certfile = missing.clone());
    assert!(
        m.contains("missing.pem") && m.contains("cannot read"),
        "{m}"
    );

    let key_only = f.settings.keyfile.clone();
    let m = load(&|s| s.certfile = key_only.clone());
    assert!(
        m.contains("server.key") && m.contains("no certificate"),
        "{m}"
    );

    let cert_only = f.settings.certfile.clone();
    let m = load(&|s| s.keyfile = cert_only.clone());
    assert!(
        m.contains("server.crt") && m.contains("no private key"),
        "{m}"
    );

    // Second block broken: block 2 and its line named.
    let cert_text = std::fs::read_to_string(&f.settings.certfile).unwrap();
    let bad = write(
        &f.dir,
        "bad.crt",
        &format!(
            "{cert_text}-----BEGIN CERTIFICATE-----\n!!!notbase64!!!\n-----END CERTIFICATE-----\n"
        ),
    );
    let line = cert_text.lines().count() + 1;
    let m = load(&|s| s.certfile = bad.clone());
    assert!(
        m.contains("bad.crt") && m.contains(&format!("PEM block 2 (CERTIFICATE, line {line})")),
        "{m}"
    );

    let unterminated = write(&f.dir, "open.crt", "-----BEGIN CERTIFICATE-----\nAAAA\n");
    let m = load(&|s| s.certfile = unterminated.clone());
    assert!(m.contains("open.crt") && m.contains("no END marker"), "{m}");

    // The key of another certificate.
    let other = write(
        &f.dir,
        "other.key",
        &rcgen::KeyPair::generate().unwrap().serialize_pem(),
    );
    let m = load(&|s| s.keyfile = other.clone());
    assert!(
        m.contains("other.key") && m.contains("server.crt") && m.contains("does not match"),
        "{m}"
    );
    // In words, without rustls' names for it.
    assert!(
        !m.contains("KeyMismatch") && !m.contains("inconsistent"),
        "{m}"
    );

    // CA file with no certificate; CRL that is not one.
    let empty = write(&f.dir, "empty.pem", "nothing here\n");
    let m = load(&|s| {
        s.ca_certs = Some(empty.clone());
        s.client_auth = ClientAuth::Required;
    });
    assert!(
        m.contains("empty.pem") && m.contains("no certificate"),
        "{m}"
    );
    let ca = f.ca.write(&f.dir, "ca.pem");
    let m = load(&|s| {
        s.ca_certs = Some(ca.clone());
        s.client_auth = ClientAuth::Required;
        s.crls = vec![cert_only.clone()];
    });
    assert!(m.contains("server.crt") && m.contains("no CRL"), "{m}");
    let der_junk = f.dir.join("junk.crl");
    std::fs::write(&der_junk, [0x30, 0x03, 0x01, 0x01, 0xff]).unwrap();
    let m = load(&|s| {
        s.ca_certs = Some(ca.clone());
        s.client_auth = ClientAuth::Required;
        s.crls = vec![der_junk.clone()];
    });
    assert!(
        m.contains("junk.crl") && m.contains("not a certificate revocation list"),
        "{m}"
    );

    // Client auth without CAs names the setting.
    let m = load(&|s| s.client_auth = ClientAuth::Optional);
    assert!(m.contains("ssl_ca_certs"), "{m}");

    // SNI entries.
    let m = load(&|s| {
        s.sni = vec![SniCert {
            host: "a.example.com".into(),
            certfile: missing.clone(),
            keyfile: key_only.clone(),
        }]
    });
    assert!(
        m.contains("ssl_sni entry \"a.example.com\"") && m.contains("missing.pem"),
        "{m}"
    );
    let entry = |host: &str| SniCert {
        host: host.into(),
        certfile: cert_only.clone(),
        keyfile: key_only.clone(),
    };
    let m = load(&|s| s.sni = vec![entry("a.example.com"), entry("A.example.com")]);
    assert!(m.contains("given twice"), "{m}");
    let m = load(&|s| s.sni = vec![entry("a.*.com")]);
    assert!(m.contains("not a host name"), "{m}");
}
