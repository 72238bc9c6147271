//! Runs `examples/server.rs` with TLS on a thread and talks HTTPS and WSS
//! to it with a rustls client over real TCP: keep-alive, then `Connection:
//! close` answered with `close_notify`; ALPN chose HTTP/1.1; a plaintext
//! request to the TLS port is refused with a close; a WebSocket upgraded
//! over the same TLS layer echoes text and binary messages (one larger
//! than a record and the read buffer) and closes with 1000.

#[path = "../../loop-tls/tests/common/mod.rs"]
mod common;

#[path = "../../loop-ws/tests/support/mod.rs"]
mod ws_client;

#[path = "../examples/server.rs"]
#[allow(dead_code)] // its `main` is not called here
mod server;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use rustls::{ClientConnection, StreamOwned};

fn start(name: &str) -> (SocketAddr, common::Ca) {
    let dir = common::temp_dir(name);
    let ca = common::ca("Example CA");
    let (cert, key) = common::write_pair(&dir, "server", &ca.server(&["localhost"]));
    let mut settings = loop_server::ServerSettings::default();
    let mut tls = common::settings(cert, key);
    tls.alpn = loop_server::protocol::ALPN
        .iter()
        .map(|p| p.to_vec())
        .collect();
    settings.tls = Some(tls);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || server::run(listener, settings));
    (addr, ca)
}

fn connect(addr: SocketAddr, ca: &common::Ca) -> StreamOwned<ClientConnection, TcpStream> {
    let config = common::client_config(ca.roots(), rustls::DEFAULT_VERSIONS, None);
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    StreamOwned::new(common::client(&config, "localhost"), tcp)
}

/// A response head, read a byte at a time (so nothing after it is taken).
fn head(tls: &mut impl Read) -> String {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        assert_eq!(tls.read(&mut byte).unwrap(), 1, "EOF inside a head");
        got.push(byte[0]);
    }
    String::from_utf8(got).unwrap()
}

/// One response: head and a content-length body.
fn response(tls: &mut impl Read) -> (String, Vec<u8>) {
    let head = head(tls);
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .expect("content-length")
        .trim()
        .parse()
        .unwrap();
    let mut body = vec![0u8; length];
    tls.read_exact(&mut body).unwrap();
    (head, body)
}

#[test]
fn keep_alive_then_close_notify() {
    let (addr, ca) = start("example-https");
    let mut tls = connect(addr, &ca);
    for _ in 0..2 {
        tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let (head, body) = response(&mut tls);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(body, b"Hello, World!");
    }
    assert_eq!(
        tls.conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let (head, body) = response(&mut tls);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, b"Hello, World!");
    // A clean end: close_notify, then EOF (rustls reads 0, not an error).
    let mut rest = Vec::new();
    tls.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn plaintext_to_the_tls_port_is_closed() {
    let (addr, _ca) = start("example-https-plain");
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    // Closed (perhaps after an alert), never answered in plaintext or hung.
    let _ = tcp.read_to_end(&mut got);
    assert!(!got.starts_with(b"HTTP/"), "{got:?}");
}

const UPGRADE: &[u8] = b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
    Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
    Sec-WebSocket-Version: 13\r\n\r\n";

/// One frame from the server, read exactly (header, then payload).
fn read_frame(tls: &mut impl Read) -> ws_client::Frame {
    let mut wire = vec![0u8; 2];
    tls.read_exact(&mut wire).unwrap();
    let extra = match wire[1] & 0x7f {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mut ext = vec![0u8; extra];
    tls.read_exact(&mut ext).unwrap();
    let len = match extra {
        0 => usize::from(wire[1] & 0x7f),
        _ => ext.iter().fold(0usize, |n, b| n << 8 | usize::from(*b)),
    };
    let mut payload = vec![0u8; len];
    tls.read_exact(&mut payload).unwrap();
    wire.extend(ext);
    wire.extend(payload);
    let mut frames = ws_client::parse_frames(&wire);
    assert_eq!(frames.len(), 1);
    frames.remove(0)
}

#[test]
fn wss_echo_then_close_1000() {
    let (addr, ca) = start("example-wss");
    let mut tls = connect(addr, &ca);
    // The first message rides with the upgrade request.
    let mut request = UPGRADE.to_vec();
    request.extend(ws_client::text("early"));
    tls.write_all(&request).unwrap();
    let head = head(&mut tls);
    assert!(
        head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
        "{head}"
    );
    assert!(
        head.contains("sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
        "{head}"
    );
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let sent: [(u8, Vec<u8>); 3] = [
        (ws_client::TEXT, "héllo, wss".as_bytes().to_vec()),
        (ws_client::BINARY, vec![0, 1, 2, 255]),
        // Larger than a TLS record and than the server's read buffer.
        (ws_client::BINARY, big),
    ];
    let mut out = Vec::new();
    for (opcode, payload) in &sent {
        out.extend(ws_client::frame(true, false, *opcode, payload));
    }
    tls.write_all(&out).unwrap();
    let first = read_frame(&mut tls);
    assert_eq!(
        (first.opcode, &first.payload[..]),
        (ws_client::TEXT, &b"early"[..])
    );
    for (opcode, payload) in &sent {
        let got = read_frame(&mut tls);
        assert!(got.fin);
        assert_eq!(got.opcode, *opcode);
        assert_eq!(&got.payload, payload);
    }
    tls.write_all(&ws_client::close_frame(1000, b"done"))
        .unwrap();
    let close = read_frame(&mut tls);
    assert_eq!(close.opcode, ws_client::CLOSE);
    assert_eq!(close.close().map(|(code, _)| code), Some(1000));
    // Then close_notify and EOF: a clean end (rustls reads 0, not an error).
    let mut rest = Vec::new();
    tls.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn ws_path_without_upgrade_is_426() {
    let (addr, ca) = start("example-ws426");
    let mut tls = connect(addr, &ca);
    tls.write_all(b"GET /ws HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let (head, body) = response(&mut tls);
    assert!(head.starts_with("HTTP/1.1 426"), "{head}");
    assert!(head.contains("upgrade: websocket\r\n"), "{head}");
    assert_eq!(body, b"this path speaks WebSocket only");
    // The connection stays usable for HTTP.
    tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let (head, body) = response(&mut tls);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, b"Hello, World!");
}
