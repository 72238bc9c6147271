//! permessage-deflate on a session (RFC 7692 §6–7.2), against the test
//! client's own zlib streams.

mod support;

use loop_ws::{Config, Connection, DeflateParams, MessageKind, State};
use support::*;

fn params(snct: bool, cnct: bool, sbits: u8, cbits: u8) -> DeflateParams {
    DeflateParams {
        server_no_context_takeover: snct,
        client_no_context_takeover: cnct,
        server_max_window_bits: sbits,
        client_max_window_bits: cbits,
    }
}

const DEFAULT: DeflateParams = DeflateParams {
    server_no_context_takeover: false,
    client_no_context_takeover: false,
    server_max_window_bits: 15,
    client_max_window_bits: 15,
};

fn deflate_conn(config: &Config, p: DeflateParams) -> Connection {
    Connection::new(config, Some(p), 0.0)
}

#[test]
fn compressed_messages_are_inflated() {
    for how in FEEDS {
        let mut client = ClientDeflate::new(DEFAULT);
        let mut c = deflate_conn(&quiet(), DEFAULT);
        let hello = "Hello, hello, hello, WebSocket!".repeat(10);
        let mut input = frame(true, true, TEXT, &client.compress(hello.as_bytes()));
        // Context takeover: the second message refers back to the first.
        input.extend(frame(true, true, TEXT, &client.compress(hello.as_bytes())));
        input.extend(text("plain")); // uncompressed messages still allowed
        input.extend(frame(true, true, BINARY, &client.compress(b"")));
        feed(&mut c, &input, how);
        assert_eq!(
            messages(&mut c),
            [
                msg(MessageKind::Text, hello.as_bytes()),
                msg(MessageKind::Text, hello.as_bytes()),
                msg(MessageKind::Text, b"plain"),
                msg(MessageKind::Binary, b""),
            ]
        );
        assert_eq!(c.state(), State::Open);
    }
}

#[test]
fn fragmented_compressed_message() {
    for how in FEEDS {
        let mut client = ClientDeflate::new(DEFAULT);
        let mut c = deflate_conn(&quiet(), DEFAULT);
        let data = "fragment ".repeat(100);
        let z = client.compress(data.as_bytes());
        let (a, b) = z.split_at(z.len() / 2);
        let mut input = frame(false, true, TEXT, a);
        input.extend(frame(true, false, PING, b"mid"));
        input.extend(frame(false, false, CONT, &[]));
        input.extend(frame(true, false, CONT, b));
        feed(&mut c, &input, how);
        assert_eq!(messages(&mut c), [msg(MessageKind::Text, data.as_bytes())]);
    }
}

#[test]
fn empty_compressed_payload_is_an_empty_message() {
    for how in FEEDS {
        let mut client = ClientDeflate::new(DEFAULT);
        let mut c = deflate_conn(&quiet(), DEFAULT);
        let mut input = frame(true, true, TEXT, &client.compress(b"before"));
        input.extend(frame(true, true, TEXT, &[]));
        input.extend(frame(true, true, TEXT, &client.compress(b"after")));
        feed(&mut c, &input, how);
        let got: Vec<_> = messages(&mut c).into_iter().map(|m| m.data).collect();
        assert_eq!(got, [b"before".to_vec(), vec![], b"after".to_vec()]);
    }
}

#[test]
fn rsv1_on_a_continuation_frame() {
    let mut c = deflate_conn(&quiet(), DEFAULT);
    let mut input = frame(false, true, TEXT, &[]);
    input.extend(frame(true, true, CONT, &[]));
    c.receive(&input, 0.0);
    assert_eq!(c.close_status().map(|(c, _)| c.0), Some(1002));
}

#[test]
fn corrupt_stream_is_1002() {
    let mut c = deflate_conn(&quiet(), DEFAULT);
    c.receive(&frame(true, true, BINARY, &[0xff, 0xff, 0xff, 0xff]), 0.0);
    assert_eq!(c.close_status().map(|(c, _)| c.0), Some(1002));
}

#[test]
fn invalid_utf8_inside_compressed_text() {
    let mut client = ClientDeflate::new(DEFAULT);
    let mut c = deflate_conn(&quiet(), DEFAULT);
    c.receive(&frame(true, true, TEXT, &client.compress(b"abc\xff")), 0.0);
    assert_eq!(c.close_status().map(|(c, _)| c.0), Some(1007));
}

#[test]
fn decompressed_size_is_limited() {
    // A 16 KiB frame that inflates to 16 MiB, against a 1 MiB limit: 1009
    // (and memory stays near the limit: tests/memory.rs).
    let config = Config {
        max_message_size: 1 << 20,
        ..quiet()
    };
    let mut client = ClientDeflate::new(DEFAULT);
    let bomb = client.compress(&vec![0u8; 16 << 20]);
    assert!(bomb.len() < 32 << 10, "{}", bomb.len());
    let mut c = deflate_conn(&config, DEFAULT);
    c.receive(&frame(true, true, BINARY, &bomb), 0.0);
    assert_eq!(c.close_status().map(|(c, _)| c.0), Some(1009));
    // Exactly at the limit is fine.
    let mut client = ClientDeflate::new(DEFAULT);
    let mut c = deflate_conn(&config, DEFAULT);
    c.receive(
        &frame(true, true, BINARY, &client.compress(&vec![0; 1 << 20])),
        0.0,
    );
    assert_eq!(messages(&mut c)[0].data.len(), 1 << 20);
}

