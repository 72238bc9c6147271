//! A server connection driven by a script: the fuzzer's bytes are cut into
//! input pieces interleaved with app actions (read body, send response
//! parts, timers, drain, flush, close). Oracles: no panic; nothing is
//! written once the connection closed; and every request the connection
//! starts is one the plain parser finds in the same bytes received in one
//! piece, in order (body bytes never start a request).

#![no_main]

use libfuzzer_sys::fuzz_target;
use loop_http::{
    ConnectionConfig, Event, Limits, ResponsePart, RequestParser, ServerConnection, Step,
};
use std::sync::Arc;

const NONE: [(&[u8], &[u8]); 0] = [];

/// The heads the parser alone finds in `input`, as `Debug` text.
fn reference_heads(input: &[u8]) -> Vec<String> {
    let mut parser = RequestParser::new(Limits::default());
    let mut heads = Vec::new();
    let mut pos = 0;
    while let Ok((n, event)) = parser.parse(&input[pos..]) {
        match event {
            Some(Event::Head(head)) => heads.push(format!("{head:?}")),
            Some(_) => {}
            None if n == 0 => break,
            None => {}
        }
        pos += n;
    }
    heads
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    // The first `split` bytes script the app; the rest is the input.
    let (script, input) = rest.split_at((split as usize).min(rest.len()));
    let config = ConnectionConfig {
        body_buffer: 64,
        pipeline_buffer: 256,
        discard_limit: 32,
        ..ConnectionConfig::default()
    };
    let mut c = ServerConnection::new(Arc::new(config), 0.0);
    let mut out = Vec::new();
    let mut started = Vec::new();
    let mut id = None;
    let mut fed = 0;
    let mut now = 0.0;
    for &op in script.iter().chain(std::iter::repeat(&0).take(8)) {
        let closed = c.is_closed();
        let before = out.len();
        match op % 12 {
            0 | 1 if fed < input.len() => {
                // Feed a piece of 1..=16 bytes.
                let n = ((op >> 4) as usize + 1).min(input.len() - fed);
                c.receive(&input[fed..fed + n]);
                fed += n;
            }
            2 => {
                if let Some(id) = id {
                    c.read_body(id, &mut out);
                }
            }
            3 => {
                if let Some(id) = id {
                    let part = ResponsePart::Start {
                        status: 200 + u16::from(op >> 4),
                        headers: NONE,
                        trailers: op & 0x10 != 0,
                    };
                    let _ = c.send(id, &mut out, part, None, None, now);
                }
            }
            4 | 5 => {
                if let Some(id) = id {
                    let part = ResponsePart::Body::<[(&[u8], &[u8]); 0]> {
                        data: &input[..input.len().min((op >> 4) as usize)],
                        more: op % 12 == 4,
                    };
                    let _ = c.send(id, &mut out, part, None, None, now);
                }
            }
            6 => {
                if let Some(id) = id {
                    let part = ResponsePart::Trailers {
                        headers: NONE,
                        more: op & 0x10 != 0,
                    };
                    let _ = c.send(id, &mut out, part, None, None, now);
                }
            }
            7 => {
                now += f64::from(op >> 4);
                let _ = c.on_timer(now);
            }
            8 => {
                c.close();
            }
            9 => {
                let _ = c.drain(op & 0x10 != 0, op & 0x20 != 0);
            }
            10 => {
                if op & 0x10 != 0 {
                    c.receive_eof();
                }
                c.lose();
            }
            _ => {}
        }
        // Whatever the state machine asks for next.
        for _ in 0..4 {
            match c.poll() {
                Step::Wait => break,
                Step::Request(head) => {
                    started.push(format!("{head:?}"));
                    id = Some(c.begin_request(head));
                }
                Step::Deliver => {
                    c.take_delivery();
                }
                Step::Fail(status) => {
                    c.fail(status, &mut out, None, None);
                }
                Step::Close => {
                    c.close();
                }
            }
        }
        if closed {
            assert_eq!(out.len(), before, "wrote after close");
        }
    }
    let reference = reference_heads(&input[..fed]);
    assert!(
        started.len() <= reference.len() && started[..] == reference[..started.len()],
        "started {started:?}, the parser finds {reference:?}"
    );
});
