//! RFC 6455 framing rules, one test per rule, each input fed whole and
//! byte by byte.

mod support;

use loop_ws::{CloseCode, Config, Connection, MessageKind, SendError, State};
use support::*;

/// Feed `input` both ways; the session must fail with `code` and send
/// exactly one close frame carrying it.
fn assert_fails(config: &Config, input: &[u8], code: u16) {
    for how in FEEDS {
        let mut c = conn(config);
        feed(&mut c, input, how);
        // Messages before the error are delivered first.
        let _ = messages(&mut c);
        assert_eq!(c.state(), State::Closed, "{how:?}");
        assert_eq!(c.close_status().map(|(c, _)| c.0), Some(code), "{how:?}");
        let out = output(&mut c);
        assert_eq!(out.len(), 1, "{how:?}: {out:?}");
        assert_eq!(out[0].close().map(|(c, _)| c), Some(code), "{how:?}");
        assert!(!c.wants_read());
        let mut sink = Vec::new();
        assert_eq!(
            c.send(MessageKind::Text, b"x", &mut sink),
            Err(SendError::Closed)
        );
        assert!(sink.is_empty());
    }
}

#[test]
fn single_frame_messages() {
    for how in FEEDS {
        let mut c = conn(&quiet());
        let mut input = text("héllo");
        input.extend(binary(&[0, 1, 2, 255]));
        input.extend(text(""));
        input.extend(binary(&vec![7; 70_000])); // 64-bit length
        input.extend(binary(&vec![9; 300])); // 16-bit length
        feed(&mut c, &input, how);
        assert_eq!(
            messages(&mut c),
            [
                msg(MessageKind::Text, "héllo".as_bytes()),
                msg(MessageKind::Binary, &[0, 1, 2, 255]),
                msg(MessageKind::Text, b""),
                msg(MessageKind::Binary, &vec![7; 70_000]),
                msg(MessageKind::Binary, &vec![9; 300]),
            ]
        );
        assert_eq!(c.state(), State::Open);
        assert!(output(&mut c).is_empty());
    }
}

#[test]
fn fragmented_message_with_control_frames_between() {
    for how in FEEDS {
        let mut c = conn(&quiet());
        let mut input = frame(false, false, TEXT, "a€".as_bytes());
        input.extend(frame(true, false, PING, b"p1"));
        input.extend(frame(false, false, CONT, b""));
        input.extend(frame(true, false, PONG, b"unsolicited"));
        input.extend(frame(true, false, CONT, b"b"));
        feed(&mut c, &input, how);
        assert_eq!(messages(&mut c), [msg(MessageKind::Text, "a€b".as_bytes())]);
        let out = output(&mut c);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].opcode, &out[0].payload[..]), (PONG, &b"p1"[..]));
    }
}

#[test]
fn text_split_inside_a_character_across_fragments() {
    let s = "😀x".as_bytes();
    for how in FEEDS {
        let mut c = conn(&quiet());
        let mut input = frame(false, false, TEXT, &s[..1]);
        input.extend(frame(false, false, CONT, &s[1..3]));
        input.extend(frame(true, false, CONT, &s[3..]));
        feed(&mut c, &input, how);
        assert_eq!(messages(&mut c), [msg(MessageKind::Text, s)]);
    }
}

#[test]
fn pings_are_answered_in_order_with_the_same_payload() {
    for how in FEEDS {
        let mut c = conn(&quiet());
        let mut input = frame(true, false, PING, b"one");
        input.extend(frame(true, false, PING, b""));
        input.extend(frame(true, false, PING, &[0xab; 125]));
        feed(&mut c, &input, how);
        let out = output(&mut c);
        let pongs: Vec<_> = out.iter().map(|f| (f.opcode, f.payload.clone())).collect();
        assert_eq!(
            pongs,
            [
                (PONG, b"one".to_vec()),
                (PONG, vec![]),
                (PONG, vec![0xab; 125])
            ]
        );
    }
}

