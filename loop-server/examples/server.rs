//! The pure-Rust server: `ferroloop.serve()`'s driver, protocol kinds and
//! settings (the same command-line flags), with a Rust handler in place of
//! the ASGI app. HTTP/1.1 and WebSocket, plain or over TLS
//! (`--ssl-certfile`/`--ssl-keyfile`). It is the ceiling the HTTP
//! benchmark reports: everything ferroloop's server does but the Python.
//!
//! ```text
//! cargo run --release -p loop-server --example server -- [--host H] [--port P]
//!     [--ssl-certfile CERT --ssl-keyfile KEY] [any ferroloop server flag]
//! ```
//!
//! Prints `listening on ADDR` once ready. The routes are the HTTP
//! benchmark's app's (`bench/http_app.py`):
//!
//! - `GET|HEAD /`: `200 text/plain` "Hello, World!"; a request body (any
//!   method) is read first.
//! - `GET /json`: `200 application/json`, 51 bytes.
//! - `POST /post`: the body's length as text when it is 4,096 bytes, else
//!   `400`.
//! - `GET /__count`: how many other requests were served.
//! - a WebSocket upgrade on any path: accepted, every message echoed.
//! - `/ws` without an upgrade: `426`; anything else: `404`.
//!
//! `tests/example_*.rs` include this file and run [`run`] on a thread.

use loop_http::{BodyRead, RequestHead, ResponsePart};
use loop_server::runner::{Handler, Runner};
use loop_server::{App, ConnId, Driver, ExchangeId, Log, Monotonic, ServerSettings, WsNext};
use std::io::{self, Write};
use std::net::TcpListener;
use std::sync::Arc;

const HELLO: &[u8] = b"Hello, World!";
const JSON: &[u8] = br#"{"message": "Hello, World!", "items": [1, 2, 3, 4]}"#;
const POST_SIZE: usize = 4096;

fn main() -> io::Result<()> {
    // The command line is `ferroloop`'s, with no app to name.
    let args = std::iter::once("server:app".into()).chain(std::env::args_os().skip(1));
    let parsed = match loop_cli::parse_values("server", args) {
        Ok(loop_cli::Command::Run(parsed)) => parsed,
        Ok(_) => return Ok(()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let settings = ServerSettings::read(&parsed.values).map_err(io::Error::other)?;
    let cli = loop_cli::Settings::from_values(parsed.app, &parsed.values);
    let listener = TcpListener::bind((cli.host.as_str(), cli.port))?;
    println!("listening on {}", listener.local_addr()?);
    io::stdout().flush()?;
    run(listener, settings)
}

/// Serve `listener` with `settings` on this thread, forever.
pub fn run(listener: TcpListener, settings: ServerSettings) -> io::Result<()> {
    let driver = Driver::new(settings, Arc::new(Monotonic)).map_err(io::Error::other)?;
    let mut runner = Runner::new(driver, Hello::default())?;
    runner.listen(listener, true)?;
    runner.run()
}

/// The application.
#[derive(Default)]
pub struct Hello {
    calls: u64,
}

/// What a request asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    Hello,
    Json,
    Post,
    Count,
    NotFound,
    WsOnly,
    WebSocket,
}

/// One exchange: its route and the body read so far.
pub struct Request {
    route: Route,
    body: usize,
}

impl App for Hello {
    type Conn = ();
    type Exchange = Request;
}

fn route(head: &RequestHead, ws: bool) -> Route {
    match (head.method(), head.path()) {
        _ if ws => Route::WebSocket,
        (_, b"/") => Route::Hello,
        (b"GET", b"/json") => Route::Json,
        (b"POST", b"/post") => Route::Post,
        (b"GET", b"/__count") => Route::Count,
        (_, b"/ws") => Route::WsOnly,
        _ => Route::NotFound,
    }
}

fn respond(
    driver: &mut Driver<Hello>,
    conn: ConnId,
    ex: ExchangeId,
    status: u16,
    headers: &[(&[u8], &[u8])],
    body: &[u8],
) {
    let length = body.len().to_string();
    let mut all: Vec<(&[u8], &[u8])> = headers.to_vec();
    all.push((b"content-length", length.as_bytes()));
    let start = ResponsePart::Start {
        status,
        headers: all,
        trailers: false,
    };
    // A refused part means the client is gone: nothing more to do.
    let _ = driver.send(conn, ex, start);
    let end: ResponsePart<'_, Vec<(&[u8], &[u8])>> = ResponsePart::Body {
        data: body,
        more: false,
    };
    let _ = driver.send(conn, ex, end);
}

