//! An async TCP echo server on loop-core's executor, with std sockets.
//!
//! `cargo run -p loop-core --example echo [ADDR]` (default `127.0.0.1:0`);
//! prints `listening on ADDR` once ready. `tests/echo_example.rs` runs it.

use loop_core::executor::{Async, Handle, Runtime};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};

async fn echo(stream: Async<TcpStream>) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = stream.read_with(|mut s| s.read(&mut buf)).await?;
        if n == 0 {
            return Ok(());
        }
        let mut sent = 0;
        while sent < n {
            sent += stream.write_with(|mut s| s.write(&buf[sent..n])).await?;
        }
    }
}

fn main() -> io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let rt = Runtime::new()?;
    let handle = rt.handle();
    rt.block_on(async move {
        let listener = Async::new(TcpListener::bind(&addr)?)?;
        println!("listening on {}", listener.get_ref().local_addr()?);
        io::stdout().flush()?;
        loop {
            let (stream, _peer) = listener.read_with(|l| l.accept()).await?;
            let stream = Async::new(stream)?;
            spawn_echo(&handle, stream);
        }
    })
}

fn spawn_echo(handle: &Handle, stream: Async<TcpStream>) {
    handle
        .spawn(async move {
            if let Err(e) = echo(stream).await {
                eprintln!("connection error: {e}");
            }
        })
        .detach();
}
