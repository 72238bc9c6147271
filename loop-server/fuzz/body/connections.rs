//! Whole connections through the driver, scripted by arbitrary bytes: the
//! body of the `connections` fuzz target, also run on stable by
//! `tests/proptest_connections.rs`.
//!
//! A few client sockets (Unix socket pairs) talk to one driver on a manual
//! clock. The script interleaves what the clients send (HTTP requests with
//! and without bodies, pipelined, `100 Continue`, upgrades to WebSocket,
//! masked frames, raw bytes), cut at arbitrary points; readiness; the
//! clock moving and the sweep; the end-of-tick flush; clients reading,
//! half-closing, closing and resetting; and the server draining. A small
//! application answers: echoes, streamed responses, rejections, an app
//! that fails, WebSocket echo, close and denial.
//!
//! Checked: nothing panics; the reactor updates are consistent (no fd
//! registered twice, none touched after its close); no event names a
//! connection after its `Closed`; after a response that says
//! `connection: close`, or a WebSocket close frame, the server writes
//! nothing more on that connection; and once the clients have read
//! everything and time has passed every deadline after a drain, no
//! connection is left in the registry.

use loop_http::{BodyRead, RequestHead, ResponsePart};
use loop_server::{
    App, ConnId, Driver, Event, ExchangeId, IoUpdate, ManualClock, ServerSettings, WsNext,
};
use std::collections::{HashMap, HashSet};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

const CONNECTIONS: usize = 3;

/// Requests and frames the script picks from (besides raw bytes).
const PIECES: &[&[u8]] = &[
    b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
    b"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
    b"abc",
    b"GET /stream HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /reject HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /fail HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    b"GET / HTTP/1.0\r\n\r\n",
    b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    b"GET /wsclose HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    b"GET /wsdeny HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    // Masked text "hi", a masked ping, a masked close 1000.
    b"\x81\x82\x01\x02\x03\x04\x69\x6b",
    b"\x89\x80\x01\x02\x03\x04",
    b"\x88\x82\x01\x02\x03\x04\x02\xea",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"GET /x HTTP/1.1\r\n\r\n",
];

/// What the application does with a request, by its path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    Echo,
    Stream,
    Ws,
    WsClose,
}

struct Exchange {
    route: Route,
    body: usize,
    /// Body parts a streamed response still sends.
    parts: u8,
}

#[derive(Default)]
struct Harness;

impl App for Harness {
    type Conn = ();
    type Exchange = Exchange;
}

fn respond(driver: &mut Driver<Harness>, conn: ConnId, ex: ExchangeId, body: &[u8]) {
    let length = body.len().to_string();
    let start = ResponsePart::Start {
        status: 200,
        headers: [(&b"content-length"[..], length.as_bytes())],
        trailers: false,
    };
    if driver.send(conn, ex, start).is_ok() {
        let end: ResponsePart<'_, [(&[u8], &[u8]); 0]> = ResponsePart::Body {
            data: body,
            more: false,
        };
        let _ = driver.send(conn, ex, end);
    }
}

