//! The driver's machinery on real sockets (Unix socket pairs) and a manual
//! clock, without Python: deadlines (request head, keep-alive, body rate,
//! TLS handshake, WebSocket pings and close), the end-of-tick cork, flow
//! control, drain, linger and abort, and the registry emptying as
//! connections end.

use loop_http::{RequestHead, ResponsePart};
use loop_server::{
    App, ConnId, Driver, Event, ExchangeId, IoUpdate, Log, ManualClock, ServerSettings, Token,
    WsNext,
};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

#[derive(Default)]
struct Test {
    requests: Vec<(ConnId, ExchangeId, RequestHead)>,
    writable: Vec<ExchangeId>,
    ended: Vec<(ExchangeId, bool)>,
    closed: Vec<ConnId>,
    logs: Vec<Log>,
    ws_input: usize,
}

impl App for Test {
    type Conn = ();
    type Exchange = ();
}

struct Harness {
    driver: Driver<Test>,
    app: Test,
    clock: ManualClock,
    io: Vec<IoUpdate>,
}

impl Harness {
    fn new(settings: ServerSettings) -> Harness {
        let clock = ManualClock::new(100.0);
        let mut driver = Driver::new(settings, Arc::new(clock.clone())).unwrap();
        driver.set_log_levels(true, true);
        Harness {
            driver,
            app: Test::default(),
            clock,
            io: Vec::new(),
        }
    }

    /// A connection: the driver's end and the client's (non-blocking).
    fn connect(&mut self) -> (ConnId, UnixStream) {
        let (ours, theirs) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        theirs.set_nonblocking(true).unwrap();
        let id = self.driver.adopt(OwnedFd::from(ours), None, false).unwrap();
        self.pump();
        (id, theirs)
    }

    /// Reactor updates dropped (the test delivers readiness itself); the
    /// events recorded, a request begun.
    fn pump(&mut self) {
        loop {
            self.driver.take_io(&mut self.io);
            self.io.clear();
            let Some(event) = self.driver.next_event() else {
                break;
            };
            match event {
                Event::Request { conn, head, ws } => {
                    let copy = head.clone();
                    if let Ok((ex, _)) = self.driver.begin(conn, head, ()) {
                        if ws.is_some() {
                            self.driver.ws_accept(conn, ex, None, &[]).unwrap();
                            self.driver.ws_wait(conn, ex, true);
                        }
                        self.app.requests.push((conn, ex, copy));
                    }
                }
                Event::Writable { ex, .. } => self.app.writable.push(ex),
                Event::Ended {
                    ex, disconnected, ..
                } => self.app.ended.push((ex, disconnected)),
                Event::Closed { conn, .. } => self.app.closed.push(conn),
                Event::Pipelined { conn } => self.driver.resume(conn),
                Event::WsInput { .. } => self.app.ws_input += 1,
                Event::Log(line) => self.app.logs.push(line),
                Event::Body { .. } | Event::Wakeup { .. } => {}
            }
        }
    }

    fn ready(&mut self, id: ConnId) {
        self.driver.ready(Token::Conn(id).to_usize(), true, true);
        self.pump();
    }

    fn tick_end(&mut self) {
        if self.driver.take_flush_request() {
            self.driver.flush_corked();
        }
        self.pump();
    }

    fn advance(&mut self, seconds: f64) {
        self.clock.advance(seconds);
        self.driver.sweep();
        self.pump();
    }