impl Hello {
    /// Read what body there is; answer once it is all in.
    fn read(&mut self, driver: &mut Driver<Self>, conn: ConnId, ex: ExchangeId) {
        loop {
            match driver.read_body(conn, ex) {
                BodyRead::Data(chunk, more) => {
                    if let Some(req) = driver.exchange_app(conn, ex) {
                        req.body += chunk.len();
                    }
                    if !more {
                        return self.answer(driver, conn, ex);
                    }
                }
                // `Event::Body` follows.
                BodyRead::Wait { .. } => return,
                BodyRead::Disconnect => return,
            }
        }
    }

    fn answer(&mut self, driver: &mut Driver<Self>, conn: ConnId, ex: ExchangeId) {
        let Some(req) = driver.exchange_app(conn, ex) else {
            return;
        };
        let (route, body) = (req.route, req.body);
        const TEXT: (&[u8], &[u8]) = (b"content-type", b"text/plain");
        if route != Route::Count {
            self.calls += 1;
        }
        match route {
            Route::Hello => respond(driver, conn, ex, 200, &[TEXT], HELLO),
            Route::Json => respond(
                driver,
                conn,
                ex,
                200,
                &[(b"content-type", b"application/json")],
                JSON,
            ),
            Route::Post if body == POST_SIZE => respond(
                driver,
                conn,
                ex,
                200,
                &[TEXT],
                POST_SIZE.to_string().as_bytes(),
            ),
            Route::Post => respond(driver, conn, ex, 400, &[TEXT], body.to_string().as_bytes()),
            Route::Count => respond(
                driver,
                conn,
                ex,
                200,
                &[TEXT],
                self.calls.to_string().as_bytes(),
            ),
            Route::WsOnly => respond(
                driver,
                conn,
                ex,
                426,
                &[
                    TEXT,
                    (b"upgrade", b"websocket"),
                    (b"connection", b"upgrade"),
                ],
                b"this path speaks WebSocket only",
            ),
            Route::NotFound => respond(driver, conn, ex, 404, &[TEXT], b"Not Found"),
            Route::WebSocket => {}
        }
    }

    /// Echo every message the session has; wait for more.
    fn echo(&mut self, driver: &mut Driver<Self>, conn: ConnId, ex: ExchangeId) {
        loop {
            match driver.ws_next(conn, ex, true) {
                WsNext::Message(message) => {
                    let _ = driver.ws_send(conn, ex, message.kind, &message.data);
                    driver.ws_recycle(conn, message.data);
                }
                WsNext::Wait => return driver.ws_wait(conn, ex, true),
                // The closing handshake is the session's own.
                WsNext::Ended(..) => return,
            }
        }
    }
}

impl Handler for Hello {
    fn request(
        &mut self,
        driver: &mut Driver<Self>,
        conn: ConnId,
        head: RequestHead,
        ws: Option<Vec<String>>,
    ) {
        let route = route(&head, ws.is_some());
        let Ok((ex, _)) = driver.begin(conn, head, Request { route, body: 0 }) else {
            return;
        };
        if route == Route::WebSocket {
            if driver.ws_accept(conn, ex, None, &[]).is_ok() {
                self.echo(driver, conn, ex);
            }
            return;
        }
        self.read(driver, conn, ex);
    }

    fn body(&mut self, driver: &mut Driver<Self>, conn: ConnId, ex: ExchangeId) {
        let Some((chunk, more)) = driver.take_body(conn) else {
            return;
        };
        if let Some(req) = driver.exchange_app(conn, ex) {
            req.body += chunk.len();
        }
        if more {
            self.read(driver, conn, ex);
        } else {
            self.answer(driver, conn, ex);
        }
    }

    fn ws_input(&mut self, driver: &mut Driver<Self>, conn: ConnId, ex: ExchangeId) {
        self.echo(driver, conn, ex);
    }

    fn log(&mut self, line: Log) {
        if let Log::Warning(text) = line {
            eprintln!("WARNING: {text}");
        }
    }
}