impl Harness {
    fn request(&mut self, d: &mut Driver<Harness>, conn: ConnId, head: RequestHead, ws: bool) {
        let route = match head.path() {
            b"/reject" => return d.reject(conn, head, 503),
            b"/stream" => Route::Stream,
            b"/wsclose" if ws => Route::WsClose,
            _ if ws => Route::Ws,
            _ => Route::Echo,
        };
        let path = head.path().to_vec();
        let x = Exchange {
            route,
            body: 0,
            parts: 3,
        };
        let Ok((ex, _)) = d.begin(conn, head, x) else {
            return;
        };
        match (route, path.as_slice()) {
            (_, b"/fail") => d.fail(conn, 500, None),
            (_, b"/wsdeny") => {
                let start = ResponsePart::Start {
                    status: 403,
                    headers: [(&b"content-length"[..], &b"0"[..])],
                    trailers: false,
                };
                let _ = d.send(conn, ex, start);
                let end: ResponsePart<'_, [(&[u8], &[u8]); 0]> = ResponsePart::Body {
                    data: b"",
                    more: false,
                };
                let _ = d.send(conn, ex, end);
            }
            (Route::Ws | Route::WsClose, _) => {
                if d.ws_accept(conn, ex, None, &[]).is_ok() {
                    self.ws(d, conn, ex);
                }
            }
            (Route::Stream, _) => {
                let start = ResponsePart::Start {
                    status: 200,
                    headers: [(&b"transfer-encoding"[..], &b"chunked"[..])],
                    trailers: false,
                };
                if d.send(conn, ex, start).is_ok() {
                    d.app_waits(conn);
                    self.stream(d, conn, ex);
                }
            }
            (Route::Echo, _) => self.read(d, conn, ex),
        }
    }

    fn read(&mut self, d: &mut Driver<Harness>, conn: ConnId, ex: ExchangeId) {
        loop {
            match d.read_body(conn, ex) {
                BodyRead::Data(chunk, more) => {
                    let Some(x) = d.exchange_app(conn, ex) else {
                        return;
                    };
                    x.body += chunk.len();
                    if !more {
                        let n = x.body.to_string();
                        return respond(d, conn, ex, n.as_bytes());
                    }
                }
                BodyRead::Wait { .. } | BodyRead::Disconnect => return,
            }
        }
    }

    /// Streamed body parts, each waiting for the buffer to drain.
    fn stream(&mut self, d: &mut Driver<Harness>, conn: ConnId, ex: ExchangeId) {
        loop {
            let Some(x) = d.exchange_app(conn, ex) else {
                return;
            };
            if x.route != Route::Stream {
                return;
            }
            x.parts = x.parts.saturating_sub(1);
            let more = x.parts > 0;
            let part: ResponsePart<'_, [(&[u8], &[u8]); 0]> = ResponsePart::Body {
                data: &[b's'; 40_000],
                more,
            };
            match d.send(conn, ex, part) {
                Ok(true) | Err(_) => return,
                Ok(false) if more => continue,
                Ok(false) => return,
            }
        }
    }

    fn ws(&mut self, d: &mut Driver<Harness>, conn: ConnId, ex: ExchangeId) {
        loop {
            match d.ws_next(conn, ex, true) {
                WsNext::Message(m) => {
                    let close = d
                        .exchange_app(conn, ex)
                        .is_some_and(|x| x.route == Route::WsClose);
                    if close {
                        let _ = d.ws_close(conn, ex, 1000, "bye");
                        return;
                    }
                    let _ = d.ws_send(conn, ex, m.kind, &m.data);
                }
                WsNext::Wait => return d.ws_wait(conn, ex, true),
                WsNext::Ended(..) => return,
            }
        }
    }
}

/// A client and what it has received so far.
struct Client {
    sock: Option<UnixStream>,
    id: Option<ConnId>,
    received: Vec<u8>,
}

struct World {
    driver: Driver<Harness>,
    app: Harness,
    clock: ManualClock,
    clients: Vec<Client>,
    /// fds the reactor watches, by fd.
    registered: HashMap<RawFd, usize>,
    closed: HashSet<ConnId>,
    io: Vec<IoUpdate>,
}

