//! An HTTPS and WSS server in pure Rust: loop-core's executor for the
//! sockets, loop-tls' [`TlsSession`] as the byte-stream layer (through the
//! [`ByteLayer`] seam of loop-transports, as ferroloop's ASGI server plugs
//! it in), loop-http's [`ServerConnection`] for HTTP/1.1 (keep-alive,
//! pipelining, error responses), loop-ws for WebSocket (`wss.rs`). Every
//! request gets `200 text/plain "Hello, World!"`, except `/ws`: a WebSocket
//! upgrade there is accepted and every message echoed as it came (text as
//! text, binary as binary). The TLS connection ends with `close_notify`.
//!
//! `cargo run --release -p loop-tls --example https -- CERTFILE KEYFILE [ADDR]`
//! (default `127.0.0.1:8443`); prints `listening on ADDR` once ready.
//! `tests/https_example.rs` includes this file and runs [`run`] on a
//! thread against a rustls client.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;

use loop_core::executor::{Async, Handle, Runtime};
use loop_http::{BodyFraming, ConnectionConfig, DateCache, Phase, ServerConnection, Step};
use loop_tls::{TlsConfig, TlsSession, TlsSettings};
use loop_transports::{ByteLayer, Eof, LayerError};

#[path = "../../../loop-http/examples/shared/exchange.rs"]
mod exchange;
mod wss;
pub(crate) use exchange::SERVER;
use exchange::{read_to_end, respond};

const READ_SIZE: usize = 64 * 1024;

#[allow(dead_code)] // the test includes this file and calls `run` only
fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = || io::Error::other("usage: https CERTFILE KEYFILE [ADDR]");
    let certfile = PathBuf::from(args.next().ok_or_else(usage)?);
    let keyfile = PathBuf::from(args.next().ok_or_else(usage)?);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8443".into());
    let config = tls_config(certfile, keyfile)?;
    let listener = TcpListener::bind(&addr)?;
    println!("listening on {}", listener.local_addr()?);
    io::stdout().flush()?;
    run(listener, config)
}

/// The certificate and key, checked before anything is served: a bad file
/// fails here with a message naming it.
pub fn tls_config(certfile: PathBuf, keyfile: PathBuf) -> io::Result<TlsConfig> {
    let settings = TlsSettings {
        certfile,
        keyfile,
        password: None,
        ca_certs: None,
        client_auth: Default::default(),
        crls: Vec::new(),
        min_version: Default::default(),
        ciphers: None,
        sni: Vec::new(),
        max_handshake_bytes: TlsSettings::DEFAULT_MAX_HANDSHAKE_BYTES,
    };
    TlsConfig::load(&settings).map_err(io::Error::other)
}

/// The adapter: a TLS session is a [`ByteLayer`] (its methods mirror the
/// trait's; only the error type differs).
struct Tls(TlsSession);

impl ByteLayer for Tls {
    fn decode(&mut self, wire: &[u8], app: &mut Vec<u8>) -> Result<(), LayerError> {
        self.0
            .decode(wire, app)
            .map_err(|e| Box::new(e) as LayerError)
    }
    fn encode(&mut self, app: &[u8], wire: &mut Vec<u8>) -> Result<(), LayerError> {
        self.0
            .encode(app, wire)
            .map_err(|e| Box::new(e) as LayerError)
    }
    fn take_output(&mut self, wire: &mut Vec<u8>) {
        self.0.take_output(wire);
    }
    fn wants_read(&self) -> bool {
        self.0.wants_read()
    }
    fn close(&mut self, wire: &mut Vec<u8>) {
        self.0.close(wire);
    }
    fn eof(&mut self) -> Eof {
        match self.0.eof() {
            loop_tls::Eof::Clean => Eof::Clean,
            loop_tls::Eof::Truncated => Eof::Truncated,
        }
    }
}

/// Serve `listener` forever on a runtime of this thread.
pub fn run(listener: TcpListener, tls: TlsConfig) -> io::Result<()> {
    let rt = Runtime::new()?;
    let handle = rt.handle();
    let config = Arc::new(ConnectionConfig::default());
    let ws = Arc::new(wss::config());
    rt.block_on(async move {
        let listener = Async::new(listener)?;
        loop {
            let (stream, _peer) = listener.read_with(|l| l.accept()).await?;
            stream.set_nodelay(true)?;
            // A session that cannot start fails only this connection.
            match tls.session() {
                Ok(session) => {
                    let layer = Box::new(Tls(session));
                    let configs = (config.clone(), ws.clone());
                    spawn_connection(&handle, Async::new(stream)?, layer, configs);
                }
                Err(e) => eprintln!("tls: {e}"),
            }
        }
    })
}

fn spawn_connection(
    handle: &Handle,
    stream: Async<TcpStream>,
    layer: Box<dyn ByteLayer>,
    configs: (Arc<ConnectionConfig>, Arc<loop_ws::Config>),
) {
    handle
        .spawn(async move {
            if let Err(e) = serve(stream, layer, configs).await {
                // Failed handshakes and resets are the client's business.
                if e.kind() != io::ErrorKind::ConnectionReset {
                    eprintln!("connection: {e}");
                }
            }
        })
        .detach();
}

