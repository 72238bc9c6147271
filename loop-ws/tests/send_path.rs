//! The copy-saving send and receive paths: `send_header` (the caller
//! writes the payload behind it) and `recycle` (a taken message's buffer
//! reused for the next).

mod support;

use loop_ws::{CloseCode, Connection, DeflateParams, MessageKind, SendError, RECYCLE_MAX};
use support::*;

#[test]
fn send_header_then_payload_is_what_send_writes() {
    for (kind, len) in [
        (MessageKind::Binary, 0),
        (MessageKind::Binary, 125),
        (MessageKind::Text, 126),
        (MessageKind::Binary, 70_000),
    ] {
        let payload = vec![b'a'; len];
        let mut whole = Vec::new();
        conn(&quiet()).send(kind, &payload, &mut whole).unwrap();
        let mut split = Vec::new();
        assert_eq!(conn(&quiet()).send_header(kind, len, &mut split), Ok(true));
        split.extend_from_slice(&payload);
        assert_eq!(split, whole, "{kind:?} {len}");
    }
}

#[test]
fn send_header_puts_the_sessions_own_output_first() {
    let mut c = conn(&quiet());
    c.receive(&frame(true, false, PING, b"hi"), 0.0);
    let mut out = Vec::new();
    assert_eq!(c.send_header(MessageKind::Binary, 3, &mut out), Ok(true));
    out.extend_from_slice(b"abc");
    let frames = parse_frames(&out);
    assert_eq!(frames.len(), 2);
    assert_eq!(
        (frames[0].opcode, &frames[0].payload[..]),
        (PONG, &b"hi"[..])
    );
    assert_eq!(
        (frames[1].opcode, &frames[1].payload[..]),
        (BINARY, &b"abc"[..])
    );
}

#[test]
fn send_header_declines_when_the_session_compresses() {
    let params = DeflateParams {
        server_no_context_takeover: false,
        client_no_context_takeover: false,
        server_max_window_bits: 15,
        client_max_window_bits: 15,
    };
    let mut c = Connection::new(&quiet(), Some(params), 0.0);
    let mut out = Vec::new();
    assert_eq!(c.send_header(MessageKind::Text, 10, &mut out), Ok(false));
    assert!(out.is_empty());
}

#[test]
fn send_header_after_close_is_refused() {
    let mut c = conn(&quiet());
    let mut out = Vec::new();
    c.close(CloseCode::NORMAL, "", 0.0, &mut out).unwrap();
    assert_eq!(
        c.send_header(MessageKind::Binary, 1, &mut out),
        Err(SendError::Closed)
    );
}

#[test]
fn recycled_buffers_carry_the_next_messages() {
    for how in FEEDS {
        let mut c = conn(&quiet());
        let big = vec![3u8; 100_000];
        feed(&mut c, &binary(&big), how);
        let first = c.next_message().unwrap();
        assert_eq!(first.data, big);
        let capacity = first.data.capacity();
        c.recycle(first.data);
        feed(&mut c, &text("small"), how);
        feed(&mut c, &binary(&[1, 2, 3]), how);
        let second = c.next_message().unwrap();
        assert_eq!(
            (second.kind, &second.data[..]),
            (MessageKind::Text, &b"small"[..])
        );
        assert_eq!(
            second.data.capacity(),
            capacity,
            "{how:?}: the buffer was reused"
        );
        assert_eq!(c.next_message().unwrap().data, [1, 2, 3]);
    }
}

#[test]
fn large_buffers_are_not_kept() {
    let mut c = conn(&quiet());
    c.recycle(Vec::with_capacity(RECYCLE_MAX + 1));
    feed(&mut c, &binary(b"x"), Feed::Whole);
    assert!(c.next_message().unwrap().data.capacity() <= RECYCLE_MAX);
}