#[test]
fn pongs_come_before_later_data_in_the_output() {
    let mut c = conn(&quiet());
    c.receive(&frame(true, false, PING, b"x"), 0.0);
    let mut out = Vec::new();
    c.send(MessageKind::Text, b"after", &mut out).unwrap();
    let frames = parse_frames(&out);
    assert_eq!(
        frames.iter().map(|f| f.opcode).collect::<Vec<_>>(),
        [PONG, TEXT]
    );
    assert!(!c.has_output());
}

#[test]
fn unmasked_client_frame() {
    assert_fails(&quiet(), &frame_with(true, false, TEXT, b"hi", None), 1002);
}

#[test]
fn reserved_bits() {
    for b0 in [0x80 | 0x20 | TEXT, 0x80 | 0x10 | BINARY] {
        let mut f = text("x");
        f[0] = b0;
        assert_fails(&quiet(), &f, 1002);
    }
    // RSV1 without permessage-deflate.
    assert_fails(&quiet(), &frame(true, true, TEXT, b"x"), 1002);
    // RSV1 on a control frame, even with deflate.
    assert_fails(&quiet(), &frame(true, true, PING, b"x"), 1002);
}

#[test]
fn unknown_opcodes() {
    for op in [3, 4, 5, 6, 7, 11, 12, 13, 14, 15] {
        assert_fails(&quiet(), &frame(true, false, op, b""), 1002);
    }
}

#[test]
fn fragmented_or_oversized_control_frames() {
    assert_fails(&quiet(), &frame(false, false, PING, b"x"), 1002);
    assert_fails(&quiet(), &frame(false, false, CLOSE, b""), 1002);
    assert_fails(&quiet(), &frame(true, false, PING, &[0; 126]), 1002);
    assert_fails(&quiet(), &frame(true, false, PONG, &[0; 126]), 1002);
}

#[test]
fn continuation_without_a_start() {
    assert_fails(&quiet(), &frame(true, false, CONT, b"x"), 1002);
    // A completed message leaves nothing to continue.
    let mut input = text("done");
    input.extend(frame(false, false, CONT, b"x"));
    assert_fails(&quiet(), &input, 1002);
}

#[test]
fn new_data_frame_inside_a_fragmented_message() {
    let mut input = frame(false, false, TEXT, b"a");
    input.extend(frame(true, false, BINARY, b"b"));
    assert_fails(&quiet(), &input, 1002);
}

#[test]
fn length_with_the_top_bit_set() {
    let mut f = vec![0x80 | BINARY, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 1];
    f.extend_from_slice(&MASK);
    assert_fails(&quiet(), &f, 1002);
    // Refused as soon as that byte arrives.
    assert_fails(&quiet(), &f[..3], 1002);
}