    fn respond(&mut self, id: ConnId, ex: ExchangeId, body: &[u8]) -> bool {
        let length = body.len().to_string();
        let start = ResponsePart::Start {
            status: 200,
            headers: [(&b"content-length"[..], length.as_bytes())],
            trailers: false,
        };
        self.driver.send(id, ex, start).unwrap();
        let end: ResponsePart<'_, [(&[u8], &[u8]); 0]> = ResponsePart::Body {
            data: body,
            more: false,
        };
        let wait = self.driver.send(id, ex, end).unwrap();
        self.pump();
        wait
    }

    fn debug_lines(&self) -> Vec<&str> {
        self.app
            .logs
            .iter()
            .filter_map(|l| match l {
                Log::Debug(line) => Some(line.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// Everything the client can read now; `None` once it reads EOF.
fn read_now(client: &mut UnixStream) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match client.read(&mut buf) {
            Ok(0) => return (!out.is_empty()).then_some(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Some(out),
            Err(e) => panic!("{e}"),
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn responses_finished_in_a_tick_leave_together_at_its_end() {
    let mut h = Harness::new(ServerSettings::default());
    let (id, mut client) = h.connect();
    client
        .write_all(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    h.ready(id);
    let (_, ex, _) = h.app.requests[0].clone();
    h.respond(id, ex, b"a");
    // Corked: nothing on the wire until the end of the tick; the pipelined
    // request starts from a fresh stack (`Pipelined`, resumed by the pump).
    assert_eq!(read_now(&mut client), Some(Vec::new()));
    let (_, ex, _) = h.app.requests[1].clone();
    h.respond(id, ex, b"b");
    assert_eq!(read_now(&mut client), Some(Vec::new()));
    h.tick_end();
    let got = text(&read_now(&mut client).unwrap());
    assert_eq!(got.matches("HTTP/1.1 200 OK").count(), 2, "{got}");
    assert_eq!(h.app.ended, [(1, false), (2, false)]);
}

#[test]
fn an_idle_connection_ends_at_its_keep_alive_timeout() {
    let mut h = Harness::new(ServerSettings::default());
    let (id, mut client) = h.connect();
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    h.ready(id);
    let (_, ex, _) = h.app.requests[0].clone();
    h.respond(id, ex, b"ok");
    h.tick_end();
    assert!(read_now(&mut client).unwrap().starts_with(b"HTTP/1.1 200"));
    h.advance(4.9);
    assert!(h.app.closed.is_empty());
    h.advance(0.2);
    assert_eq!(h.app.closed, [id]);
    assert!(h
        .debug_lines()
        .contains(&"unix socket client - Connection closed (keep-alive timeout)"));
    assert_eq!(read_now(&mut client), None, "EOF");
    assert_eq!((h.driver.open_connections(), h.driver.registered()), (0, 0));
}

#[test]
fn a_partial_head_gets_408_a_silent_client_only_a_close() {
    let mut h = Harness::new(ServerSettings::default());
    let (partial, mut client) = h.connect();
    let (silent, mut quiet) = h.connect();
    client.write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
    h.ready(partial);
    h.advance(10.5);
    let got = text(&read_now(&mut client).unwrap());
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    // The answer is out; the connection half-closed and lingers, reading.
    assert!(h.app.closed.is_empty() || h.app.closed == [silent]);
    assert_eq!(read_now(&mut quiet), None, "closed without an answer");
    assert!(h
        .debug_lines()
        .contains(&"unix socket client - Connection closed (request head timeout)"));
    h.advance(2.5);
    assert_eq!(h.driver.registered(), 0);
    assert!(h
        .debug_lines()
        .contains(&"unix socket client - Connection closed (answered 408 by the server)"));
}

#[test]
fn a_body_slower_than_the_minimum_rate_is_dropped() {
    let mut h = Harness::new(ServerSettings::default());
    let (id, mut client) = h.connect();
    client
        .write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc")
        .unwrap();
    h.ready(id);
    let (_, ex, _) = h.app.requests[0].clone();
    // The app waits for body.
    assert!(matches!(
        h.driver.read_body(id, ex),
        loop_http::BodyRead::Data(..)
    ));
    assert!(matches!(
        h.driver.read_body(id, ex),
        loop_http::BodyRead::Wait { .. }
    ));
    for _ in 0..30 {
        h.advance(0.5);
    }
    assert_eq!(h.app.closed, [id]);
    assert_eq!(h.app.ended, [(ex, true)], "the app hears of it");
}

#[test]
fn a_close_drains_half_closes_lingers_then_ends() {
    let mut h = Harness::new(ServerSettings::default());
    let (id, mut client) = h.connect();
    // A bad request: the server answers and closes.
    client.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    h.ready(id);
    let mut got = read_now(&mut client).unwrap();
    // The FIN follows the answer; the server still reads (and drops)
    // what the client sends while it lingers.
    client.write_all(b"more bytes the client sends").unwrap();
    h.ready(id);
    assert_eq!(read_now(&mut client), None, "the FIN");
    got.extend(read_now(&mut client).unwrap_or_default());
    assert!(text(&got).starts_with("HTTP/1.1 400"), "{}", text(&got));
    assert!(h.app.closed.is_empty(), "lingering");
    h.advance(2.5);
    assert_eq!(h.app.closed, [id]);
    assert!(h
        .debug_lines()
        .contains(&"unix socket client - Connection closed (answered 400 by the server)"));
}

#[test]
fn a_client_that_does_not_read_makes_send_wait_until_it_does() {
    let mut h = Harness::new(ServerSettings::default());
    let (id, mut client) = h.connect();
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    h.ready(id);
    let (_, ex, _) = h.app.requests[0].clone();
    let start: ResponsePart<'_, [(&[u8], &[u8]); 1]> = ResponsePart::Start {
        status: 200,
        headers: [(b"transfer-encoding", b"chunked")],
        trailers: false,
    };
    h.driver.send(id, ex, start).unwrap();
    let mut waited = false;
    for _ in 0..200 {
        let part: ResponsePart<'_, [(&[u8], &[u8]); 0]> = ResponsePart::Body {
            data: &[b'x'; 32 * 1024],
            more: true,
        };
        if h.driver.send(id, ex, part).unwrap() {
            waited = true;
            break;
        }
    }
    h.pump();
    assert!(waited, "the socket never filled");
    assert!(h.app.writable.is_empty());
    // The client reads: the buffer drains to the low water mark.
    for _ in 0..100 {
        read_now(&mut client);
        h.ready(id);
        if !h.app.writable.is_empty() {
            break;
        }
    }
    assert_eq!(h.app.writable, [ex]);
}

#[test]
fn drain_closes_idle_connections_and_busy_ones_after_their_response() {
    let mut h = Harness::new(ServerSettings::default());
    let (idle, mut idle_client) = h.connect();
    let (busy, mut busy_client) = h.connect();
    busy_client
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    h.ready(busy);
    h.driver.drain(false);
    h.pump();
    assert_eq!(read_now(&mut idle_client), None, "idle: closed now");
    assert_eq!(h.app.closed, [idle]);
    let (_, ex, _) = h.app.requests[0].clone();
    h.respond(busy, ex, b"last");
    h.tick_end();
    let got = text(&read_now(&mut busy_client).unwrap_or_default());
    assert!(got.contains("connection: close"), "{got}");
    h.advance(2.5);
    assert_eq!(h.driver.registered(), 0);
}

#[test]
fn draining_with_kept_idle_connections_answers_one_more_request() {
    let mut h = Harness::new(ServerSettings::default());
    let (id, mut client) = h.connect();
    h.driver.drain(true);
    h.pump();
    assert!(h.app.closed.is_empty(), "kept for one more response");
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    h.ready(id);
    let (_, ex, _) = h.app.requests[0].clone();
    h.respond(id, ex, b"bye");
    h.tick_end();
    let got = text(&read_now(&mut client).unwrap_or_default());
    assert!(
        got.starts_with("HTTP/1.1 200") && got.contains("connection: close"),
        "{got}"
    );
}

#[test]
fn abort_resets_every_connection_and_the_app_hears_of_it() {
    let mut h = Harness::new(ServerSettings::default());
    let (id, mut client) = h.connect();
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    h.ready(id);
    h.driver.abort_all();
    h.pump();
    assert_eq!(h.app.ended, [(1, true)]);
    assert_eq!(h.app.closed, [id]);
    let err = client.read(&mut [0u8; 16]);
    assert!(
        matches!(&err, Ok(0)) || matches!(&err, Err(e) if e.kind() == ErrorKind::ConnectionReset),
        "{err:?}"
    );
    assert_eq!(h.driver.registered(), 0);
}

const UPGRADE: &[u8] = b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

#[test]
fn a_websocket_pings_fails_without_a_pong_and_aborts_without_a_close() {
    let mut h = Harness::new(ServerSettings::default());
    let (id, mut client) = h.connect();
    client.write_all(UPGRADE).unwrap();
    h.ready(id);
    assert!(h.driver.is_ws(id));
    let got = read_now(&mut client).unwrap();
    assert!(text(&got).starts_with("HTTP/1.1 101"));
    // ws_ping_interval: a ping.
    h.advance(20.5);
    h.tick_end();
    let ping = read_now(&mut client).unwrap();
    assert_eq!(ping[0], 0x89, "{ping:?}");
    // ws_ping_timeout without a pong: the session fails with 1011.
    h.advance(20.5);
    h.tick_end();
    let close = read_now(&mut client).unwrap();
    assert_eq!(
        (close[0], &close[2..4]),
        (0x88, &b"\x03\xf3"[..]),
        "{close:?}"
    );
    let (_, ex, _) = h.app.requests[0].clone();
    assert_eq!(h.app.ws_input, 1, "the receiver hears of the end");
    assert_eq!(
        h.driver.ws_next(id, ex, true),
        WsNext::Ended(1011, "keepalive ping timeout".into())
    );
    // ws_close_timeout without the peer's close: dropped.
    h.advance(10.5);
    assert_eq!(h.app.closed, [id]);
    assert_eq!(h.driver.registered(), 0);
}

#[test]
fn a_tls_handshake_that_does_not_finish_in_time_is_dropped() {
    let mut settings = ServerSettings::default();
    let dir = std::env::temp_dir().join(format!("loop-server-driver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (c, k) = (dir.join("c.pem"), dir.join("k.pem"));
    std::fs::write(&c, cert.cert.pem()).unwrap();
    std::fs::write(&k, cert.key_pair.serialize_pem()).unwrap();
    settings.tls = Some(loop_tls::TlsSettings {
        certfile: c,
        keyfile: k,
        password: None,
        ca_certs: None,
        client_auth: Default::default(),
        crls: Vec::new(),
        min_version: Default::default(),
        ciphers: None,
        sni: Vec::new(),
        max_handshake_bytes: loop_tls::TlsSettings::DEFAULT_MAX_HANDSHAKE_BYTES,
        alpn: vec![b"http/1.1".to_vec()],
    });
    let mut h = Harness::new(settings);
    let (id, mut client) = h.connect();
    client.write_all(b"\x16\x03\x01").unwrap();
    h.ready(id);
    h.advance(10.5);
    assert_eq!(h.app.closed, [id]);
    assert_eq!(read_now(&mut client), None);
    assert!(h.debug_lines().contains(
        &"unix socket client - Connection closed (TLS handshake timeout (ssl_handshake_timeout))"
    ));
    assert_eq!(h.driver.counters().tls.timed_out.get(), 1);
}
