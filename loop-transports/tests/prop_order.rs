//! Property: whatever the write sizes and the mix of write calls, the peer
//! receives exactly the bytes written, in order.

mod common;

use common::*;
use loop_transports::{StreamConfig, WaterMarks};
use proptest::prelude::*;
use std::sync::Arc;

#[derive(Clone, Debug)]
enum Op {
    Write(usize),
    Lines(Vec<usize>),
    Chunk(usize),
    SharedChunk(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0usize..70_000).prop_map(Op::Write),
        prop::collection::vec(0usize..20_000, 0..6).prop_map(Op::Lines),
        (0usize..70_000).prop_map(Op::Chunk),
        (0usize..5_000).prop_map(Op::SharedChunk),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_writes_arrive_intact_and_in_order(
        ops in prop::collection::vec(op(), 1..24),
        high in 0i64..200_000,
        turn_every in 1usize..5,
    ) {
        let config = StreamConfig {
            water_marks: WaterMarks::new(Some(high), None).unwrap(),
            ..StreamConfig::default()
        };
        let mut d = Driver::new(64 * 1024).unwrap();
        let (t, log, peer) = driven_pair(&mut d, &config, |_| {});
        small_buffers(&t, &peer);
        let reader = read_to_end_in_thread(peer);
        let mut expected = Vec::new();
        let mut seed = 0u8;
        for (i, op) in ops.iter().enumerate() {
            seed = seed.wrapping_add(1);
            match op {
                Op::Write(n) => {
                    let data = pattern(*n, seed);
                    t.write(&data).unwrap();
                    expected.extend_from_slice(&data);
                }
                Op::Lines(sizes) => {
                    let bufs: Vec<Vec<u8>> = sizes
                        .iter()
                        .enumerate()
                        .map(|(j, n)| pattern(*n, seed.wrapping_add(j as u8)))
                        .collect();
                    let slices: Vec<&[u8]> = bufs.iter().map(|b| &b[..]).collect();
                    t.writelines(&slices).unwrap();
                    for b in &bufs {
                        expected.extend_from_slice(b);
                    }
                }
                Op::Chunk(n) => {
                    let data = pattern(*n, seed);
                    expected.extend_from_slice(&data);
                    t.write_chunk(data).unwrap();
                }
                Op::SharedChunk(n) => {
                    let data: Arc<[u8]> = pattern(*n, seed).into();
                    expected.extend_from_slice(&data);
                    t.write_chunk(data).unwrap();
                }
            }
            if i % turn_every == 0 {
                d.turn(Some(std::time::Duration::ZERO)).unwrap();
            }
        }
        t.close();
        prop_assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
        let got = reader.join().unwrap();
        prop_assert_eq!(got.len(), expected.len());
        prop_assert!(got == expected);
        let log = log.borrow();
        // Pauses and resumes alternate, starting with a pause.
        let flow: Vec<_> = log.calls.iter().filter(|c| matches!(**c, "pause" | "resume")).collect();
        for (i, call) in flow.iter().enumerate() {
            prop_assert_eq!(**call, if i % 2 == 0 { "pause" } else { "resume" });
        }
    }
}
