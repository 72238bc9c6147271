//! The WSS half of the example: `/ws` answers a WebSocket upgrade with
//! loop-ws' sans-IO handshake (as ferroloop's server does: loop-ws decides,
//! loop-http writes the `101` or the refusal), then runs a loop-ws
//! [`Connection`] over the same TLS layer, echoing every message.
//!
//! No timers here (the HTTP half has none either): pings are off and the
//! close timeout is not enforced. loop-ws' `echo` example runs both from
//! the reactor's sweep.

use std::io;
use std::net::TcpStream;

use loop_core::clock::monotonic;
use loop_core::executor::Async;
use loop_http::{Phase, ResponsePart, ServerConnection, Version};
use loop_transports::ByteLayer;
use loop_ws::handshake::{check_request, is_websocket_upgrade};
use loop_ws::{Config, Connection, State};

/// The path that speaks WebSocket.
const WS_PATH: &[u8] = b"/ws";

/// Every limit at loop-ws' defaults; no pings (see the module's note).
pub fn config() -> Config {
    Config {
        ping_interval: None,
        ping_timeout: None,
        ..Config::default()
    }
}

/// Is request `id` for the WebSocket path?
pub fn is_ws_path(conn: &ServerConnection, id: u64) -> bool {
    conn.current(id)
        .is_some_and(|ex| ex.head().path() == WS_PATH)
}

/// Answer request `id` (for [`WS_PATH`]) into `out`: a `101` and the
/// session, or a refusal (400 for a bad handshake, 426 for a request that
/// is no upgrade, as loop-ws says) and `None`.
pub fn handshake(
    conn: &mut ServerConnection,
    id: u64,
    out: &mut Vec<u8>,
    date: &[u8],
    ws: &Config,
) -> io::Result<Option<Connection>> {
    let Some(ex) = conn.current(id) else {
        return Ok(None);
    };
    let head = ex.head();
    let decision = if is_websocket_upgrade(head.headers()) {
        let http11 = head.version == Version::Http11;
        check_request(head.method(), http11, head.headers())
            .map_err(|r| (r.status, r.reason, r.headers))
    } else {
        let upgrade: &[(&str, &str)] = &[("upgrade", "websocket")];
        Err((426, "this path speaks WebSocket only", upgrade))
    };
    let now = monotonic();
    let server = Some(super::SERVER);
    match decision {
        Ok(offer) => {
            let accept = offer.accept(ws, None);
            let headers = accept
                .headers
                .iter()
                .map(|(n, v)| (n.as_bytes(), v.as_bytes()));
            let start = ResponsePart::Start {
                status: 101,
                headers,
                trailers: false,
            };
            conn.send(id, out, start, Some(date), server, now)
                .map_err(io::Error::other)?;
            end(conn, id, out, b"", date, now)?;
            if conn.phase() != Phase::Upgraded {
                return Ok(None);
            }
            let mut session = Connection::new(ws, accept.deflate, now);
            // Frames that came with the request are the session's first input.
            session.receive(&conn.take_unparsed(), now);
            Ok(Some(session))
        }
        Err((status, reason, extra)) => {
            let length = reason.len().to_string();
            let mut headers: Vec<(&[u8], &[u8])> = vec![
                (b"content-type", b"text/plain"),
                (b"content-length", length.as_bytes()),
            ];
            headers.extend(extra.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
            let start = ResponsePart::Start {
                status,
                headers,
                trailers: false,
            };
            conn.send(id, out, start, Some(date), server, now)
                .map_err(io::Error::other)?;
            end(conn, id, out, reason.as_bytes(), date, now)?;
            Ok(None)
        }
    }
}

fn end(
    conn: &mut ServerConnection,
    id: u64,
    out: &mut Vec<u8>,
    data: &[u8],
    date: &[u8],
    now: f64,
) -> io::Result<()> {
    let body = ResponsePart::Body::<[(&[u8], &[u8]); 0]> { data, more: false };
    conn.send(id, out, body, Some(date), Some(super::SERVER), now)
        .map(drop)
        .map_err(io::Error::other)
}

/// The session after the `101`: decrypt, feed loop-ws, echo what it
/// decoded, encrypt its output (echoes, pongs, the close reply) into one
/// write; once the closing handshake is done, `close_notify` and close.
pub async fn session(
    stream: &Async<TcpStream>,
    layer: &mut dyn ByteLayer,
    mut ws: Connection,
    buf: &mut [u8],
) -> io::Result<()> {
    let mut plain = Vec::with_capacity(buf.len());
    let mut out = Vec::with_capacity(4096);
    let mut wire = Vec::with_capacity(4096);
    let mut eof = false;
    loop {
        while let Some(m) = ws.next_message() {
            // Refused only once closing: then there is nobody to echo to.
            let _ = ws.send(m.kind, &m.data, &mut out);
            ws.recycle(m.data);
        }
        ws.take_output(&mut out);
        // After the peer's EOF nothing more can arrive: finish either way.
        let closed = ws.state() == State::Closed || eof;
        super::flush(stream, layer, &mut out, &mut wire, closed).await?;
        if closed {
            return Ok(());
        }
        if super::read_plain(stream, layer, buf, &mut plain).await? {
            ws.receive(&plain, monotonic());
        } else {
            ws.receive_eof();
            eof = true;
        }
    }
}