impl World {
    fn new() -> World {
        let settings = ServerSettings {
            // Short enough for a script to reach them.
            tls_handshake_timeout: 5.0,
            ..ServerSettings::default()
        };
        let clock = ManualClock::new(1000.0);
        let driver = match Driver::new(settings, Arc::new(clock.clone())) {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        let mut world = World {
            driver,
            app: Harness,
            clock,
            clients: Vec::new(),
            registered: HashMap::new(),
            closed: HashSet::new(),
            io: Vec::new(),
        };
        for _ in 0..CONNECTIONS {
            let (ours, theirs) = UnixStream::pair().expect("socketpair");
            theirs.set_nonblocking(true).expect("nonblocking");
            // `adopt` takes an accepted fd: non-blocking already.
            ours.set_nonblocking(true).expect("nonblocking");
            let id = world.driver.adopt(OwnedFd::from(ours), None, false);
            world.clients.push(Client {
                sock: Some(theirs),
                id,
                received: Vec::new(),
            });
            world.pump();
        }
        world
    }

    /// Apply reactor updates (checking them) and run the application.
    fn pump(&mut self) {
        loop {
            self.driver.take_io(&mut self.io);
            for update in self.io.drain(..) {
                match update {
                    IoUpdate::Register { fd, token, .. } => {
                        let old = self.registered.insert(fd, token.to_usize());
                        assert!(old.is_none(), "fd {fd} registered twice");
                    }
                    IoUpdate::Interest { fd, .. } => {
                        assert!(
                            self.registered.contains_key(&fd),
                            "interest of unknown fd {fd}"
                        );
                    }
                    IoUpdate::Deregister { fd } => {
                        self.registered.remove(&fd);
                    }
                    IoUpdate::Close { fd, stream } => {
                        assert!(
                            self.registered.remove(&fd).is_some(),
                            "close of unknown fd {fd}"
                        );
                        drop(stream);
                    }
                }
            }
            let Some(event) = self.driver.next_event() else {
                break;
            };
            let d = &mut self.driver;
            let mentioned = match &event {
                Event::Request { conn, .. }
                | Event::Body { conn, .. }
                | Event::Ended { conn, .. }
                | Event::Writable { conn, .. }
                | Event::Pipelined { conn }
                | Event::WsInput { conn, .. } => Some(*conn),
                _ => None,
            };
            if let Some(conn) = mentioned {
                assert!(!self.closed.contains(&conn), "an event after Closed");
            }
            match event {
                Event::Request { conn, head, ws } => self.app.request(d, conn, head, ws.is_some()),
                Event::Body { conn, ex } => {
                    if let Some((chunk, more)) = d.take_body(conn) {
                        if let Some(x) = d.exchange_app(conn, ex) {
                            x.body += chunk.len();
                        }
                        if more {
                            self.app.read(d, conn, ex);
                        } else {
                            let n = d.exchange_app(conn, ex).map_or(0, |x| x.body).to_string();
                            respond(d, conn, ex, n.as_bytes());
                        }
                    }
                }
                Event::Writable { conn, ex } => self.app.stream(d, conn, ex),
                Event::Pipelined { conn } => d.resume(conn),
                Event::WsInput { conn, ex } => self.app.ws(d, conn, ex),
                Event::Closed { conn, .. } => {
                    self.closed.insert(conn);
                }
                Event::Ended { .. } | Event::Wakeup { .. } | Event::Log(_) => {}
            }
        }
    }

    fn ready(&mut self, k: usize, readable: bool, writable: bool) {
        let Some(id) = self.clients[k].id else {
            return;
        };
        if self.closed.contains(&id) {
            return;
        }
        let token = loop_server::Token::Conn(id).to_usize();
        self.driver.ready(token, readable, writable);
        self.pump();
    }

    fn read_client(&mut self, k: usize) {
        let client = &mut self.clients[k];
        let Some(sock) = client.sock.as_mut() else {
            return;
        };
        let mut buf = [0u8; 65536];
        loop {
            match sock.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => client.received.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => return,
            }
        }
    }

    fn end_of_tick(&mut self) {
        if self.driver.take_flush_request() {
            self.driver.flush_corked();
        }
        self.pump();
    }

    fn advance(&mut self, seconds: f64) {
        self.clock.advance(seconds);
        self.driver.sweep();
        self.pump();
        self.driver.resume_listeners();
        self.pump();
    }
}

/// A response head's `connection: close`, or a WebSocket close frame:
/// nothing may follow them on the wire. The check follows the responses
/// (content-length or chunked) and, after a `101`, the frames.
fn check_nothing_after_the_end(wire: &[u8]) {
    let mut at = 0;
    loop {
        let rest = &wire[at..];
        let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") else {
            return;
        };
        let head = String::from_utf8_lossy(&rest[..end]).to_ascii_lowercase();
        let mut next = at + end + 4;
        if head.starts_with("http/1.1 101") {
            return check_frames(&wire[next..]);
        }
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|v| v.trim().parse::<usize>().ok());
        if let Some(length) = length {
            next += length;
        } else if head.contains("transfer-encoding: chunked") {
            match chunked_end(&wire[next..]) {
                Some(n) => next += n,
                None => return,
            }
        } else if !head.starts_with("http/1.1 100") {
            return;
        }
        if head.contains("\r\nconnection: close") && next <= wire.len() {
            assert_eq!(
                &wire[next..],
                b"",
                "bytes after a connection: close response"
            );
        }
        if next >= wire.len() {
            return;
        }
        at = next;
    }
}

