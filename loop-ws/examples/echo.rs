//! A WebSocket echo server in pure Rust, stacked the way ferroloop's ASGI
//! server is: loop-transports' [`Driver`] runs the sockets on loop-core's
//! reactor; loop-http's [`ServerConnection`] owns the connection until the
//! `101` and serializes every response (101, 400, 426); loop-ws decides the
//! handshake and then runs the session on the stream and the bytes HTTP
//! had not parsed. Every message is sent back as it came (permessage-deflate
//! negotiated when offered); keepalive pings and every limit are on.
//!
//! `cargo run --release -p loop-ws --example echo -- [ADDR]` (default
//! `127.0.0.1:9001`); prints `listening on ADDR` once ready.
//! `tests/echo_example.rs` includes this file and runs [`run`] on a thread.

use std::cell::RefCell;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Duration;

use loop_core::clock::monotonic;
use loop_http::{
    ConnectionConfig, Phase as HttpPhase, ResponsePart, ServerConnection, Step, Version,
};
use loop_transports::listener::DEFAULT_ACCEPT_BATCH;
use loop_transports::socket::{self, ListenOptions};
use loop_transports::{Driver, Error, IoFd, ListenerCore, StreamConfig, StreamProtocol, Transport};
use loop_ws::handshake::{check_request, is_websocket_upgrade};
use loop_ws::{Config, Connection, State, TimerAction};

/// How often sessions' deadlines (pings, close timeouts, HTTP timeouts)
/// are checked.
const SWEEP: Duration = Duration::from_millis(250);

fn main() -> io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9001".into());
    let addr: SocketAddr = addr.parse().map_err(io::Error::other)?;
    run(addr, |local| {
        println!("listening on {local}");
        let _ = io::stdout().flush();
    })
}

/// Serve on `addr` forever; `ready` gets the bound address.
pub fn run(addr: SocketAddr, ready: impl FnOnce(SocketAddr)) -> io::Result<()> {
    let fd = socket::tcp_listen(addr, &ListenOptions::default()).map_err(io::Error::other)?;
    let listener =
        ListenerCore::new(IoFd::owned(fd), DEFAULT_ACCEPT_BATCH).map_err(io::Error::other)?;
    let local = listener
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .ok_or_else(|| io::Error::other("no local address"))?;
    let mut driver = Driver::new(64 * 1024).map_err(io::Error::other)?;
    let sessions: Rc<RefCell<Vec<Weak<RefCell<Session>>>>> = Rc::default();
    let http = Arc::new(ConnectionConfig::default());
    let ws = Rc::new(Config::default());
    let registry = Rc::clone(&sessions);
    driver
        .listen(listener, StreamConfig::default(), move |_peer| {
            let session = Rc::new(RefCell::new(Session {
                transport: None,
                phase: Phase::Http(ServerConnection::new(Arc::clone(&http), monotonic())),
                ws: Rc::clone(&ws),
                write_paused: false,
            }));
            registry.borrow_mut().push(Rc::downgrade(&session));
            Box::new(Echo(session))
        })
        .map_err(io::Error::other)?;
    ready(local);
    let mut last_sweep = monotonic();
    loop {
        driver.turn(Some(SWEEP)).map_err(io::Error::other)?;
        let now = monotonic();
        if now - last_sweep >= SWEEP.as_secs_f64() {
            last_sweep = now;
            sessions.borrow_mut().retain(|weak| match weak.upgrade() {
                Some(session) => {
                    session.borrow_mut().on_timer(now);
                    true
                }
                None => false,
            });
        }
    }
}

/// The protocol the driver calls; the session is shared with the sweep.
struct Echo(Rc<RefCell<Session>>);

enum Phase {
    Http(ServerConnection),
    Ws(Connection),
    Done,
}

struct Session {
    transport: Option<Transport>,
    phase: Phase,
    ws: Rc<Config>,
    /// The transport's buffer is above its high-water mark: stop reading,
    /// so a client that does not read cannot grow our output.
    write_paused: bool,
}

impl Session {
    fn write(&self, out: &[u8]) {
        if let (Some(t), false) = (&self.transport, out.is_empty()) {
            // An error means the connection is lost; `connection_lost` follows.
            let _ = t.write(out);
        }
    }

    fn close(&mut self) {
        if let Some(t) = &self.transport {
            t.close();
        }
        self.phase = Phase::Done;
    }

    /// Run HTTP until it waits, upgrades or closes.
    fn http(&mut self, now: f64) {
        let mut out = Vec::new();
        loop {
            let Phase::Http(conn) = &mut self.phase else {
                return;
            };
            match conn.poll() {
                Step::Wait => break,
                Step::Request(head) => {
                    let id = conn.begin_request(head);
                    if let Some(ws) = self.handshake(id, &mut out, now) {
                        self.write(&out);
                        self.phase = Phase::Ws(ws);
                        return self.pump(&[]);
                    }
                }
                // Request bodies are not read here.
                Step::Deliver => conn.reader_left(),
                Step::Fail(status) => {
                    conn.fail(status, &mut out, None, None, now);
                }
                Step::Close => {
                    conn.close(now);
                }
            }
        }
        self.write(&out);
        if let Phase::Http(conn) = &mut self.phase {
            if matches!(conn.phase(), HttpPhase::Closing | HttpPhase::Closed) {
                self.close();
            }
        }
    }

