//! Runs `examples/server.rs` (included as a module, so no separately built
//! binary is needed) on a thread and talks HTTP to it over TCP: keep-alive,
//! pipelining with bodies, HEAD, `100 Continue`, `Connection: close`,
//! HTTP/1.0, the server's own error answers, and the HTTP/2 preface
//! refused without a response.

#[path = "../../loop-http/tests/support/mod.rs"]
mod http_client;

#[path = "../examples/server.rs"]
#[allow(dead_code)] // its `main` is not called here
mod server;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use http_client::{parse_response, Response};

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

/// Read until `n` complete responses have arrived (or fail after 10 s).
fn read_responses(s: &mut TcpStream, n: usize, head: bool) -> Vec<Response> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let mut got = Vec::new();
        let mut pos = 0;
        while got.len() < n {
            match parse_response(&buf[pos..], head) {
                Ok((r, used)) if r.framing != "close" => {
                    got.push(r);
                    pos += used;
                }
                _ => break,
            }
        }
        if got.len() == n {
            assert_eq!(pos, buf.len(), "unexpected extra bytes");
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "timed out with {:?}",
            String::from_utf8_lossy(&buf)
        );
        let k = s.read(&mut chunk).unwrap();
        assert!(k > 0, "closed early: {:?}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..k]);
    }
}

fn assert_hello(r: &Response) {
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"Hello, World!");
    assert_eq!(r.header("content-length"), Some("13"));
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.header("server"), Some("ferroloop"));
    assert_eq!(r.header("date").map(str::len), Some(29));
}

fn assert_closed(s: &mut TcpStream) {
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
}

#[test]
fn the_example_serves_http() {
    let addr = start();

    // Keep-alive: two requests, one after the other, on one connection.
    let mut s = connect(addr);
    for _ in 0..2 {
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let r = read_responses(&mut s, 1, false);
        assert_hello(&r[0]);
        assert_eq!(r[0].header("connection"), None);
    }

    // Pipelining: many requests, with bodies, in one write.
    let mut batch = Vec::new();
    for i in 0..16 {
        match i % 3 {
            0 => batch.extend_from_slice(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            1 => batch.extend_from_slice(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"),
            _ => batch.extend_from_slice(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
        }
    }
    s.write_all(&batch).unwrap();
    let rs = read_responses(&mut s, 16, false);
    rs.iter().for_each(assert_hello);

    // The benchmark's other routes.
    s.write_all(b"GET /json HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let r = read_responses(&mut s, 1, false);
    assert_eq!(r[0].body.len(), 51);
    assert_eq!(r[0].header("content-type"), Some("application/json"));
    let mut post = b"POST /post HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\n\r\n".to_vec();
    post.extend_from_slice(&[b'x'; 4096]);
    s.write_all(&post).unwrap();
    assert_eq!(read_responses(&mut s, 1, false)[0].body, b"4096");

    // HEAD: no body, but the GET's length.
    s.write_all(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let r = read_responses(&mut s, 1, true);
    assert_eq!(
        (r[0].status, r[0].header("content-length"), r[0].body.len()),
        (200, Some("13"), 0)
    );

    // 100-continue, then the body, then the answer.
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        .unwrap();
    let r = read_responses(&mut s, 1, false);
    assert_eq!(r[0].status, 100);
    s.write_all(b"ok").unwrap();
    assert_hello(&read_responses(&mut s, 1, false)[0]);

    // Connection: close is honoured and announced.
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = read_responses(&mut s, 1, false);
    assert_hello(&r[0]);
    assert_eq!(r[0].header("connection"), Some("close"));
    assert_closed(&mut s);

    // HTTP/1.0: closes unless asked to keep alive.
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .unwrap();
    let r = read_responses(&mut s, 1, false);
    assert_eq!(r[0].header("connection"), Some("keep-alive"));
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    assert_hello(&read_responses(&mut s, 1, false)[0]);
    assert_closed(&mut s);

    // A bad request gets its status and the connection closes.
    for (request, status) in [
        (&b"GET / HTTP/1.1\r\n\r\n"[..], 400),
        (
            b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            501,
        ),
    ] {
        let mut s = connect(addr);
        s.write_all(request).unwrap();
        let r = read_responses(&mut s, 1, false);
        assert_eq!(
            (r[0].status, r[0].header("connection")),
            (status, Some("close"))
        );
        assert_closed(&mut s);
    }
    let mut s = connect(addr);
    let mut long = b"GET /".to_vec();
    long.extend_from_slice(&[b'a'; 9000]);
    s.write_all(&long).unwrap();
    assert_eq!(read_responses(&mut s, 1, false)[0].status, 414);
}

#[test]
fn the_http2_preface_is_refused_without_a_response() {
    let addr = start();
    // Whole, and cut where the first bytes do not decide yet.
    for cut in [0, 3, 16] {
        let mut s = connect(addr);
        let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
        s.write_all(&preface[..cut]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        s.write_all(&preface[cut..]).unwrap();
        // No HTTP/1.1 response: its client could not read one (RFC 9113 §3.4).
        assert_closed(&mut s);
    }
    // A method that starts like the preface is HTTP/1.1.
    let mut s = connect(addr);
    s.write_all(b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    assert_hello(&read_responses(&mut s, 1, false)[0]);
}
