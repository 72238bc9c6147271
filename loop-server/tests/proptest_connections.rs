//! The fuzz target's body (`fuzz/body/connections.rs`: whole connections
//! through the driver, scripted) on stable: over the seed scripts, and
//! over scripts proptest generates, from arbitrary bytes and from runs of
//! the operations a real client makes.

#[path = "../fuzz/body/connections.rs"]
mod body;

use proptest::prelude::*;

fn seed(name: &str) -> Vec<Vec<u8>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds/connections")
        .join(name);
    body::run(&std::fs::read(path).expect("a seed"))
}

fn text(wire: &[u8]) -> String {
    String::from_utf8_lossy(wire).into_owned()
}

#[test]
fn the_seeds_run_and_are_served() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/connections");
    for entry in std::fs::read_dir(dir).expect("seeds") {
        let script = std::fs::read(entry.expect("seed").path()).expect("a seed");
        body::run(&script);
    }
    // The harness is not vacuous: what the seeds ask for is answered.
    let got = text(&seed("keepalive")[0]);
    assert_eq!(got.matches("HTTP/1.1 200 OK").count(), 2, "{got}");
    let got = text(&seed("pipelined")[0]);
    assert_eq!(got.matches("HTTP/1.1 200 OK").count(), 3, "{got}");
    let got = text(&seed("continue")[1]);
    assert!(
        got.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK"),
        "{got}"
    );
    let got = seed("websocket").swap_remove(0);
    assert!(text(&got).starts_with("HTTP/1.1 101"), "{}", text(&got));
    // The echo of "hi", the pong, our close answering theirs.
    assert!(got.windows(4).any(|w| w == b"\x81\x02hi"), "{got:?}");
    assert!(got.windows(2).any(|w| w == b"\x8a\x00"), "{got:?}");
    assert!(got.ends_with(b"\x88\x02\x03\xe8"), "{got:?}");
    let got = text(&seed("wsdeny")[1]);
    assert!(got.starts_with("HTTP/1.1 403"), "{got}");
    let got = text(&seed("stream")[0]);
    assert!(
        got.starts_with("HTTP/1.1 200 OK") && got.ends_with("0\r\n\r\n"),
        "{got}"
    );
    let got = seed("errors");
    assert_eq!(got[0], b"", "the HTTP/2 preface gets no answer");
    assert!(
        text(&got[1]).starts_with("HTTP/1.1 400"),
        "{}",
        text(&got[1])
    );
    assert!(
        text(&got[2]).starts_with("HTTP/1.1 503"),
        "{}",
        text(&got[2])
    );
}

/// One operation: its byte (connection in the top bits) and its operands.
fn op() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Send a piece, cut somewhere.
        (0u8..3, any::<u8>(), any::<u8>()).prop_map(|(k, piece, cut)| vec![k << 5, piece, cut]),
        // Raw bytes.
        (0u8..3, proptest::collection::vec(any::<u8>(), 0..24)).prop_map(|(k, raw)| [
            vec![(k << 5) | 4, raw.len() as u8],
            raw
        ]
        .concat()),
        (0u8..3).prop_map(|k| vec![(k << 5) | 5]),
        Just(vec![6]),
        any::<u8>().prop_map(|s| vec![7, s]),
        (0u8..3).prop_map(|k| vec![(k << 5) | 8]),
        (0u8..3).prop_map(|k| vec![(k << 5) | 9]),
        (0u8..3).prop_map(|k| vec![(k << 5) | 10]),
        any::<bool>().prop_map(|keep| vec![11 | if keep { 0x10 } else { 0 }]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn scripted_clients(ops in proptest::collection::vec(op(), 0..40)) {
        body::run(&ops.concat());
    }

    #[test]
    fn arbitrary_scripts(script in proptest::collection::vec(any::<u8>(), 0..200)) {
        body::run(&script);
    }
}
