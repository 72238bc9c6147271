//! Arbitrary bytes through the request parser, cut into pieces the way a
//! socket would deliver them. Beyond "no panic", the oracle is that the
//! outcome must not depend on the cuts: the same events, bodies and error
//! as when the whole input arrives at once.

#![no_main]

use libfuzzer_sys::fuzz_target;
use loop_http::{Event, Limits, ParseError, RequestParser};

#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Head(String),
    Body(Vec<u8>),
    End,
}

/// Feed `input`, cut after each length in `cuts` (cycled), keeping the
/// unconsumed bytes as a caller must. Checks the API contract as it goes.
fn feed(input: &[u8], cuts: &[u8], limits: &Limits) -> (Vec<Seen>, Option<ParseError>) {
    let mut parser = RequestParser::new(limits.clone());
    let mut held = Vec::new();
    let mut seen = Vec::new();
    let mut fed = 0;
    let mut cut = cuts.iter().cycle();
    loop {
        match parser.parse(&held) {
            Err(err) => {
                assert_eq!(parser.parse(&held).unwrap_err(), err, "poisoned");
                return (seen, Some(err));
            }
            Ok((n, event)) => {
                assert!(n <= held.len());
                match event {
                    Some(Event::Head(head)) => seen.push(Seen::Head(format!("{head:?}"))),
                    Some(Event::Body(range)) => {
                        assert!(range.start < range.end && range.end <= n);
                        // Merge pieces: how the body was cut is not observable.
                        match seen.last_mut() {
                            Some(Seen::Body(body)) => body.extend_from_slice(&held[range]),
                            _ => seen.push(Seen::Body(held[range].to_vec())),
                        }
                    }
                    Some(Event::End) => seen.push(Seen::End),
                    None => {
                        held.drain(..n);
                        if fed == input.len() {
                            return (seen, None);
                        }
                        let step = cut.next().map_or(input.len(), |&c| usize::from(c) + 1);
                        let end = (fed + step).min(input.len());
                        held.extend_from_slice(&input[fed..end]);
                        fed = end;
                        continue;
                    }
                }
                held.drain(..n);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // The first bytes choose the cuts, the rest is the input.
    let Some((&ncuts, rest)) = data.split_first() else {
        return;
    };
    let ncuts = usize::from(ncuts % 16).min(rest.len());
    let (cuts, input) = rest.split_at(ncuts);
    // Small limits so the fuzzer reaches every bound quickly.
    let limits = Limits {
        max_request_line: 64,
        max_header_bytes: 256,
        max_headers: 8,
        max_body: Some(300),
        max_chunk_line: 16,
        max_trailer_bytes: 64,
    };
    let whole = feed(input, &[], &limits);
    if !cuts.is_empty() {
        assert_eq!(feed(input, cuts, &limits), whole);
    }
});
