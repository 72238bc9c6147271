//! The body of the `session` fuzz target, shared with the stable test
//! that runs it over `seeds/` (loop-ws/tests/fuzz_seeds.rs).
//!
//! The first byte picks the session (permessage-deflate and its
//! parameters, small limits so the fuzzer reaches them) and how the input
//! is cut; the rest is what the client sends. Oracles: no panic; the cut
//! does not change the messages, the output or how the session ends; the
//! output is well-formed server frames with at most one close, last;
//! nothing follows a close.

use loop_ws::{Config, Connection, DeflateParams, Message, State};

/// Feed `input` in pieces of `step` bytes, taking a message after each
/// piece and all of them at the end; then EOF.
fn feed(
    input: &[u8],
    step: usize,
    config: &Config,
    deflate: Option<DeflateParams>,
) -> (Vec<Message>, Vec<u8>, String) {
    let mut c = Connection::new(config, deflate, 0.0);
    let mut messages = Vec::new();
    let mut out = Vec::new();
    for piece in input.chunks(step.max(1)) {
        c.receive(piece, 0.0);
        assert!(c.state() != State::Closed || !c.wants_read());
    }
    loop {
        c.take_output(&mut out);
        match c.next_message() {
            Some(m) => messages.push(m),
            None => break,
        }
    }
    c.receive_eof();
    c.take_output(&mut out);
    assert_eq!(c.state(), State::Closed);
    let status = format!("{:?}", c.close_status());
    (messages, out, status)
}

/// Check server frames: unmasked, RSV2/3 clear, a close at most once and
/// last.
fn check_output(mut out: &[u8]) {
    let mut closed = false;
    while !out.is_empty() {
        assert!(!closed, "output after a close frame");
        assert!(out.len() >= 2);
        assert_eq!(out[1] & 0x80, 0, "masked server frame");
        assert_eq!(out[0] & 0x30, 0);
        let (len, at) = match out[1] & 0x7f {
            126 => (usize::from(u16::from_be_bytes([out[2], out[3]])), 4),
            127 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&out[2..10]);
                (
                    usize::try_from(u64::from_be_bytes(b)).unwrap_or(usize::MAX),
                    10,
                )
            }
            n => (usize::from(n), 2),
        };
        let opcode = out[0] & 0x0f;
        if opcode & 0x8 != 0 {
            assert!(len <= 125 && out[0] & 0x80 != 0, "control frame rules");
        }
        closed = opcode == 0x8;
        assert!(out.len() >= at + len, "truncated frame");
        out = &out[at + len..];
    }
}

pub fn run(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let deflate = (selector & 1 != 0).then(|| DeflateParams {
        server_no_context_takeover: selector & 0x10 != 0,
        client_no_context_takeover: selector & 0x08 != 0,
        server_max_window_bits: if selector & 0x80 != 0 { 8 } else { 15 },
        client_max_window_bits: [9, 10, 12, 15][usize::from((selector >> 1) & 3)],
    });
    let step = usize::from(selector >> 5) + 1;
    let config = Config {
        max_message_size: 4096,
        max_frame_size: 2048,
        max_queue: 2,
        max_queue_bytes: 3000,
        ping_interval: None,
        ping_timeout: None,
        ..Config::default()
    };
    let whole = feed(input, input.len(), &config, deflate);
    check_output(&whole.1);
    if step < input.len() {
        assert_eq!(
            feed(input, step, &config, deflate),
            whole,
            "the cut changed the outcome"
        );
    }
}
