//! A rustls client against `TlsSession`, in memory.

mod common;

use common::*;
use loop_tls::{Eof, SessionErrorKind, TlsConfig};

const BOTH: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

fn roundtrip(version: &'static rustls::SupportedProtocolVersion, wire_version: u16) {
    let f = fixture("roundtrip");
    let tls = TlsConfig::load(&f.settings).unwrap();
    let config = client_config(f.ca.roots(), &[version], None);
    let (mut pair, r) = connect(&tls, &config, "localhost");
    r.unwrap();
    let info = pair.server.info().unwrap();
    assert_eq!(info.tls_version, wire_version);
    assert_eq!(info.server_name.as_deref(), Some("localhost"));
    assert!(info.client_cert_chain.is_empty());
    assert_eq!(info.client_cert_name, None);
    assert_eq!(pair.client.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(info.alpn.as_deref(), Some(&b"http/1.1"[..]));

    let request = b"GET / HTTP/1.1\r\nhost: localhost\r\n\r\n";
    assert_eq!(pair.send_to_server(request), request);
    // 1 MiB each way.
    let big: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
    assert_eq!(pair.send_to_client(&big), big);
    assert_eq!(pair.send_to_server(&big), big);
}

#[test]
fn tls13_handshake_and_data() {
    roundtrip(&rustls::version::TLS13, 0x0304);
}

#[test]
fn tls12_handshake_and_data() {
    roundtrip(&rustls::version::TLS12, 0x0303);
}

#[test]
fn close_notify_is_a_clean_eof_and_none_is_truncated() {
    let f = fixture("eof");
    let tls = TlsConfig::load(&f.settings).unwrap();
    let config = client_config(f.ca.roots(), BOTH, None);

    let (mut pair, r) = connect(&tls, &config, "localhost");
    r.unwrap();
    pair.client.send_close_notify();
    pair.pump().unwrap();
    assert_eq!(pair.server.eof(), Eof::Clean);

    let (mut pair, r) = connect(&tls, &config, "localhost");
    r.unwrap();
    assert_eq!(pair.server.eof(), Eof::Truncated);

    // Our close_notify reaches the client as a clean close.
    let (mut pair, r) = connect(&tls, &config, "localhost");
    r.unwrap();
    let mut wire = Vec::new();
    pair.server.close(&mut wire);
    assert!(!wire.is_empty());
    pair.server_to_client(&wire).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(
        std::io::Read::read(&mut pair.client.reader(), &mut buf).unwrap(),
        0
    );
    assert!(pair.client_app.is_empty());
}

#[test]
fn plaintext_http_is_not_tls() {
    let f = fixture("plain");
    let tls = TlsConfig::load(&f.settings).unwrap();
    let mut session = tls.session().unwrap();
    let mut app = Vec::new();
    let err = session
        .decode(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n", &mut app)
        .unwrap_err();
    assert_eq!(err.kind, SessionErrorKind::NotTls);
    assert!(app.is_empty());
}

#[test]
fn garbage_after_a_handshake_record_header_is_a_handshake_error() {
    let f = fixture("garbage");
    let tls = TlsConfig::load(&f.settings).unwrap();
    let mut session = tls.session().unwrap();
    let mut app = Vec::new();
    // A handshake record holding a message that is not a ClientHello.
    let err = session
        .decode(
            &[0x16, 0x03, 0x01, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00],
            &mut app,
        )
        .unwrap_err();
    assert!(
        matches!(
            err.kind,
            SessionErrorKind::Handshake | SessionErrorKind::NotTls
        ),
        "{err:?}"
    );
    // The alert rustls queued is still there to send.
    let mut wire = Vec::new();
    session.take_output(&mut wire);
    assert_eq!(wire.first(), Some(&0x15), "an alert record: {wire:?}");
}

#[test]
fn handshake_bytes_are_bounded() {
    let mut f = fixture("bound");
    f.settings.max_handshake_bytes = 100;
    let tls = TlsConfig::load(&f.settings).unwrap();
    let config = client_config(f.ca.roots(), BOTH, None);
    let (_, r) = connect(&tls, &config, "localhost");
    let err = r.unwrap_err();
    assert!(err.contains("HandshakeTooLarge"), "{err}");

    // The default bound is far above a normal handshake.
    f.settings.max_handshake_bytes = loop_tls::TlsSettings::DEFAULT_MAX_HANDSHAKE_BYTES;
    let tls = TlsConfig::load(&f.settings).unwrap();
    connect(&tls, &config, "localhost").1.unwrap();
}

#[test]
fn wants_read_until_the_handshake_completes() {
    let f = fixture("wants");
    let tls = TlsConfig::load(&f.settings).unwrap();
    let config = client_config(f.ca.roots(), BOTH, None);
    let mut pair = Pair::new(client(&config, "localhost"), tls.session().unwrap());
    assert!(pair.server.wants_read());
    assert!(pair.server.info().is_none());
    pair.handshake().unwrap();
    assert!(!pair.server.wants_read());
}

#[test]
fn min_version_13_refuses_a_12_only_client() {
    let mut f = fixture("min13");
    f.settings.min_version = loop_tls::MinVersion::Tls13;
    let tls = TlsConfig::load(&f.settings).unwrap();
    let config = client_config(f.ca.roots(), &[&rustls::version::TLS12], None);
    let (_, r) = connect(&tls, &config, "localhost");
    let err = r.unwrap_err();
    assert!(err.contains("Handshake"), "{err}");
    let config = client_config(f.ca.roots(), BOTH, None);
    let (pair, r) = connect(&tls, &config, "localhost");
    r.unwrap();
    assert_eq!(pair.server.info().unwrap().tls_version, 0x0304);
}

#[test]
fn alpn_offers_what_the_settings_list_and_none_without_an_offer() {
    let mut f = fixture("alpn-choice");
    f.settings.alpn = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let tls = TlsConfig::load(&f.settings).unwrap();
    let mut config = (*client_config(f.ca.roots(), BOTH, None)).clone();
    config.alpn_protocols = vec![b"http/1.1".to_vec(), b"h2".to_vec()];
    let (pair, r) = connect(&tls, &std::sync::Arc::new(config.clone()), "localhost");
    r.unwrap();
    // The server's preference wins.
    assert_eq!(
        pair.server.info().unwrap().alpn.as_deref(),
        Some(&b"h2"[..])
    );
    config.alpn_protocols = Vec::new();
    let (pair, r) = connect(&tls, &std::sync::Arc::new(config), "localhost");
    r.unwrap();
    assert_eq!(pair.server.info().unwrap().alpn, None);
}

#[test]
fn an_h2_only_client_is_refused() {
    let f = fixture("alpn");
    let tls = TlsConfig::load(&f.settings).unwrap();
    let mut config = (*client_config(f.ca.roots(), BOTH, None)).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let (_, r) = connect(&tls, &std::sync::Arc::new(config), "localhost");
    assert!(r.is_err());
}

#[test]
fn sessions_resume_and_survive_a_reload() {
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let f = fixture("resume");
        let tls = TlsConfig::load(&f.settings).unwrap();
        // One config: its session store carries the ticket / id.
        let config = client_config(f.ca.roots(), &[version], None);
        let (mut pair, r) = connect(&tls, &config, "localhost");
        r.unwrap();
        assert_eq!(
            pair.client.handshake_kind(),
            Some(rustls::HandshakeKind::Full)
        );
        // TLS 1.3 tickets come after the handshake, with data.
        pair.send_to_client(b"x");

        let (mut pair, r) = connect(&tls, &config, "localhost");
        r.unwrap();
        assert_eq!(
            pair.client.handshake_kind(),
            Some(rustls::HandshakeKind::Resumed)
        );
        pair.send_to_client(b"x");

        let reloaded = tls.reload(&f.settings).unwrap();
        let (pair, r) = connect(&reloaded, &config, "localhost");
        r.unwrap();
        assert_eq!(
            pair.client.handshake_kind(),
            Some(rustls::HandshakeKind::Resumed),
            "{version:?}"
        );
    }
}
