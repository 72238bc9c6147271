//! Properties of the session: how input is cut never changes what is
//! decoded; arbitrary bytes never panic; what the server encodes decodes
//! back; permessage-deflate round-trips under every negotiated parameter.

mod support;

use loop_ws::{Config, Connection, DeflateParams, Message, MessageKind, State};
use proptest::prelude::*;
use support::*;

/// A message the test client sends: its kind, bytes, how many fragments,
/// whether pings are put between fragments, and whether it is compressed.
#[derive(Clone, Debug)]
struct Plan {
    kind: MessageKind,
    data: Vec<u8>,
    fragments: usize,
    ping: bool,
    compressed: bool,
    mask: [u8; 4],
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 0..600),
        ".{0,200}",
        1usize..5,
        any::<bool>(),
        any::<bool>(),
        any::<[u8; 4]>(),
    )
        .prop_map(|(is_text, bytes, s, fragments, ping, compressed, mask)| {
            let (kind, data) = if is_text {
                (MessageKind::Text, s.into_bytes())
            } else {
                (MessageKind::Binary, bytes)
            };
            Plan {
                kind,
                data,
                fragments,
                ping,
                compressed,
                mask,
            }
        })
}

fn params() -> impl Strategy<Value = DeflateParams> {
    (any::<bool>(), any::<bool>(), 8u8..=15, 9u8..=15).prop_map(|(a, b, s, c)| DeflateParams {
        server_no_context_takeover: a,
        client_no_context_takeover: b,
        server_max_window_bits: s,
        client_max_window_bits: c,
    })
}

/// The wire bytes of `plans` (compressed ones only if `deflate`).
fn encode(plans: &[Plan], mut deflate: Option<&mut ClientDeflate>) -> Vec<u8> {
    let mut wire = Vec::new();
    for p in plans {
        let compressed = p.compressed && deflate.is_some();
        let payload = match (&mut deflate, compressed) {
            (Some(d), true) => d.compress(&p.data),
            _ => p.data.clone(),
        };
        let step = payload.len().div_ceil(p.fragments).max(1);
        let pieces: Vec<&[u8]> = if payload.is_empty() {
            vec![&[]]
        } else {
            payload.chunks(step).collect()
        };
        for (i, piece) in pieces.iter().enumerate() {
            let opcode = match (i, p.kind) {
                (0, MessageKind::Text) => TEXT,
                (0, MessageKind::Binary) => BINARY,
                _ => CONT,
            };
            let fin = i + 1 == pieces.len();
            wire.extend(frame_with(
                fin,
                compressed && i == 0,
                opcode,
                piece,
                Some(p.mask),
            ));
            if p.ping && !fin {
                wire.extend(frame(true, false, PING, &p.mask));
            }
        }
    }
    wire
}

/// Decode `wire` cut at `cuts`; messages, own output, final state.
fn decode(
    wire: &[u8],
    cuts: &[usize],
    deflate: Option<DeflateParams>,
) -> (Vec<Message>, Vec<u8>, State) {
    let mut c = Connection::new(&quiet(), deflate, 0.0);
    let mut at = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|&x| x % (wire.len() + 1)).collect();
    cuts.sort_unstable();
    for cut in cuts.into_iter().chain([wire.len()]) {
        c.receive(&wire[at..cut.max(at)], 0.0);
        at = cut.max(at);
    }
    let mut out = Vec::new();
    c.take_output(&mut out);
    (messages(&mut c), out, c.state())
}

proptest! {
    #[test]
    fn any_split_decodes_the_same(
        plans in prop::collection::vec(plan(), 0..6),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
        deflate in prop::option::of(params()),
    ) {
        let mut client = deflate.map(ClientDeflate::new);
        let wire = encode(&plans, client.as_mut());
        let whole = decode(&wire, &[], deflate);
        // Everything is valid: all messages arrive.
        let expected: Vec<Message> = plans.iter().map(|p| msg(p.kind, &p.data)).collect();
        prop_assert_eq!(&whole.0, &expected);
        prop_assert_eq!(whole.2, State::Open);
        prop_assert_eq!(decode(&wire, &cuts, deflate), whole.clone());
        // Byte by byte, the extreme cut.
        let every: Vec<usize> = (0..wire.len()).collect();
        prop_assert_eq!(decode(&wire, &every, deflate), whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        deflate in prop::option::of(params()),
        queue in 1usize..4,
    ) {
        let config = Config { max_queue: queue, max_message_size: 300, max_frame_size: 200, ..quiet() };
        let mut c = Connection::new(&config, deflate, 0.0);
        let mut at = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|&x| x % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut out = Vec::new();
        for cut in cuts.into_iter().chain([bytes.len()]) {
            c.receive(&bytes[at..cut.max(at)], 0.0);
            at = cut.max(at);
            let _ = c.next_message();
            c.take_output(&mut out);
        }
        c.receive_eof();
        while c.next_message().is_some() {}
        c.take_output(&mut out);
        prop_assert_eq!(c.state(), State::Closed);
        prop_assert!(c.close_status().is_some());
        // The server's output is well-formed frames, a close at most once
        // and last.
        let frames = parse_frames(&out);
        let closes = frames.iter().filter(|f| f.opcode == CLOSE).count();
        prop_assert!(closes <= 1);
        if closes == 1 {
            prop_assert_eq!(frames.last().map(|f| f.opcode), Some(CLOSE));
        }
    }

    #[test]
    fn encoder_output_decodes(
        plans in prop::collection::vec(plan(), 0..8),
        deflate in prop::option::of(params()),
    ) {
        let mut c = Connection::new(&quiet(), deflate, 0.0);
        let mut out = Vec::new();
        for p in &plans {
            c.send(p.kind, &p.data, &mut out).unwrap();
        }
        let mut client = deflate.map(ClientDeflate::new);
        let frames = parse_frames(&out);
        let got = server_messages(&frames, client.as_mut());
        let expected: Vec<Message> = plans.iter().map(|p| msg(p.kind, &p.data)).collect();
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn deflate_round_trip(
        messages_in in prop::collection::vec(prop::collection::vec(0u8..8, 0..3000), 1..6),
        p in params(),
    ) {
        // Small alphabets so that the data compresses and refers back.
        let mut client = ClientDeflate::new(p);
        let mut c = Connection::new(&quiet(), Some(p), 0.0);
        let mut out = Vec::new();
        for m in &messages_in {
            c.receive(&frame(true, true, BINARY, &client.compress(m)), 0.0);
            let got = c.next_message().unwrap();
            prop_assert_eq!(&got.data, m);
            c.send(MessageKind::Binary, &got.data, &mut out).unwrap();
        }
        let sent: Vec<Vec<u8>> = server_messages(&parse_frames(&out), Some(&mut client))
            .into_iter().map(|m| m.data).collect();
        prop_assert_eq!(sent, messages_in);
    }
}