    /// Answer request `id`: a `101` and the session, or a refusal.
    fn handshake(&mut self, id: u64, out: &mut Vec<u8>, now: f64) -> Option<Connection> {
        let Phase::Http(conn) = &mut self.phase else {
            return None;
        };
        let head = conn.current(id)?.head();
        let decision = if is_websocket_upgrade(head.headers()) {
            check_request(
                head.method(),
                head.version == Version::Http11,
                head.headers(),
            )
            .map_err(|r| (r.status, r.reason, r.headers))
        } else {
            Err((
                426,
                "this server speaks WebSocket only",
                &[("upgrade", "websocket")][..],
            ))
        };
        match decision {
            Ok(offer) => {
                let accept = offer.accept(&self.ws, None);
                let headers = accept
                    .headers
                    .iter()
                    .map(|(n, v)| (n.as_bytes(), v.as_bytes()));
                let start = ResponsePart::Start {
                    status: 101,
                    headers,
                    trailers: false,
                };
                conn.send(id, out, start, None, None, now).ok()?;
                let end = ResponsePart::Body::<[(&[u8], &[u8]); 0]> {
                    data: b"",
                    more: false,
                };
                conn.send(id, out, end, None, None, now).ok()?;
                if conn.phase() != HttpPhase::Upgraded {
                    return None;
                }
                let mut ws = Connection::new(&self.ws, accept.deflate, now);
                ws.receive(&conn.take_unparsed(), now);
                Some(ws)
            }
            Err((status, reason, extra)) => {
                let len = reason.len().to_string();
                let mut headers: Vec<(&[u8], &[u8])> = vec![
                    (b"content-type", b"text/plain"),
                    (b"content-length", len.as_bytes()),
                ];
                headers.extend(extra.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
                let start = ResponsePart::Start {
                    status,
                    headers,
                    trailers: false,
                };
                let _ = conn.send(id, out, start, None, None, now);
                let body = ResponsePart::Body::<[(&[u8], &[u8]); 0]> {
                    data: reason.as_bytes(),
                    more: false,
                };
                let _ = conn.send(id, out, body, None, None, now);
                None
            }
        }
    }

    /// Feed the session, echo what it decoded, write its output, and let
    /// its state decide reading and closing.
    fn pump(&mut self, data: &[u8]) {
        let Phase::Ws(ws) = &mut self.phase else {
            return;
        };
        let now = monotonic();
        if !data.is_empty() {
            ws.receive(data, now);
        }
        let mut out = Vec::new();
        while let Some(m) = ws.next_message() {
            // Refused only once closing: then there is nobody to echo to.
            let _ = ws.send(m.kind, &m.data, &mut out);
        }
        ws.take_output(&mut out);
        let (closed, wants_read) = (ws.state() == State::Closed, ws.wants_read());
        self.write(&out);
        if closed {
            return self.close();
        }
        if let Some(t) = &self.transport {
            if wants_read && !self.write_paused {
                t.resume_reading();
            } else {
                t.pause_reading();
            }
        }
    }

    fn on_timer(&mut self, now: f64) {
        match &mut self.phase {
            Phase::Http(conn) => {
                if conn.deadline().is_some_and(|d| now >= d) {
                    match conn.on_timer(now) {
                        loop_http::TimerAction::Nothing => {}
                        loop_http::TimerAction::Lose(_) => {
                            conn.lose();
                            self.close();
                        }
                        loop_http::TimerAction::Fail(status) => {
                            let mut out = Vec::new();
                            conn.fail(status, &mut out, None, None, now);
                            self.write(&out);
                            self.close();
                        }
                    }
                }
            }
            Phase::Ws(ws) => {
                if ws.next_deadline().is_some_and(|d| now >= d) {
                    match ws.on_timer(now) {
                        TimerAction::Nothing => {}
                        TimerAction::Output => self.pump(&[]),
                        TimerAction::Abort => {
                            if let Some(t) = &self.transport {
                                t.abort();
                            }
                            self.phase = Phase::Done;
                        }
                    }
                }
            }
            Phase::Done => {}
        }
    }
}

impl StreamProtocol for Echo {
    fn connection_made(&mut self, transport: &Transport) {
        self.0.borrow_mut().transport = Some(transport.clone());
    }

    fn data_received(&mut self, data: &[u8], _transport: &Transport) {
        let mut s = self.0.borrow_mut();
        let now = monotonic();
        match &mut s.phase {
            Phase::Http(conn) => {
                conn.receive(data);
                s.http(now);
            }
            Phase::Ws(_) => s.pump(data),
            Phase::Done => {}
        }
    }

    fn eof_received(&mut self, _transport: &Transport) -> bool {
        let mut s = self.0.borrow_mut();
        match &mut s.phase {
            Phase::Http(conn) => {
                conn.receive_eof();
                s.http(monotonic());
            }
            Phase::Ws(ws) => {
                ws.receive_eof();
                s.pump(&[]);
            }
            Phase::Done => {}
        }
        false
    }

    fn connection_lost(&mut self, _err: Option<Error>) {
        let mut s = self.0.borrow_mut();
        s.phase = Phase::Done;
        s.transport = None;
    }

    fn pause_writing(&mut self, transport: &Transport) {
        self.0.borrow_mut().write_paused = true;
        transport.pause_reading();
    }

    fn resume_writing(&mut self, _transport: &Transport) {
        let mut s = self.0.borrow_mut();
        s.write_paused = false;
        s.pump(&[]);
    }
}