/// Where a chunked body ends, if it is all there.
fn chunked_end(body: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let line_end = body[at..].windows(2).position(|w| w == b"\r\n")?;
        let size =
            usize::from_str_radix(std::str::from_utf8(&body[at..at + line_end]).ok()?, 16).ok()?;
        at += line_end + 2;
        if size == 0 {
            return (body.len() >= at + 2).then_some(at + 2);
        }
        at += size + 2;
        if at > body.len() {
            return None;
        }
    }
}

fn check_frames(wire: &[u8]) {
    let mut at = 0;
    while at + 2 <= wire.len() {
        let opcode = wire[at] & 0x0f;
        let (len, header) = match wire[at + 1] & 0x7f {
            126 if at + 4 <= wire.len() => (
                usize::from(u16::from_be_bytes([wire[at + 2], wire[at + 3]])),
                4,
            ),
            127 if at + 10 <= wire.len() => {
                let mut n = [0u8; 8];
                n.copy_from_slice(&wire[at + 2..at + 10]);
                (u64::from_be_bytes(n) as usize, 10)
            }
            126 | 127 => return,
            n => (usize::from(n), 2),
        };
        at += header + len;
        if opcode == 0x8 && at <= wire.len() {
            assert_eq!(&wire[at..], b"", "frames after the server's close frame");
            return;
        }
    }
}

/// Run one script; what each client received.
pub fn run(script: &[u8]) -> Vec<Vec<u8>> {
    let mut world = World::new();
    let mut ops = script.iter().copied();
    while let Some(op) = ops.next() {
        let k = usize::from(op >> 5) % CONNECTIONS;
        match op & 0x0f {
            // Send a piece, cut at a scripted point (the rest follows at
            // the next send of the same piece's index).
            0..=3 => {
                let piece = PIECES[usize::from(ops.next().unwrap_or(0)) % PIECES.len()];
                let cut = usize::from(ops.next().unwrap_or(255)).min(piece.len());
                if let Some(sock) = world.clients[k].sock.as_mut() {
                    let _ = sock.write_all(&piece[..cut]);
                    let _ = sock.write_all(&piece[cut..]);
                }
                world.ready(k, true, false);
            }
            4 => {
                // Raw bytes from the script.
                let n = usize::from(ops.next().unwrap_or(0) % 64);
                let raw: Vec<u8> = ops.by_ref().take(n).collect();
                if let Some(sock) = world.clients[k].sock.as_mut() {
                    let _ = sock.write_all(&raw);
                }
                world.ready(k, true, false);
            }
            5 => world.ready(k, true, true),
            6 => world.end_of_tick(),
            7 => {
                let seconds = f64::from(ops.next().unwrap_or(1)) / 8.0;
                world.advance(seconds);
            }
            8 => world.read_client(k),
            9 => {
                if let Some(sock) = world.clients[k].sock.as_ref() {
                    let _ = sock.shutdown(std::net::Shutdown::Write);
                }
                world.ready(k, true, false);
            }
            10 => {
                // Close (with unread input: a reset).
                world.read_client(k);
                world.clients[k].sock = None;
                world.ready(k, true, true);
            }
            11 => {
                world.driver.drain(op & 0x10 != 0);
                world.pump();
            }
            _ => {}
        }
    }
    // The end: clients read everything, the server drains, time passes
    // every deadline.
    world.driver.drain(false);
    world.pump();
    for _ in 0..40 {
        world.end_of_tick();
        for k in 0..CONNECTIONS {
            world.read_client(k);
            world.ready(k, true, true);
        }
        world.advance(5.0);
    }
    for client in &world.clients {
        check_nothing_after_the_end(&client.received);
    }
    assert_eq!(
        world.driver.open_connections(),
        0,
        "a connection never ended"
    );
    assert_eq!(
        world.driver.registered(),
        0,
        "a connection left in the registry"
    );
    assert!(world.registered.is_empty(), "an fd left in the reactor");
    world.clients.into_iter().map(|c| c.received).collect()
}
