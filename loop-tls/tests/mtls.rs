//! Client certificates: verified against `ca_certs`, with CRLs.

mod common;

use common::*;
use loop_tls::{ClientAuth, TlsConfig};
use rcgen::{
    date_time_ymd, CertificateRevocationListParams, KeyIdMethod, RevokedCertParams, SerialNumber,
};

const BOTH: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

fn mtls(f: &mut Fixture, auth: ClientAuth) -> TlsConfig {
    f.settings.ca_certs = Some(f.ca.write(&f.dir, "ca.pem"));
    f.settings.client_auth = auth;
    TlsConfig::load(&f.settings).unwrap()
}

#[test]
fn a_valid_client_certificate_is_in_info() {
    for version in BOTH {
        let mut f = fixture("mtls-ok");
        let tls = mtls(&mut f, ClientAuth::Required);
        let client_cert = f.ca.client("alice");
        let config = client_config(f.ca.roots(), &[version], Some(&client_cert));
        let (pair, r) = connect(&tls, &config, "localhost");
        r.unwrap();
        let info = pair.server.info().unwrap();
        assert_eq!(info.client_cert_chain, vec![client_cert.cert.pem()]);
        // RFC 4514: most specific RDN first, `,` and `&`-free escaping.
        assert_eq!(
            info.client_cert_name.as_deref(),
            Some("CN=alice,O=Ferro\\, Loop & Co,C=FR")
        );
    }
}

#[test]
fn required_refuses_a_client_without_certificate() {
    let mut f = fixture("mtls-missing");
    let tls = mtls(&mut f, ClientAuth::Required);
    let config = client_config(f.ca.roots(), BOTH, None);
    let (_, r) = connect(&tls, &config, "localhost");
    assert!(r.unwrap_err().contains("Handshake"));
}

#[test]
fn optional_accepts_a_client_without_certificate() {
    let mut f = fixture("mtls-optional");
    let tls = mtls(&mut f, ClientAuth::Optional);
    let config = client_config(f.ca.roots(), BOTH, None);
    let (pair, r) = connect(&tls, &config, "localhost");
    r.unwrap();
    let info = pair.server.info().unwrap();
    assert!(info.client_cert_chain.is_empty());
    assert_eq!(info.client_cert_name, None);

    // A certificate that is offered is still verified.
    let other = ca("Other CA").client("mallory");
    let config = client_config(f.ca.roots(), BOTH, Some(&other));
    assert!(connect(&tls, &config, "localhost").1.is_err());
}

#[test]
fn none_asks_for_no_certificate_even_with_ca_certs() {
    let mut f = fixture("mtls-none");
    let tls = mtls(&mut f, ClientAuth::None);
    let client_cert = f.ca.client("alice");
    let config = client_config(f.ca.roots(), BOTH, Some(&client_cert));
    let (pair, r) = connect(&tls, &config, "localhost");
    r.unwrap();
    assert!(pair.server.info().unwrap().client_cert_chain.is_empty());
}

#[test]
fn an_untrusted_client_certificate_is_refused() {
    let mut f = fixture("mtls-untrusted");
    let tls = mtls(&mut f, ClientAuth::Required);
    let other = ca("Other CA").client("mallory");
    let config = client_config(f.ca.roots(), BOTH, Some(&other));
    let err = connect(&tls, &config, "localhost").1.unwrap_err();
    assert!(err.contains("Handshake"), "{err}");
}

#[test]
fn an_expired_client_certificate_is_refused() {
    let mut f = fixture("mtls-expired");
    let tls = mtls(&mut f, ClientAuth::Required);
    let mut params = client_params("old");
    params.not_before = date_time_ymd(2000, 1, 1);
    params.not_after = date_time_ymd(2001, 1, 1);
    let expired = f.ca.issue(params);
    let config = client_config(f.ca.roots(), BOTH, Some(&expired));
    let err = connect(&tls, &config, "localhost").1.unwrap_err();
    assert!(err.contains("Expired") || err.contains("expired"), "{err}");
}

#[test]
fn a_revoked_client_certificate_is_refused() {
    for der in [false, true] {
        let mut f = fixture("mtls-crl");
        let mut params = client_params("revoked");
        params.serial_number = Some(SerialNumber::from(7u64));
        let revoked = f.ca.issue(params);
        let good = f.ca.client("good");
        let crl = CertificateRevocationListParams {
            this_update: date_time_ymd(2020, 1, 1),
            next_update: date_time_ymd(2099, 1, 1),
            crl_number: SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs: vec![RevokedCertParams {
                serial_number: SerialNumber::from(7u64),
                revocation_time: date_time_ymd(2020, 1, 1),
                reason_code: None,
                invalidity_date: None,
            }],
            key_identifier_method: KeyIdMethod::Sha256,
        }
        .signed_by(&f.ca.cert, &f.ca.key)
        .unwrap();
        let path = if der {
            let p = f.dir.join("crl.der");
            std::fs::write(&p, crl.der()).unwrap();
            p
        } else {
            write(&f.dir, "crl.pem", &crl.pem().unwrap())
        };
        f.settings.crls = vec![path];
        let tls = mtls(&mut f, ClientAuth::Required);

        let config = client_config(f.ca.roots(), BOTH, Some(&revoked));
        let err = connect(&tls, &config, "localhost").1.unwrap_err();
        assert!(err.contains("Revoked") || err.contains("revoked"), "{err}");
        let config = client_config(f.ca.roots(), BOTH, Some(&good));
        connect(&tls, &config, "localhost").1.unwrap();
    }
}
