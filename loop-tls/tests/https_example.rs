//! Runs `examples/https.rs` (included as a module, so no separately built
//! binary is needed) on a thread and talks HTTPS to it with a rustls
//! client over real TCP: two keep-alive requests, then `Connection: close`
//! answered with `close_notify`; a plaintext request to the TLS port is
//! refused with a close.

mod common;

#[path = "../examples/https.rs"]
mod https;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use rustls::{ClientConnection, StreamOwned};

fn start(name: &str) -> (SocketAddr, common::Ca) {
    let dir = common::temp_dir(name);
    let ca = common::ca("Example CA");
    let (cert, key) = common::write_pair(&dir, "server", &ca.server(&["localhost"]));
    let config = https::tls_config(cert, key).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || https::run(listener, config));
    (addr, ca)
}

fn connect(addr: SocketAddr, ca: &common::Ca) -> StreamOwned<ClientConnection, TcpStream> {
    let config = common::client_config(ca.roots(), rustls::DEFAULT_VERSIONS, None);
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    StreamOwned::new(common::client(&config, "localhost"), tcp)
}

/// One response: head and a content-length body.
fn response(tls: &mut impl Read) -> (String, Vec<u8>) {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        assert_eq!(tls.read(&mut byte).unwrap(), 1, "EOF inside a head");
        got.push(byte[0]);
    }
    let head = String::from_utf8(got).unwrap();
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
    let (addr, ca) = start("https-example");
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
    let (addr, _ca) = start("https-example-plain");
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    // Closed (perhaps after an alert), never answered in plaintext or hung.
    let _ = tcp.read_to_end(&mut got);
    assert!(!got.starts_with(b"HTTP/"), "{got:?}");
}
