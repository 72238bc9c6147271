//! The opening handshake (RFC 6455 §4.2.1–4.2.2) and the
//! permessage-deflate answer (RFC 7692 §7.1).

use loop_ws::handshake::{accept_key, check_request, is_websocket_upgrade};
use loop_ws::{Config, DeflateParams, Refusal};

const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

fn base() -> Vec<(&'static str, &'static str)> {
    vec![
        ("Host", "example.com"),
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", KEY),
        ("Sec-WebSocket-Version", "13"),
    ]
}

fn check(headers: &[(&str, &str)]) -> Result<loop_ws::Offer, Refusal> {
    check_request(
        b"GET",
        true,
        headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
    )
}

fn with(replace: &str, value: Option<&'static str>) -> Vec<(&'static str, &'static str)> {
    let mut h: Vec<_> = base()
        .into_iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case(replace))
        .collect();
    if let Some(v) = value {
        let name = base()
            .into_iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(replace))
            .map_or("X", |(n, _)| n);
        h.push((name, v));
    }
    h
}

fn status(r: Result<loop_ws::Offer, Refusal>) -> u16 {
    r.map(|_| 101).unwrap_or_else(|r| r.status)
}

#[test]
fn rfc_example_accept_key() {
    // RFC 6455 §1.3.
    assert_eq!(accept_key(KEY.as_bytes()), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    let offer = check(&base()).unwrap();
    let accept = offer.accept(&Config::default(), None);
    assert_eq!(
        accept.headers,
        [
            ("upgrade", "websocket".to_string()),
            ("connection", "Upgrade".to_string()),
            (
                "sec-websocket-accept",
                "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".to_string()
            ),
        ]
    );
    assert_eq!(accept.deflate, None);
}

#[test]
fn upgrade_detection() {
    let h = |v: &'static str| vec![(&b"upgrade"[..], v.as_bytes())];
    assert!(is_websocket_upgrade(h("websocket")));
    assert!(is_websocket_upgrade(h("h2c, WebSocket")));
    assert!(!is_websocket_upgrade(h("h2c")));
    assert!(!is_websocket_upgrade(vec![(
        &b"connection"[..],
        &b"upgrade"[..]
    )]));
    assert!(is_websocket_upgrade(vec![
        (&b"Upgrade"[..], &b"foo"[..]),
        (b"UPGRADE", b"websocket")
    ]));
}

#[test]
fn method_and_version_of_http() {
    let h = base();
    let it = || h.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
    assert_eq!(check_request(b"POST", true, it()).unwrap_err().status, 400);
    assert_eq!(check_request(b"get", true, it()).unwrap_err().status, 400);
    assert_eq!(check_request(b"GET", false, it()).unwrap_err().status, 400);
}

#[test]
fn token_lists_case_insensitive_and_repeated() {
    assert_eq!(status(check(&with("upgrade", Some("WebSocket")))), 101);
    assert_eq!(
        status(check(&with("connection", Some("keep-alive, UPGRADE")))),
        101
    );
    let mut h = with("connection", Some("keep-alive"));
    h.push(("connection", "upgrade"));
    assert_eq!(status(check(&h)), 101);
    assert_eq!(status(check(&with("upgrade", None))), 400);
    assert_eq!(status(check(&with("upgrade", Some("websocket2")))), 400);
    assert_eq!(status(check(&with("connection", None))), 400);
    assert_eq!(status(check(&with("connection", Some("keep-alive")))), 400);
}

#[test]
fn websocket_version() {
    for v in [None, Some("8"), Some("13, 8"), Some("")] {
        let r = check(&with("sec-websocket-version", v)).unwrap_err();
        assert_eq!(r.status, 426, "{v:?}");
        assert_eq!(r.headers, [("sec-websocket-version", "13")]);
    }
    let mut h = base();
    h.push(("Sec-WebSocket-Version", "13"));
    assert_eq!(status(check(&h)), 426, "repeated");
    assert_eq!(
        status(check(&with("sec-websocket-version", Some(" 13 ")))),
        101
    );
}

#[test]
fn websocket_key() {
    for v in [
        None,
        Some(""),
        Some("dGhlIHNhbXBsZSBub25jZQ"),        // no padding
        Some("dGhlIHNhbXBsZSBub25jZXg="),      // 17 bytes
        Some("dGhlIHNhbXBsZSBub25j"),          // 15 bytes
        Some("dGhlIHNhbXBsZSBub25jZQ==\u{0}"), // junk after
        Some("dGhlIHNhbXBsZSBub25jZR=="),      // non-canonical padding bits
        Some("!GhlIHNhbXBsZSBub25jZQ=="),
    ] {
        assert_eq!(status(check(&with("sec-websocket-key", v))), 400, "{v:?}");
    }
    let mut h = base();
    h.push(("sec-websocket-key", KEY));
    assert_eq!(status(check(&h)), 400, "repeated");
}

#[test]
fn subprotocols() {
    let mut h = base();
    h.push(("Sec-WebSocket-Protocol", "chat, superchat"));
    h.push(("sec-websocket-protocol", " v2.json ,"));
    let offer = check(&h).unwrap();
    assert_eq!(offer.subprotocols(), ["chat", "superchat", "v2.json"]);
    let accept = offer.accept(&Config::default(), Some("superchat"));
    assert!(accept
        .headers
        .contains(&("sec-websocket-protocol", "superchat".to_string())));
    let mut h = base();
    h.push(("Sec-WebSocket-Protocol", "chat, a b"));
    assert_eq!(status(check(&h)), 400);
}

#[test]
fn extensions_are_parsed_and_deflate_negotiated() {
    let mut h = base();
    h.push((
        "Sec-WebSocket-Extensions",
        "x-foo; a=1, permessage-deflate; client_max_window_bits",
    ));
    h.push((
        "Sec-WebSocket-Extensions",
        "permessage-deflate; server_no_context_takeover",
    ));
    let offer = check(&h).unwrap();
    assert_eq!(offer.extensions().len(), 3);
    assert_eq!(offer.extensions()[0].name, "x-foo");
    let accept = offer.accept(&Config::default(), None);
    assert_eq!(
        accept.deflate,
        Some(DeflateParams {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: 15,
            client_max_window_bits: 15,
        })
    );
    assert!(accept
        .headers
        .contains(&("sec-websocket-extensions", "permessage-deflate".to_string())));
    // Off in the config: never negotiated.
    let off = Config {
        per_message_deflate: false,
        ..Config::default()
    };
    let accept = offer.accept(&off, None);
    assert_eq!(accept.deflate, None);
    assert!(accept
        .headers
        .iter()
        .all(|(n, _)| *n != "sec-websocket-extensions"));
}

#[test]
fn malformed_extension_offers_do_not_fail_the_handshake() {
    let mut h = base();
    h.push((
        "Sec-WebSocket-Extensions",
        "permessage-deflate; server_max_window_bits=16, permessage-deflate; ;",
    ));
    h.push((
        "Sec-WebSocket-Extensions",
        "permessage-deflate; client_max_window_bits=\"10\"",
    ));
    let offer = check(&h).unwrap();
    let accept = offer.accept(&Config::default(), None);
    assert_eq!(accept.deflate.map(|d| d.client_max_window_bits), Some(10));
}
