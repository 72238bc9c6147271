//! `cargo xtask tls-client`: the TLS handshake benchmark's load generator
//! (`bench/tls_suite.py`, defined in bench/README.md).
//!
//! ```text
//! xtask tls-client --addr HOST:PORT [--path /] [--conns 16] [--resume]
//!                  [--warmup 1] [--duration 5]
//! ```
//!
//! Each of `conns` threads loops: connect → TLS handshake → `GET PATH` with
//! `Connection: close` → read the whole response (to the server's EOF) →
//! close. `wrk` cannot measure full handshakes: it resumes the previous
//! session on every reconnect. So by default every connection shares one
//! rustls `ClientConfig` with `Resumption::disabled()` (each handshake is a
//! full one); with `--resume` each thread has its own config keeping
//! rustls' in-memory ticket cache (one shared cache would let 16 threads race
//! for the same single-use TLS 1.3 tickets), so after the first handshake of
//! each thread the rest resume.
//!
//! The server's certificate is *not* verified (a verifier that accepts
//! everything): the benchmark measures the server's cost per handshake, and
//! skipping the client's signature check keeps this client from capping it.
//! The handshake itself (key exchange, the server's signature, Finished)
//! is the real one on the server's side.
//!
//! Stdout is JSON lines: `measure_start`, `measure_end`, then `result`
//! with `handshakes` (completed with a 200 response inside the window),
//! `seconds`, `resumed` (of those, how many were resumptions), `total`
//! (over the whole run) and `errors`. Exits 1 when any connection failed.

mod verifier;

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rustls::client::Resumption;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, HandshakeKind, StreamOwned};

use crate::echo_client::{error_list, event, seconds};

const USAGE: &str = "usage: xtask tls-client --addr HOST:PORT [--path PATH] [--conns N] \
                     [--resume] [--warmup SECONDS] [--duration SECONDS]";

/// A server silent this long fails the connection.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
const KEPT_ERRORS: usize = 5;

struct Options {
    addr: SocketAddr,
    path: String,
    conns: usize,
    resume: bool,
    warmup: Duration,
    duration: Duration,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        path: "/".into(),
        conns: 16,
        resume: false,
        warmup: Duration::from_secs(1),
        duration: Duration::from_secs(5),
    };
    let mut addr = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--resume" {
            opts.resume = true;
            continue;
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}\n{USAGE}");
        match flag.as_str() {
            "--addr" => {
                let mut found = value.to_socket_addrs().map_err(|e| bad(&e))?;
                addr = Some(found.next().ok_or_else(|| bad(&"resolves to no address"))?);
            }
            "--path" => opts.path = value.clone(),
            "--conns" => opts.conns = value.parse().map_err(|e| bad(&e))?,
            "--warmup" => opts.warmup = seconds(value).map_err(|e| bad(&e))?,
            "--duration" => opts.duration = seconds(value).map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    opts.addr = addr.ok_or_else(|| format!("--addr is required\n{USAGE}"))?;
    if opts.conns == 0 {
        return Err(format!("--conns must be at least 1\n{USAGE}"));
    }
    Ok(opts)
}

/// What every thread adds to.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    handshakes: AtomicU64,
    resumed: AtomicU64,
    errors: Mutex<Vec<(String, u64)>>,
}

impl Shared {
    fn note_error(&self, what: String) {
        let Ok(mut errors) = self.errors.lock() else {
            return;
        };
        if let Some(entry) = errors.iter_mut().find(|(e, _)| *e == what) {
            entry.1 += 1;
        } else if errors.len() < KEPT_ERRORS {
            errors.push((what, 1));
        }
    }
}

fn config(resume: bool) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring's defaults support TLS 1.2 and 1.3")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier::AcceptAny(provider)))
        .with_no_client_auth();
    if !resume {
        config.resumption = Resumption::disabled();
    }
    Arc::new(config)
}

/// One connection, start to close: whether it was a resumption.
fn one(opts: &Options, config: &Arc<ClientConfig>, request: &[u8]) -> Result<bool, String> {
    let name = ServerName::IpAddress(opts.addr.ip().into());
    let conn = ClientConnection::new(config.clone(), name).map_err(|e| format!("client: {e}"))?;
    let tcp = TcpStream::connect(opts.addr).map_err(|e| format!("connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    tcp.set_read_timeout(Some(IO_TIMEOUT))
        .map_err(|e| format!("socket: {e}"))?;
    let mut tls = StreamOwned::new(conn, tcp);
    tls.write_all(request)
        .map_err(|e| format!("handshake/write: {e}"))?;
    let mut response = Vec::with_capacity(512);
    match tls.read_to_end(&mut response) {
        Ok(_) => {}
        // A server that closes without close_notify after a complete
        // `Connection: close` response is common (uvicorn, granian).
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && !response.is_empty() => {}
        Err(e) => return Err(format!("read: {e}")),
    }
    if !response.starts_with(b"HTTP/1.1 200") {
        let head = String::from_utf8_lossy(&response[..response.len().min(40)]).into_owned();
        return Err(format!("response not 200: {head:?}"));
    }
    Ok(tls.conn.handshake_kind() == Some(HandshakeKind::Resumed))
}

fn worker(opts: &Options, config: &Arc<ClientConfig>, shared: &Shared) {
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        opts.path, opts.addr
    );
    while !shared.stop.load(Ordering::Relaxed) {
        match one(opts, config, request.as_bytes()) {
            Ok(resumed) => {
                shared.handshakes.fetch_add(1, Ordering::Relaxed);
                if resumed {
                    shared.resumed.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) => {
                shared.note_error(e);
                // A failing server is not hammered in a tight loop.
                thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

pub fn main(args: &[String]) -> Result<(), String> {
    let opts = Arc::new(parse(args)?);
    let shared_config = config(opts.resume);
    let shared = Arc::new(Shared::default());
    let threads: Vec<_> = (0..opts.conns)
        .map(|_| {
            let config = if opts.resume {
                config(true)
            } else {
                shared_config.clone()
            };
            let (opts, shared) = (opts.clone(), shared.clone());
            thread::spawn(move || worker(&opts, &config, &shared))
        })
        .collect();
    thread::sleep(opts.warmup);
    let read = |s: &Shared| {
        (
            s.handshakes.load(Ordering::Relaxed),
            s.resumed.load(Ordering::Relaxed),
        )
    };
    event("measure_start");
    let (h0, r0, t0) = (read(&shared).0, read(&shared).1, Instant::now());
    thread::sleep(opts.duration);
    let (h1, r1) = read(&shared);
    let elapsed = t0.elapsed().as_secs_f64();
    event("measure_end");
    shared.stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let errors = shared.errors.lock().map(|e| e.clone()).unwrap_or_default();
    let failed: u64 = errors.iter().map(|(_, n)| n).sum();
    println!(
        "{{\"event\":\"result\",\"handshakes\":{},\"resumed\":{},\"seconds\":{elapsed},\
         \"total\":{},\"resume\":{},\"failed\":{failed},\"errors\":[{}]}}",
        h1 - h0,
        r1 - r0,
        read(&shared).0,
        opts.resume,
        error_list(&errors),
    );
    if failed > 0 {
        return Err(format!("{failed} connections failed"));
    }
    Ok(())
}
