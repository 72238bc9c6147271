//! Runs `examples/server.rs` on a thread and talks WebSocket to it over
//! TCP with loop-ws' test client (masked frames out, the server's frames
//! parsed strictly): the handshake with a first frame riding along, echoes
//! with a ping between them, permessage-deflate, refused handshakes, a
//! protocol error, and the closing handshake.

#[path = "../../loop-ws/tests/support/mod.rs"]
mod ws_client;

#[path = "../examples/server.rs"]
#[allow(dead_code)] // its `main` is not called here
mod server;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use ws_client::*;

fn start() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let settings = loop_server::ServerSettings::default();
    std::thread::spawn(move || server::run(listener, settings));
    addr
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Read until the response head ends; returns it and what followed.
fn read_head(s: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(buf[..end + 4].to_vec()).unwrap();
            return (head, buf[end + 4..].to_vec());
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "closed: {:?}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Read frames until `n` have arrived.
fn read_frames(s: &mut TcpStream, mut buf: Vec<u8>, n: usize) -> Vec<Frame> {
    let mut chunk = [0u8; 65536];
    loop {
        if let Some(frames) = complete(&buf, n) {
            return frames;
        }
        let k = s.read(&mut chunk).unwrap();
        assert!(k > 0, "closed early");
        buf.extend_from_slice(&chunk[..k]);
    }
}

/// The first `n` frames if they are all in `buf`.
fn complete(buf: &[u8], n: usize) -> Option<Vec<Frame>> {
    let mut at = 0;
    let mut count = 0;
    while count < n {
        let b = buf.get(at..)?;
        let (len, hl) = match *b.get(1)? & 0x7f {
            126 => (u16::from_be_bytes([*b.get(2)?, *b.get(3)?]) as usize, 4),
            127 => (
                u64::from_be_bytes(b.get(2..10)?.try_into().ok()?) as usize,
                10,
            ),
            x => (x as usize, 2),
        };
        if b.len() < hl + len {
            return None;
        }
        at += hl + len;
        count += 1;
    }
    Some(parse_frames(&buf[..at]))
}

const UPGRADE: &str =
    "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
    Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";

#[test]
fn handshake_echo_and_close() {
    let addr = start();
    let mut s = connect(addr);
    // The first frame rides with the request, as HTTP's leftovers.
    let mut req = format!("{UPGRADE}\r\n").into_bytes();
    req.extend(text("early"));
    s.write_all(&req).unwrap();
    let (head, rest) = read_head(&mut s);
    assert!(
        head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
        "{head}"
    );
    assert!(
        head.contains("sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
        "{head}"
    );
    let mut out = binary(&[1, 2, 3]);
    out.extend(frame(true, false, PING, b"hi"));
    out.extend(binary(&vec![5; 100_000]));
    s.write_all(&out).unwrap();
    let frames = read_frames(&mut s, rest, 4);
    assert_eq!(frames[0].payload, b"early");
    // The pong is queued when the ping is read, before the app's echoes.
    let mut rest: Vec<_> = frames[1..]
        .iter()
        .map(|f| (f.opcode, f.payload.len()))
        .collect();
    rest.sort_unstable();
    assert_eq!(rest, [(BINARY, 3), (BINARY, 100_000), (PONG, 2)]);
    s.write_all(&close_frame(1000, b"done")).unwrap();
    let frames = read_frames(&mut s, Vec::new(), 1);
    assert_eq!(frames[0].close(), Some((1000, String::new())));
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "the server closes after the handshake");
}

#[test]
fn deflate_is_negotiated_and_used() {
    let addr = start();
    let mut s = connect(addr);
    let req = format!(
        "{UPGRADE}Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
    );
    s.write_all(req.as_bytes()).unwrap();
    let (head, rest) = read_head(&mut s);
    assert!(
        head.contains("sec-websocket-extensions: permessage-deflate\r\n"),
        "{head}"
    );
    let params = loop_ws::DeflateParams {
        server_no_context_takeover: false,
        client_no_context_takeover: false,
        server_max_window_bits: 15,
        client_max_window_bits: 15,
    };
    let mut client = ClientDeflate::new(params);
    let data = "squeeze me ".repeat(100);
    s.write_all(&frame(true, true, TEXT, &client.compress(data.as_bytes())))
        .unwrap();
    let frames = read_frames(&mut s, rest, 1);
    assert!(frames[0].rsv1);
    assert_eq!(client.decompress(&frames[0].payload), data.as_bytes());
}

#[test]
fn refusals_are_http_responses_and_close() {
    let addr = start();
    let mut s = connect(addr);
    let req = UPGRADE.replace("Version: 13", "Version: 8");
    s.write_all(format!("{req}\r\n").as_bytes()).unwrap();
    let (head, _) = read_head(&mut s);
    assert!(head.starts_with("HTTP/1.1 426 "), "{head}");
    assert!(head.contains("sec-websocket-version: 13\r\n"), "{head}");
    assert!(head.contains("connection: close\r\n"), "{head}");
    let mut s = connect(addr);
    let req = UPGRADE.replace("dGhlIHNhbXBsZSBub25jZQ==", "short");
    s.write_all(format!("{req}\r\n").as_bytes()).unwrap();
    let (head, _) = read_head(&mut s);
    assert!(head.starts_with("HTTP/1.1 400 "), "{head}");
}

#[test]
fn protocol_error_closes_with_1002() {
    let addr = start();
    let mut s = connect(addr);
    s.write_all(format!("{UPGRADE}\r\n").as_bytes()).unwrap();
    let (_, rest) = read_head(&mut s);
    s.write_all(&frame_with(true, false, TEXT, b"unmasked", None))
        .unwrap();
    let frames = read_frames(&mut s, rest, 1);
    assert_eq!(frames[0].close().map(|(c, _)| c), Some(1002));
}