#[test]
fn non_minimal_lengths_are_refused() {
    // RFC 6455 §5.2: the minimal number of bytes MUST be used to encode the
    // length. 3 in the 16-bit form, 1 and 65535 in the 64-bit form.
    let mut f = vec![0x80 | BINARY, 0x80 | 126, 0, 3];
    f.extend_from_slice(&MASK);
    f.extend(b"abc".iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
    assert_fails(&quiet(), &f, 1002);
    for n in [1u64, 65535] {
        let mut g = vec![0x80 | BINARY, 0x80 | 127];
        g.extend_from_slice(&n.to_be_bytes());
        g.extend_from_slice(&MASK);
        assert_fails(&quiet(), &g, 1002);
    }
    // The smallest lengths of each form are accepted.
    for how in FEEDS {
        let mut c = conn(&quiet());
        let mut f = vec![0x80 | BINARY, 0x80 | 126, 0, 126];
        f.extend_from_slice(&MASK);
        f.extend((0..126).map(|i| b'a' ^ MASK[i % 4]));
        feed(&mut c, &f, how);
        assert_eq!(messages(&mut c), [msg(MessageKind::Binary, &[b'a'; 126])]);
    }
}

#[test]
fn invalid_utf8_fails_fast() {
    // Invalid in a single frame.
    assert_fails(&quiet(), &frame(true, false, TEXT, b"ok\xff"), 1007);
    // Invalid in a later fragment.
    let mut input = frame(false, false, TEXT, "€".as_bytes());
    input.extend(frame(true, false, CONT, b"\xc0\xaf"));
    assert_fails(&quiet(), &input, 1007);
    // A message ending inside a character.
    let mut input = frame(false, false, TEXT, b"a");
    input.extend(frame(true, false, CONT, &"€".as_bytes()[..2]));
    assert_fails(&quiet(), &input, 1007);
    // Fail fast: the frame is far from complete when the bad byte arrives
    // (a 1,000-byte frame; only 20 payload bytes sent).
    let mut payload = b"hello".to_vec();
    payload.extend_from_slice(b"\xed\xa0\x80"); // a surrogate
    payload.resize(1000, b'x');
    let f = frame(true, false, TEXT, &payload);
    assert_fails(&quiet(), &f[..8 + 20], 1007);
    // Fail fast across fragments: the first fragment is final-less, the
    // invalid start of a sequence is known at once.
    let mut input = frame(false, false, TEXT, b"\xf4\x90");
    assert_fails(&quiet(), &input, 1007);
    input.clear();
}

#[test]
fn messages_before_an_error_can_still_be_answered() {
    for how in FEEDS {
        let mut c = conn(&quiet());
        let mut input = text("first");
        input.extend(frame(true, true, TEXT, b"rsv1"));
        input.extend(frame(true, false, PING, b"never answered"));
        feed(&mut c, &input, how);
        assert_eq!(c.state(), State::Open);
        assert!(!c.wants_read());
        assert!(!c.has_output());
        let m = c.next_message().unwrap();
        let mut out = Vec::new();
        c.send(m.kind, &m.data, &mut out).unwrap();
        assert!(c.next_message().is_none());
        assert_eq!(c.state(), State::Closed);
        c.take_output(&mut out);
        let frames = parse_frames(&out);
        assert_eq!(frames.len(), 2, "{frames:?}");
        assert_eq!(
            (frames[0].opcode, &frames[0].payload[..]),
            (TEXT, &b"first"[..])
        );
        assert_eq!(frames[1].close().map(|(c, _)| c), Some(1002));
    }
}

#[test]
fn binary_is_not_validated() {
    let mut c = conn(&quiet());
    c.receive(&binary(b"\xff\xfe"), 0.0);
    assert_eq!(messages(&mut c), [msg(MessageKind::Binary, b"\xff\xfe")]);
}

#[test]
fn frame_size_limit() {
    let config = Config {
        max_frame_size: 100,
        ..quiet()
    };
    let mut c = conn(&config);
    c.receive(&binary(&[1; 100]), 0.0);
    assert_eq!(messages(&mut c).len(), 1);
    // Refused from the header alone.
    assert_fails(&config, &binary(&[1; 101])[..8], 1009);
}

#[test]
fn message_size_limit_across_fragments() {
    let config = Config {
        max_message_size: 100,
        ..quiet()
    };
    let mut ok = frame(false, false, BINARY, &[1; 60]);
    ok.extend(frame(true, false, CONT, &[1; 40]));
    let mut c = conn(&config);
    c.receive(&ok, 0.0);
    assert_eq!(messages(&mut c)[0].data.len(), 100);
    let mut big = frame(false, false, BINARY, &[1; 60]);
    big.extend(frame(true, false, CONT, &[1; 41]));
    assert_fails(&config, &big, 1009);
}

#[test]
fn receive_queue_depth() {
    let config = Config {
        max_queue: 2,
        ..quiet()
    };
    for how in FEEDS {
        let mut c = conn(&config);
        let mut input = Vec::new();
        for i in 0..5u8 {
            input.extend(binary(&[i]));
        }
        input.extend(frame(true, false, PING, b"late"));
        feed(&mut c, &input, how);
        assert!(!c.wants_read());
        // The ping waits behind the messages: nothing answered yet.
        assert!(output(&mut c).is_empty());
        let mut got = Vec::new();
        while let Some(m) = c.next_message() {
            got.push(m.data[0]);
            assert!(c.wants_read() || got.len() < 4, "{got:?}");
        }
        assert_eq!(got, [0, 1, 2, 3, 4]);
        assert!(c.wants_read());
        assert_eq!(output(&mut c)[0].payload, b"late");
    }
}

#[test]
fn receive_queue_bytes() {
    let config = Config {
        max_queue_bytes: 1000,
        ..quiet()
    };
    let mut c = conn(&config);
    let mut input = binary(&[1; 600]);
    input.extend(binary(&[2; 600]));
    input.extend(binary(&[3; 10]));
    c.receive(&input, 0.0);
    // 1,200 bytes queued (the bound is checked before each message).
    assert!(!c.wants_read());
    // Taking one makes room: the held third message is decoded.
    assert_eq!(c.next_message().unwrap().data[0], 1);
    assert!(c.wants_read());
    assert_eq!(messages(&mut c).len(), 2);
}

#[test]
fn eof_without_close() {
    for how in FEEDS {
        let mut c = conn(&quiet());
        // Half a frame, then EOF.
        feed(&mut c, &text("hello")[..4], how);
        c.receive_eof();
        assert_eq!(c.state(), State::Closed);
        assert_eq!(c.close_status(), Some((CloseCode::ABNORMAL, "")));
        assert!(output(&mut c).is_empty(), "no close frame after EOF");
    }
}

#[test]
fn eof_behind_a_full_queue_delivers_first() {
    let config = Config {
        max_queue: 1,
        ..quiet()
    };
    let mut c = conn(&config);
    let mut input = text("a");
    input.extend(text("b"));
    input.extend(close_frame(1000, b"bye"));
    c.receive(&input, 0.0);
    c.receive_eof();
    assert_eq!(c.state(), State::Open);
    assert_eq!(c.next_message().unwrap().data, b"a");
    assert_eq!(c.next_message().unwrap().data, b"b");
    // The close frame was decoded once there was room (with nothing left
    // to take before it, so at once).
    assert_eq!(c.state(), State::Closed);
    assert_eq!(c.close_status(), Some((CloseCode::NORMAL, "bye")));
}

#[test]
fn input_after_failure_is_ignored() {
    let mut c = conn(&quiet());
    let mut input = frame(true, false, CONT, b"");
    input.extend(frame(true, false, PING, b"x"));
    c.receive(&input, 0.0);
    c.receive(&frame(true, false, PING, b"y"), 0.0);
    let out = output(&mut c);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].opcode, CLOSE);
}

#[test]
fn send_frames() {
    let mut c = conn(&quiet());
    let mut out = Vec::new();
    c.send(MessageKind::Text, "hé".as_bytes(), &mut out)
        .unwrap();
    c.send(MessageKind::Binary, &[5; 200], &mut out).unwrap();
    c.send(MessageKind::Binary, &vec![6; 70_000], &mut out)
        .unwrap();
    let frames = parse_frames(&out);
    assert_eq!(
        server_messages(&frames, None),
        [
            msg(MessageKind::Text, "hé".as_bytes()),
            msg(MessageKind::Binary, &[5; 200]),
            msg(MessageKind::Binary, &vec![6; 70_000]),
        ]
    );
    assert!(frames.iter().all(|f| f.fin && !f.rsv1));
}

#[test]
fn connection_is_send() {
    fn is_send<T: Send>() {}
    is_send::<Connection>();
}
