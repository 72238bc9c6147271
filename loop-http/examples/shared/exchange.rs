//! The exchange every pure-Rust example server has: read the request body
//! to its end, answer `200 text/plain "Hello, World!"`. Included by
//! `plaintext.rs` and by loop-tls' `examples/https/`, so the HTTPS
//! example serves exactly what the plaintext one does.

use std::io;

use loop_http::{BodyRead, ResponsePart, ServerConnection};

pub const BODY: &[u8] = b"Hello, World!";
pub const SERVER: &[u8] = b"ferroloop";

/// Take what body has arrived: `Some(true)` once all of it has, `None`
/// when the exchange is over.
pub fn read_to_end(conn: &mut ServerConnection, id: u64, out: &mut Vec<u8>) -> Option<bool> {
    loop {
        match conn.read_body(id, out) {
            BodyRead::Data(_, true) => {}
            BodyRead::Data(_, false) => return Some(true),
            BodyRead::Wait { .. } => return Some(false),
            BodyRead::Disconnect => return None,
        }
    }
}

/// Append the response.
pub fn respond(
    conn: &mut ServerConnection,
    id: u64,
    out: &mut Vec<u8>,
    date: &[u8],
) -> io::Result<()> {
    let headers = [
        (&b"content-type"[..], &b"text/plain"[..]),
        (b"content-length", b"13"),
    ];
    let start = ResponsePart::Start {
        status: 200,
        headers,
        trailers: false,
    };
    conn.send(id, out, start, Some(date), Some(SERVER), 0.0)
        .map_err(io::Error::other)?;
    let body = ResponsePart::Body::<[(&[u8], &[u8]); 0]> {
        data: BODY,
        more: false,
    };
    conn.send(id, out, body, Some(date), Some(SERVER), 0.0)
        .map_err(io::Error::other)?;
    Ok(())
}
