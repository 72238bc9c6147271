//! The load generator against a small threaded std WebSocket echo server
//! over real sockets: echoes verified and counted, the closing handshake,
//! permessage-deflate both ways, a corrupted echo caught, the idle mode.

use super::*;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};
use std::io::Read;
use std::net::{TcpListener, TcpStream};

/// How the test server misbehaves, if at all.
#[derive(Clone, Copy, Default)]
struct Server {
    /// Accept permessage-deflate when offered.
    deflate: bool,
    /// Flip a bit of this message's echo (connection 0).
    corrupt_message: Option<usize>,
}

fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// One masked client frame: (fin, rsv1, opcode, unmasked payload); None at EOF.
fn read_frame(stream: &mut TcpStream) -> Option<(bool, bool, u8, Vec<u8>)> {
    let mut h = [0u8; 2];
    stream.read_exact(&mut h).ok()?;
    assert!(h[1] & 0x80 != 0, "client frames must be masked");
    let len = match h[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            stream.read_exact(&mut b).unwrap();
            u16::from_be_bytes(b) as usize
        }
        127 => {
            let mut b = [0u8; 8];
            stream.read_exact(&mut b).unwrap();
            u64::from_be_bytes(b) as usize
        }
        n => n as usize,
    };
    let mut mask = [0u8; 4];
    stream.read_exact(&mut mask).unwrap();
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).unwrap();
    for (i, b) in payload.iter_mut().enumerate() {
        *b ^= mask[i % 4];
    }
    Some((h[0] & 0x80 != 0, h[0] & 0x40 != 0, h[0] & 0x0f, payload))
}

fn write_frame(stream: &mut TcpStream, opcode: u8, rsv1: bool, payload: &[u8]) {
    let mut out = vec![0x80 | if rsv1 { 0x40 } else { 0 } | opcode];
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= 0xffff => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    stream.write_all(&out).unwrap();
}

fn session(mut stream: TcpStream, conn: usize, how: Server) {
    let head = read_head(&mut stream);
    let key = head
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .unwrap();
    let deflate = how.deflate && head.contains("permessage-deflate");
    let mut answer = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n",
        ws_wire::accept_for(key)
    );
    if deflate {
        answer.push_str("Sec-WebSocket-Extensions: permessage-deflate\r\n");
    }
    answer.push_str("\r\n");
    stream.write_all(answer.as_bytes()).unwrap();
    let (mut inflate, mut deflater) = (
        Decompress::new(false),
        Compress::new(Compression::fast(), false),
    );
    let mut number = 0;
    while let Some((fin, rsv1, opcode, mut payload)) = read_frame(&mut stream) {
        assert!(fin, "the client sends each message as one frame");
        match opcode {
            ws_wire::OP_CLOSE => {
                write_frame(&mut stream, ws_wire::OP_CLOSE, false, &payload);
                return; // dropping the stream closes TCP, server first
            }
            ws_wire::OP_PING => write_frame(&mut stream, ws_wire::OP_PONG, false, &payload),
            _ => {
                if rsv1 {
                    payload.extend_from_slice(&[0, 0, 0xff, 0xff]);
                    let mut plain = Vec::with_capacity(1 << 20);
                    inflate
                        .decompress_vec(&payload, &mut plain, FlushDecompress::Sync)
                        .unwrap();
                    payload = plain;
                }
                if how.corrupt_message == Some(number) && conn == 0 {
                    payload[3] ^= 1;
                }
                if deflate {
                    let mut packed = Vec::with_capacity(payload.len() + 1024);
                    deflater
                        .compress_vec(&payload, &mut packed, FlushCompress::Sync)
                        .unwrap();
                    packed.truncate(packed.len() - 4);
                    write_frame(&mut stream, opcode, true, &packed);
                } else {
                    write_frame(&mut stream, opcode, false, &payload);
                }
                number += 1;
            }
        }
    }
}

fn server(how: Server) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for (conn, stream) in listener.incoming().enumerate() {
            let stream = stream.unwrap();
            std::thread::spawn(move || session(stream, conn, how));
        }
    });
    addr
}

fn options(addr: SocketAddr, size: usize) -> Options {
    Options {
        addr,
        path: "/ws".into(),
        conns: 3,
        size,
        text: false,
        deflate: false,
        idle: false,
        warmup: Duration::from_millis(50),
        duration: Duration::from_millis(150),
    }
}

fn clean(t: &Tally) {
    let errors: Vec<_> = t.errors.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        (t.failed, t.mismatches, t.unclosed, t.bad_close),
        (0, 0, 0, 0),
        "{errors:?}"
    );
}

#[test]
fn echoes_verified_counted_and_closed() {
    for size in [1, 125, 126, 4096, 70_000] {
        let mut events = Vec::new();
        let report = run_echo(&options(server(Server::default()), size), |e| {
            events.push(e.to_string())
        })
        .unwrap();
        assert_eq!(events, ["measure_start", "measure_end"]);
        clean(&report.tally);
        assert_eq!(report.tally.deflate, 0);
        assert!(report.messages > 0 && report.messages <= report.tally.verified);
        assert_eq!(report.latencies_us.len() as u64, report.messages);
    }
}

#[test]
fn deflate_negotiated_both_ways() {
    for text in [false, true] {
        let how = Server {
            deflate: true,
            ..Server::default()
        };
        let mut opts = options(server(how), 4096);
        (opts.deflate, opts.text) = (true, text);
        let report = run_echo(&opts, |_| {}).unwrap();
        clean(&report.tally);
        assert_eq!(report.tally.deflate, 3);
        assert!(report.messages > 0);
    }
}

#[test]
fn a_deflate_offer_declined_still_echoes() {
    let mut opts = options(server(Server::default()), 4096);
    (opts.deflate, opts.text) = (true, true);
    let report = run_echo(&opts, |_| {}).unwrap();
    clean(&report.tally);
    assert_eq!(report.tally.deflate, 0);
}

#[test]
fn a_corrupted_echo_is_a_mismatch() {
    for deflate in [false, true] {
        let how = Server {
            deflate,
            corrupt_message: Some(4),
        };
        let mut opts = options(server(how), 1024);
        opts.deflate = deflate;
        let report = run_echo(&opts, |_| {}).unwrap();
        let t = &report.tally;
        assert_eq!((t.failed, t.mismatches), (1, 1));
        assert!(
            t.errors[0].0.contains("echo of message 4 differs"),
            "{:?}",
            t.errors
        );
    }
}

#[test]
fn idle_connections_open_ping_and_close() {
    let mut opts = options(server(Server::default()), 64);
    (opts.conns, opts.idle) = (20, true);
    let mut open = None;
    let report = run_idle(&opts, |t| open = Some((t.failed, t.deflate)), || {}).unwrap();
    assert_eq!(open, Some((0, 0)));
    clean(&report.tally);
}

#[test]
fn parses_options() {
    let args: Vec<String> = [
        "--addr",
        "127.0.0.1:9",
        "--size",
        "4096",
        "--text",
        "--deflate",
    ]
    .map(String::from)
    .into();
    let opts = parse(&args).unwrap();
    assert_eq!(
        (opts.conns, opts.size, opts.text, opts.deflate),
        (10, 4096, true, true)
    );
    assert!(parse(&["--size".into(), "0".into()]).is_err());
    assert!(parse(&["--conns".into(), "5".into()]).is_err()); // no --addr
}
