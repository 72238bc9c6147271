//! The physical limit: a single-threaded HTTP/1.1 server that answers every
//! request with `200 text/plain "Hello, World!"`, using loop-core's executor
//! for I/O and this crate's parser and encoder for HTTP (keep-alive,
//! pipelining, 100-continue, error responses). The benchmark runs it to
//! report the pure-Rust ceiling under the Python layers.
//!
//! `cargo run --release -p loop-http --example plaintext [ADDR]`
//! (default `127.0.0.1:8000`); prints `listening on ADDR` once ready.
//! `tests/plaintext_example.rs` includes this file and runs [`run`] on a
//! thread, so the test exercises exactly this code.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};

use loop_core::executor::{Async, Handle, Runtime};
use loop_http::{
    error_response, DateCache, Event, Limits, RequestInfo, RequestParser, ResponseEncoder,
    CONTINUE_RESPONSE,
};

const BODY: &[u8] = b"Hello, World!";
const SERVER: &[u8] = b"ferroloop";
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
    rt.block_on(async move {
        let listener = Async::new(listener)?;
        loop {
            let (stream, _peer) = listener.read_with(|l| l.accept()).await?;
            stream.set_nodelay(true)?;
            spawn_connection(&handle, Async::new(stream)?);
        }
    })
}

fn spawn_connection(handle: &Handle, stream: Async<TcpStream>) {
    handle
        .spawn(async move {
            if let Err(e) = serve(stream).await {
                if e.kind() != io::ErrorKind::ConnectionReset {
                    eprintln!("connection error: {e}");
                }
            }
        })
        .detach();
}

/// One connection: read, answer every complete request in the buffer (all
/// responses of a pipelined batch go out in one write), repeat.
async fn serve(stream: Async<TcpStream>) -> io::Result<()> {
    let mut parser = RequestParser::new(Limits::default());
    let mut date = DateCache::new();
    let mut buf = vec![0u8; READ_SIZE];
    let (mut start, mut end) = (0, 0); // unconsumed bytes: buf[start..end]
    let mut out = Vec::with_capacity(4096);
    let mut request: Option<RequestInfo> = None;
    loop {
        let mut close = false;
        loop {
            let (consumed, event) = match parser.parse(&buf[start..end]) {
                Ok(step) => step,
                Err(err) => {
                    error_response(&mut out, err.status(), Some(date.get()), Some(SERVER));
                    close = true;
                    break;
                }
            };
            start += consumed;
            match event {
                None => break,
                Some(Event::Head(head)) => {
                    if head.expect_continue {
                        out.extend_from_slice(CONTINUE_RESPONSE);
                    }
                    request = Some(RequestInfo::of(&head));
                }
                Some(Event::Body(_)) => {} // the body is not needed
                Some(Event::End) => {
                    let req = request
                        .take()
                        .ok_or_else(|| io::Error::other("End before Head"))?;
                    if !respond(&mut out, req, date.get())? {
                        close = true;
                        break;
                    }
                }
            }
        }
        write_all(&stream, &out).await?;
        out.clear();
        if close {
            return Ok(());
        }
        // Make room: the parser bounds what it leaves unconsumed (a partial
        // head, a chunk-size line), so this stays small.
        if start == end {
            (start, end) = (0, 0);
        } else if end == buf.len() {
            buf.copy_within(start..end, 0);
            (start, end) = (0, end - start);
            if end == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
        }
        let n = stream.read_with(|mut s| s.read(&mut buf[end..])).await?;
        if n == 0 {
            return Ok(());
        }
        end += n;
    }
}

/// Append the response; `Ok(false)` when the connection must close after it.
fn respond(out: &mut Vec<u8>, req: RequestInfo, date: &[u8]) -> io::Result<bool> {
    let headers = [
        (&b"content-type"[..], &b"text/plain"[..]),
        (b"content-length", b"13"),
    ];
    let mut enc = ResponseEncoder::start(out, req, 200, headers, false, Some(date), Some(SERVER))
        .map_err(io::Error::other)?;
    enc.body(out, BODY).map_err(io::Error::other)?;
    enc.finish(out, []).map_err(io::Error::other)?;
    Ok(enc.keep_alive())
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