#[test]
fn sent_messages_are_compressed() {
    let mut c = deflate_conn(&quiet(), DEFAULT);
    let mut client = ClientDeflate::new(DEFAULT);
    let mut out = Vec::new();
    let big = "compress me ".repeat(50);
    c.send(MessageKind::Text, big.as_bytes(), &mut out).unwrap();
    c.send(MessageKind::Text, b"tiny", &mut out).unwrap();
    c.send(MessageKind::Binary, big.as_bytes(), &mut out)
        .unwrap();
    let frames = parse_frames(&out);
    assert_eq!(
        frames.iter().map(|f| f.rsv1).collect::<Vec<_>>(),
        [true, true, true]
    );
    assert!(frames[0].payload.len() < 100);
    assert!(
        frames[2].payload.len() < frames[0].payload.len(),
        "context takeover"
    );
    assert_eq!(
        server_messages(&frames, Some(&mut client)),
        [
            msg(MessageKind::Text, big.as_bytes()),
            msg(MessageKind::Text, b"tiny"),
            msg(MessageKind::Binary, big.as_bytes()),
        ]
    );
}

#[test]
fn every_parameter_combination_round_trips() {
    let data: Vec<Vec<u8>> = (0..6)
        .map(|i| format!("message {i}: {}", "abcdefgh".repeat(40 * (i + 1))).into_bytes())
        .collect();
    for snct in [false, true] {
        for cnct in [false, true] {
            for sbits in [8, 9, 10, 12, 15] {
                for cbits in [9, 11, 15] {
                    let p = params(snct, cnct, sbits, cbits);
                    let mut client = ClientDeflate::new(p);
                    let mut c = deflate_conn(&quiet(), p);
                    let mut out = Vec::new();
                    for d in &data {
                        c.receive(&frame(true, true, BINARY, &client.compress(d)), 0.0);
                        c.send(MessageKind::Binary, d, &mut out).unwrap();
                    }
                    let got: Vec<_> = messages(&mut c).into_iter().map(|m| m.data).collect();
                    assert_eq!(got, data, "{p:?}");
                    let sent: Vec<_> = server_messages(&parse_frames(&out), Some(&mut client))
                        .into_iter()
                        .map(|m| m.data)
                        .collect();
                    assert_eq!(sent, data, "{p:?}");
                }
            }
        }
    }
}

#[test]
fn server_window_of_8_bits_sends_uncompressed() {
    let p = params(false, false, 8, 15);
    let mut c = deflate_conn(&quiet(), p);
    let mut client = ClientDeflate::new(p);
    let data = "still compressed by the client ".repeat(20);
    c.receive(
        &frame(true, true, TEXT, &client.compress(data.as_bytes())),
        0.0,
    );
    assert_eq!(messages(&mut c)[0].data, data.as_bytes());
    let mut out = Vec::new();
    c.send(MessageKind::Text, data.as_bytes(), &mut out)
        .unwrap();
    let frames = parse_frames(&out);
    assert!(!frames[0].rsv1);
    assert_eq!(frames[0].payload, data.as_bytes());
    assert_eq!(c.deflate_allocated(), (true, false));
}

#[test]
fn deflate_state_is_allocated_lazily() {
    let mut c = deflate_conn(&quiet(), DEFAULT);
    assert_eq!(c.deflate_allocated(), (false, false));
    c.receive(&text("plain"), 0.0);
    assert_eq!(c.deflate_allocated(), (false, false));
    let mut client = ClientDeflate::new(DEFAULT);
    c.receive(
        &frame(true, true, TEXT, &client.compress(b"now compressed")),
        0.0,
    );
    assert_eq!(c.deflate_allocated(), (true, false));
    let mut out = Vec::new();
    c.send(MessageKind::Binary, &[1; 200], &mut out).unwrap();
    assert_eq!(c.deflate_allocated(), (true, true));
    // client_no_context_takeover: the inflater is dropped after each message.
    let p = params(false, true, 15, 15);
    let mut c = deflate_conn(&quiet(), p);
    let mut client = ClientDeflate::new(p);
    c.receive(&frame(true, true, TEXT, &client.compress(b"one")), 0.0);
    assert_eq!(c.deflate_allocated(), (false, false));
    assert_eq!(messages(&mut c)[0].data, b"one");
}

#[test]
fn final_block_in_a_message() {
    // A sender may end a message's stream with BFINAL: the next message
    // then starts a new stream. Bytes after the final block are refused.
    use flate2::{Compress, Compression, FlushCompress};
    let mut c = deflate_conn(&quiet(), DEFAULT);
    for word in ["first", "second"] {
        let mut z = Compress::new_with_window_bits(Compression::default(), false, 15);
        let mut out = Vec::with_capacity(256);
        z.compress_vec(word.as_bytes(), &mut out, FlushCompress::Finish)
            .unwrap();
        c.receive(&frame(true, true, TEXT, &out), 0.0);
    }
    let got: Vec<_> = messages(&mut c).into_iter().map(|m| m.data).collect();
    assert_eq!(got, [b"first".to_vec(), b"second".to_vec()]);
    for how in FEEDS {
        let mut z = Compress::new_with_window_bits(Compression::default(), false, 15);
        let mut out = Vec::with_capacity(256);
        z.compress_vec(b"end", &mut out, FlushCompress::Finish)
            .unwrap();
        out.extend_from_slice(&[0x00, 0x00, 0xff, 0xff]);
        let mut c = deflate_conn(&quiet(), DEFAULT);
        feed(&mut c, &frame(true, true, TEXT, &out), how);
        assert_eq!(c.close_status().map(|(c, _)| c.0), Some(1002), "{how:?}");
    }
}
