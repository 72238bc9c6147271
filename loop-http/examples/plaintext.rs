//! The physical limit: a single-threaded HTTP/1.1 server that answers every
//! request with `200 text/plain "Hello, World!"`, using loop-core's executor
//! for I/O and this crate's [`ServerConnection`] for HTTP (keep-alive,
//! pipelining, 100-continue, error responses): the state machine ferroloop's
//! ASGI server runs, minus deadlines (nothing here drives a clock). The
//! benchmark runs it to report the pure-Rust ceiling under the Python
//! layers.
//!
//! `cargo run --release -p loop-http --example plaintext [ADDR]`
//! (default `127.0.0.1:8000`); prints `listening on ADDR` once ready.
//! `tests/plaintext_example.rs` includes this file and runs [`run`] on a
//! thread, so the test exercises exactly this code.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};

use loop_core::executor::{Async, Handle, Runtime};
use loop_http::{BodyFraming, ConnectionConfig, DateCache, Phase, ServerConnection, Step};
use std::sync::Arc;

#[path = "shared/exchange.rs"]
mod exchange;
use exchange::{read_to_end, respond, SERVER};

const READ_SIZE: usize = 64 * 1024;

fn main() -> io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8000".into());
    let listener = TcpListener::bind(&addr)?;
    println!("listening on {}", listener.local_addr()?);
    io::stdout().flush()?;
    run(listener)
}

/// Serve `listener` forever on a runtime of this thread.
pub fn run(listener: TcpListener) -> io::Result<()> {
    let rt = Runtime::new()?;
    let handle = rt.handle();
    let config = Arc::new(ConnectionConfig::default());
    rt.block_on(async move {
        let listener = Async::new(listener)?;
        loop {
            let (stream, _peer) = listener.read_with(|l| l.accept()).await?;
            stream.set_nodelay(true)?;
            spawn_connection(&handle, Async::new(stream)?, config.clone());
        }
    })
}

fn spawn_connection(handle: &Handle, stream: Async<TcpStream>, config: Arc<ConnectionConfig>) {
    handle
        .spawn(async move {
            if let Err(e) = serve(stream, config).await {
                if e.kind() != io::ErrorKind::ConnectionReset {
                    eprintln!("connection error: {e}");
                }
            }
        })
        .detach();
}

/// One connection: read, answer every complete request in the input (all
/// responses of a pipelined batch go out in one write), repeat.
async fn serve(stream: Async<TcpStream>, config: Arc<ConnectionConfig>) -> io::Result<()> {
    let mut conn = ServerConnection::new(config, 0.0);
    let mut date = DateCache::new();
    let mut buf = vec![0u8; READ_SIZE];
    let mut out = Vec::with_capacity(4096);
    // The request being served: its id, once its body is wanted.
    let mut active: Option<u64> = None;
    loop {
        loop {
            let step = conn.poll();
            let idle = matches!(step, Step::Wait);
            match step {
                Step::Wait => {}
                Step::Request(head) => active = Some(conn.begin_request(head)),
                // Taken below, with `read_body`, like any other body.
                Step::Deliver => conn.reader_left(),
                Step::Fail(status) => {
                    conn.fail(status, &mut out, Some(date.get()), Some(SERVER), 0.0);
                }
                Step::Close => {
                    conn.close(0.0);
                }
            }
            // The app: read the whole body (the bytes are not needed), then
            // answer; a pipelined request may follow at once.
            if let Some(id) = active {
                let bodiless = conn
                    .current(id)
                    .is_some_and(|ex| ex.head().body == BodyFraming::Empty);
                let read = if bodiless {
                    Some(true)
                } else {
                    read_to_end(&mut conn, id, &mut out)
                };
                match read {
                    Some(true) => {
                        respond(&mut conn, id, &mut out, date.get())?;
                        active = None;
                        continue;
                    }
                    Some(false) => {}
                    None => return Ok(()),
                }
            }
            if idle {
                break;
            }
        }
        write_all(&stream, &out).await?;
        out.clear();
        if matches!(conn.phase(), Phase::Closing | Phase::Closed) {
            return Ok(()); // dropping the stream closes it
        }
        let n = stream.read_with(|mut s| s.read(&mut buf)).await?;
        if n == 0 {
            return Ok(());
        }
        conn.receive(&buf[..n]);
    }
}

async fn write_all(stream: &Async<TcpStream>, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let n = stream.write_with(|mut s| s.write(data)).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        data = &data[n..];
    }
    Ok(())
}