/// One connection: decrypt what arrives, answer every complete request in
/// it, encrypt the answers (with whatever the session must send on its own:
/// handshake, tickets, alerts) into one write, repeat; after a `101`, the
/// WebSocket session takes the stream and the layer.
async fn serve(
    stream: Async<TcpStream>,
    mut layer: Box<dyn ByteLayer>,
    (config, ws_config): (Arc<ConnectionConfig>, Arc<loop_ws::Config>),
) -> io::Result<()> {
    let mut conn = ServerConnection::new(config, 0.0);
    let mut date = DateCache::new();
    let mut buf = vec![0u8; READ_SIZE];
    let mut plain_in = Vec::with_capacity(READ_SIZE);
    let mut out = Vec::with_capacity(4096);
    let mut wire = Vec::with_capacity(4096);
    let mut active: Option<u64> = None;
    loop {
        let next = http(&mut conn, &mut active, &mut out, &mut date, &ws_config)?;
        if matches!(next, Next::Over) {
            return Ok(());
        }
        let closing = matches!(conn.phase(), Phase::Closing | Phase::Closed);
        flush(&stream, layer.as_mut(), &mut out, &mut wire, closing).await?;
        if let Next::Upgrade(ws) = next {
            return wss::session(&stream, layer.as_mut(), *ws, &mut buf).await;
        }
        if closing {
            return Ok(()); // dropping the stream closes it
        }
        if !read_plain(&stream, layer.as_mut(), &mut buf, &mut plain_in).await? {
            return Ok(());
        }
        if !plain_in.is_empty() {
            conn.receive(&plain_in);
        }
    }
}

/// Encrypt `out` (then clear it) with what the session has to send on its
/// own, and `close_notify` when `closing`; write it all.
/// `wire` is scratch space, kept so its allocation is reused.
pub(crate) async fn flush(
    stream: &Async<TcpStream>,
    layer: &mut dyn ByteLayer,
    out: &mut Vec<u8>,
    wire: &mut Vec<u8>,
    closing: bool,
) -> io::Result<()> {
    wire.clear();
    if !out.is_empty() {
        layer.encode(out, wire).map_err(io::Error::other)?;
        out.clear();
    }
    layer.take_output(wire);
    if closing {
        layer.close(wire);
    }
    write_all(stream, wire).await
}

/// Read once and decrypt into `plain` (cleared first): false on a clean
/// EOF (after `close_notify`), an error on a truncated one or on input the
/// session refuses (its alert written first).
pub(crate) async fn read_plain(
    stream: &Async<TcpStream>,
    layer: &mut dyn ByteLayer,
    buf: &mut [u8],
    plain: &mut Vec<u8>,
) -> io::Result<bool> {
    let n = stream.read_with(|mut s| s.read(buf)).await?;
    if n == 0 {
        return match layer.eof() {
            Eof::Clean => Ok(false),
            Eof::Truncated => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "EOF without close_notify",
            )),
        };
    }
    plain.clear();
    if let Err(e) = layer.decode(&buf[..n], plain) {
        let mut wire = Vec::new();
        layer.take_output(&mut wire);
        let _ = write_all(stream, &wire).await;
        return Err(io::Error::other(e));
    }
    Ok(true)
}

/// What HTTP wants next.
enum Next {
    /// Waiting for more input (after writing what `out` holds).
    Wait,
    /// The exchange is over (the peer went away mid-body).
    Over,
    /// A `101` is in `out`: WebSocket from here on.
    Upgrade(Box<loop_ws::Connection>),
}

/// Run HTTP over the decrypted input until it waits, ends or upgrades.
fn http(
    conn: &mut ServerConnection,
    active: &mut Option<u64>,
    out: &mut Vec<u8>,
    date: &mut DateCache,
    ws: &loop_ws::Config,
) -> io::Result<Next> {
    loop {
        let step = conn.poll();
        let idle = matches!(step, Step::Wait);
        match step {
            Step::Wait => {}
            Step::Request(head) => {
                let id = conn.begin_request(head);
                if !wss::is_ws_path(conn, id) {
                    *active = Some(id);
                } else if let Some(session) = wss::handshake(conn, id, out, date.get(), ws)? {
                    return Ok(Next::Upgrade(Box::new(session)));
                }
            }
            Step::Deliver => conn.reader_left(),
            Step::Fail(status) => {
                conn.fail(status, out, Some(date.get()), Some(SERVER), 0.0);
            }
            Step::Close => {
                conn.close(0.0);
            }
        }
        if let Some(id) = *active {
            let bodiless = conn
                .current(id)
                .is_some_and(|ex| ex.head().body == BodyFraming::Empty);
            let read = if bodiless {
                Some(true)
            } else {
                read_to_end(conn, id, out)
            };
            match read {
                Some(true) => {
                    respond(conn, id, out, date.get())?;
                    *active = None;
                    continue;
                }
                Some(false) => {}
                None => return Ok(Next::Over),
            }
        }
        if idle {
            return Ok(Next::Wait);
        }
    }
}

pub(crate) async fn write_all(stream: &Async<TcpStream>, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let n = stream.write_with(|mut s| s.write(data)).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        data = &data[n..];
    }
    Ok(())
}
