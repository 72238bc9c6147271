//! The codec's cost per echoed message, no I/O: one client frame in
//! (`receive`), the message out (`next_message`), the same message sent
//! back (`send`), the way an echo server with one message in flight drives
//! a session. Criterion-free; prints ns per message.
//!
//! `cargo run --release -p loop-ws --example bench [-- SCALE [NAME_FILTER]]`

use std::hint::black_box;
use std::time::Instant;

use flate2::{Compress, Compression, FlushCompress};
use loop_ws::{Config, Connection, DeflateParams};

const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

fn client_frame(opcode: u8, rsv1: bool, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0x80 | opcode | if rsv1 { 0x40 } else { 0 }];
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= 0xffff {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&MASK);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
    out
}

/// Echo `frames` (cycled) through one session; ns per message.
fn run(name: &str, frames: &[Vec<u8>], deflate: Option<DeflateParams>, iterations: usize) {
    if let Some(only) = std::env::args().nth(2) {
        if !name.contains(only.as_str()) {
            return;
        }
    }
    let config = Config {
        ping_interval: None,
        ..Config::default()
    };
    let mut c = Connection::new(&config, deflate, 0.0);
    let mut out = Vec::with_capacity(1 << 20);
    let mut bytes = 0usize;
    // Warm up, then measure.
    for round in 0..2 {
        let n = if round == 0 {
            iterations / 10 + 1
        } else {
            iterations
        };
        let start = Instant::now();
        for i in 0..n {
            c.receive(&frames[i % frames.len()], 0.0);
            let Some(m) = c.next_message() else {
                panic!("{name}: no message");
            };
            out.clear();
            c.send(m.kind, &m.data, &mut out)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            bytes += black_box(&out).len();
        }
        if round == 1 {
            let ns = start.elapsed().as_nanos() as f64 / n as f64;
            println!(
                "{name:<32} {ns:>10.0} ns/message   {:>12.0} messages/s",
                1e9 / ns
            );
        }
    }
    black_box(bytes);
}

fn compress_stream(messages: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut z = Compress::new_with_window_bits(Compression::default(), false, 15);
    messages
        .iter()
        .map(|m| {
            let mut out = Vec::with_capacity(m.len() + 64);
            z.compress_vec(m, &mut out, FlushCompress::Sync).unwrap();
            out.truncate(out.len() - 4);
            client_frame(1, true, &out)
        })
        .collect()
}

fn main() {
    let scale: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let bin = |n: usize| {
        vec![client_frame(
            2,
            false,
            &(0..n).map(|i| i as u8).collect::<Vec<_>>(),
        )]
    };
    run("binary 64 B", &bin(64), None, 2_000_000 * scale);
    run(
        "text 64 B",
        &[client_frame(1, false, &[b'a'; 64])],
        None,
        2_000_000 * scale,
    );
    run("binary 4 KiB", &bin(4096), None, 500_000 * scale);
    let text4k: Vec<u8> = (0..4096)
        .map(|i| b"lorem ipsum dolor sit amet, "[i % 28])
        .collect();
    run(
        "text 4 KiB",
        &[client_frame(1, false, &text4k)],
        None,
        500_000 * scale,
    );
    run("binary 256 KiB", &bin(256 * 1024), None, 10_000 * scale);
    // permessage-deflate: 100 different 4 KiB texts, context kept.
    let texts: Vec<Vec<u8>> = (0..100)
        .map(|k| {
            (0..4096)
                .map(|i| b"the quick brown fox jumps over the lazy dog "[(i * 7 + k) % 44])
                .collect()
        })
        .collect();
    let params = DeflateParams {
        server_no_context_takeover: false,
        client_no_context_takeover: false,
        server_max_window_bits: 15,
        client_max_window_bits: 15,
    };
    // The frames must be decoded in order (context takeover): 100 × k.
    run(
        "text 4 KiB + deflate",
        &compress_stream(&texts),
        Some(params),
        100 * 200 * scale,
    );
}
