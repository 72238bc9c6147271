//! Certificates by SNI, and cipher suites by name.

mod common;

use common::*;
use loop_tls::{ConfigError, SniCert, TlsConfig};

const BOTH: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

#[test]
fn sni_picks_the_certificate_and_info_shows_it() {
    let mut f = fixture("sni");
    let default_pem = std::fs::read_to_string(&f.settings.certfile).unwrap();
    let a = f.ca.server(&["a.example.com"]);
    let w = f.ca.server(&["*.wild.example.com"]);
    let (ac, ak) = write_pair(&f.dir, "a", &a);
    let (wc, wk) = write_pair(&f.dir, "w", &w);
    f.settings.sni = vec![
        SniCert {
            host: "A.Example.COM".into(),
            certfile: ac,
            keyfile: ak,
        },
        SniCert {
            host: "*.wild.example.com".into(),
            certfile: wc,
            keyfile: wk,
        },
    ];
    let tls = TlsConfig::load(&f.settings).unwrap();
    let config = client_config(f.ca.roots(), BOTH, None);

    let (pair, r) = connect(&tls, &config, "a.example.com");
    r.unwrap();
    let info = pair.server.info().unwrap();
    assert_eq!(info.server_cert, a.cert.pem());
    assert_eq!(info.server_name.as_deref(), Some("a.example.com"));

    let (pair, r) = connect(&tls, &config, "x.wild.example.com");
    r.unwrap();
    assert_eq!(pair.server.info().unwrap().server_cert, w.cert.pem());

    let (pair, r) = connect(&tls, &config, "localhost");
    r.unwrap();
    assert_eq!(pair.server.info().unwrap().server_cert, default_pem);

    // Two labels below a wildcard: the default (which does not match).
    let (_, r) = connect(&tls, &config, "y.x.wild.example.com");
    assert!(r.is_err());
}

fn negotiated(ciphers: &str, versions: &[&'static rustls::SupportedProtocolVersion]) -> u16 {
    let mut f = fixture("ciphers");
    f.settings.ciphers = Some(ciphers.into());
    let tls = TlsConfig::load(&f.settings).unwrap();
    let config = client_config(f.ca.roots(), versions, None);
    let (pair, r) = connect(&tls, &config, "localhost");
    r.unwrap();
    pair.server.info().unwrap().cipher_suite
}

#[test]
fn cipher_suites_by_iana_and_openssl_name() {
    let v13 = &[&rustls::version::TLS13][..];
    let v12 = &[&rustls::version::TLS12][..];
    assert_eq!(negotiated("TLS13_CHACHA20_POLY1305_SHA256", v13), 0x1303);
    assert_eq!(negotiated("TLS_AES_256_GCM_SHA384", v13), 0x1302);
    // rcgen's default key is ECDSA P-256.
    assert_eq!(negotiated("ECDHE-ECDSA-CHACHA20-POLY1305", v12), 0xcca9);
    assert_eq!(
        negotiated(
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256",
            v12
        ),
        0xc02b
    );
    // A 1.2-only list keeps the TLS 1.3 defaults.
    assert_eq!(negotiated("ECDHE-ECDSA-CHACHA20-POLY1305", v13), 0x1302);
}

#[test]
fn openssl_keywords_mean_the_defaults() {
    for list in [
        "TLSv1",
        "HIGH",
        "DEFAULT",
        "ALL:!aNULL:!eNULL:@STRENGTH",
        "HIGH:!MD5",
    ] {
        assert_eq!(negotiated(list, BOTH), 0x1302, "{list}");
    }
}

#[test]
fn an_unknown_cipher_is_refused_by_name() {
    let mut f = fixture("ciphers-bad");
    f.settings.ciphers = Some("ECDHE-ECDSA-AES128-GCM-SHA256:RC4-MD5".into());
    match TlsConfig::load(&f.settings) {
        Err(ConfigError::UnknownCipher(name)) => assert_eq!(name, "RC4-MD5"),
        other => panic!("{other:?}"),
    }
}
