//! Property tests: (a) splitting valid input anywhere changes nothing,
//! (b) arbitrary bytes never panic and keep the API's invariants (this is
//! also the fuzz smoke test for machines without nightly), (c) encoded
//! responses read back to the same body.

mod support;

use loop_http::{Event, Limits, ParseError, RequestInfo, RequestParser, ResponseEncoder, Version};
use proptest::prelude::*;

/// 384 cases, or `PROPTEST_CASES` when set (for long local runs).
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(384);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

// --- feeding ---------------------------------------------------------------

/// A request as observed through events: head fields, merged body, ended?
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    head: String,
    body: Vec<u8>,
    ended: bool,
}

#[derive(Debug, PartialEq, Eq)]
struct Run {
    seen: Vec<Seen>,
    error: Option<ParseError>,
}

/// Feed `input` in pieces cut at `cuts` (sorted, deduplicated internally),
/// keeping unconsumed bytes as a real caller does. Checks the API contract
/// on every call.
fn feed(input: &[u8], cuts: &[usize], limits: &Limits) -> Run {
    let mut points: Vec<usize> = cuts.iter().map(|&c| c.min(input.len())).collect();
    points.push(input.len());
    points.sort_unstable();
    points.dedup();

    let mut parser = RequestParser::new(limits.clone());
    let mut held = Vec::new();
    let mut run = Run {
        seen: Vec::new(),
        error: None,
    };
    let mut fed = 0;
    let mut pieces = points.into_iter();
    loop {
        let result = parser.parse(&held);
        let (n, ev) = match result {
            Ok(ok) => ok,
            Err(err) => {
                assert_eq!(parser.parse(&held).unwrap_err(), err, "poisoned");
                run.error = Some(err);
                return run;
            }
        };
        assert!(n <= held.len(), "consumed {n} of {}", held.len());
        match ev {
            Some(Event::Head(h)) => {
                assert!(
                    run.seen.last().map_or(true, |s| s.ended),
                    "head inside a request"
                );
                assert!(parser.in_body());
                // Names are lower-case tokens, values trimmed.
                for (name, value) in h.headers() {
                    assert!(!name.is_empty() && !name.iter().any(u8::is_ascii_uppercase));
                    assert!(!value.starts_with(b" ") && !value.ends_with(b" "));
                }
                run.seen.push(Seen {
                    head: format!("{h:?} path={:?} query={:?}", h.path(), h.query()),
                    body: Vec::new(),
                    ended: false,
                });
            }
            Some(Event::Body(r)) => {
                assert!(r.start < r.end && r.end <= n, "range {r:?} consumed {n}");
                let cur = run.seen.last_mut().expect("body after head");
                assert!(!cur.ended);
                cur.body.extend_from_slice(&held[r]);
                assert_eq!(parser.body_received(), cur.body.len() as u64);
            }
            Some(Event::End) => {
                let cur = run.seen.last_mut().expect("end after head");
                assert!(!cur.ended);
                cur.ended = true;
                assert!(!parser.in_body());
            }
            None => {
                held.drain(..n);
                // Asking again without new bytes changes nothing.
                let again = parser.parse(&held).expect("no error without new input");
                assert!(again.0 == 0 && again.1.is_none());
                match pieces.next() {
                    Some(end) => {
                        held.extend_from_slice(&input[fed..end]);
                        fed = end;
                        continue;
                    }
                    None => return run,
                }
            }
        }
        held.drain(..n);
    }
}

// --- (a) valid requests ----------------------------------------------------

#[derive(Debug, Clone)]
enum Body {
    None,
    Length(Vec<u8>),
    Chunked {
        chunks: Vec<Vec<u8>>,
        ext: bool,
        trailers: Vec<(String, String)>,
    },
}

#[derive(Debug, Clone)]
struct Req {
    empty_lines: usize,
    method: String,
    target: String,
    http10: bool,
    headers: Vec<(String, String)>,
    body: Body,
}

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,15}".prop_filter(
        "framing headers are chosen separately",
        |n| {
            !["host", "content-length", "transfer-encoding"]
                .contains(&n.to_ascii_lowercase().as_str())
        },
    )
}

fn value() -> impl Strategy<Value = String> {
    // VCHAR, SP and HTAB inside; the parser trims the ends.
    "[ -~\t]{0,30}"
}

fn body() -> impl Strategy<Value = Body> {
    let bytes = proptest::collection::vec(any::<u8>(), 1..200);
    prop_oneof![
        Just(Body::None),
        bytes.clone().prop_map(Body::Length),
        (
            proptest::collection::vec(bytes, 0..5),
            any::<bool>(),
            proptest::collection::vec((name(), value()), 0..3),
        )
            .prop_map(|(chunks, ext, trailers)| Body::Chunked {
                chunks,
                ext,
                trailers
            }),
    ]
}

fn request() -> impl Strategy<Value = Req> {
    (
        0..3usize,
        prop_oneof![
            Just("GET".to_string()),
            Just("POST".to_string()),
            Just("HEAD".to_string()),
            Just("OPTIONS".to_string()),
            "[A-Z][A-Za-z0-9-]{0,10}".prop_filter("no CONNECT", |m| m != "CONNECT"),
        ],
        prop_oneof![
            "/[A-Za-z0-9._~%!$&'()*+,;=:@/-]{0,30}(\\?[A-Za-z0-9=&%/?]{0,20})?",
            "http://[a-z]{1,10}(:[0-9]{1,4})?(/[a-z/]{0,10})?(\\?[a-z=]{0,5})?",
        ],
        any::<bool>(),
        proptest::collection::vec((name(), value()), 0..6),
        body(),
    )
        .prop_map(|(empty_lines, method, target, http10, headers, mut body)| {
            if http10 && matches!(body, Body::Chunked { .. }) {
                body = Body::None; // Transfer-Encoding is refused in 1.0
            }
            Req {
                empty_lines,
                method,
                target,
                http10,
                headers,
                body,
            }
        })
}

impl Req {
    fn bytes(&self) -> Vec<u8> {
        let mut out = "\r\n".repeat(self.empty_lines).into_bytes();
        let version = if self.http10 { "HTTP/1.0" } else { "HTTP/1.1" };
        out.extend_from_slice(
            format!(
                "{} {} {version}\r\nHost: example.com\r\n",
                self.method, self.target
            )
            .as_bytes(),
        );
        for (n, v) in &self.headers {
            out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        match &self.body {
            Body::None => out.extend_from_slice(b"\r\n"),
            Body::Length(b) => {
                out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", b.len()).as_bytes());
                out.extend_from_slice(b);
            }
            Body::Chunked {
                chunks,
                ext,
                trailers,
            } => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                for c in chunks {
                    let ext = if *ext { ";a=b;c" } else { "" };
                    out.extend_from_slice(format!("{:x}{ext}\r\n", c.len()).as_bytes());
                    out.extend_from_slice(c);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n");
                for (n, v) in trailers {
                    out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
                }
                out.extend_from_slice(b"\r\n");
            }
        }
        out
    }

    fn body_bytes(&self) -> Vec<u8> {
        match &self.body {
            Body::None => Vec::new(),
            Body::Length(b) => b.clone(),
            Body::Chunked { chunks, .. } => chunks.concat(),
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// (a) Valid pipelined requests parse the same however they are split,
    /// and match what was sent.
    #[test]
    fn splitting_changes_nothing(
        reqs in proptest::collection::vec(request(), 1..4),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let input: Vec<u8> = reqs.iter().flat_map(Req::bytes).collect();
        let limits = Limits::default();
        let whole = feed(&input, &[], &limits);
        prop_assert_eq!(&whole.error, &None);
        prop_assert_eq!(whole.seen.len(), reqs.len());
        for (seen, req) in whole.seen.iter().zip(&reqs) {
            prop_assert!(seen.ended);
            prop_assert_eq!(&seen.body, &req.body_bytes());
            let target = format!("target: {:?}", req.target);
            prop_assert!(seen.head.contains(&target), "{} lacks {}", seen.head, target);
        }
        let cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        let split = feed(&input, &cuts, &limits);
        prop_assert_eq!(split, whole);
        // Byte by byte too.
        let every: Vec<usize> = (0..input.len()).collect();
        prop_assert_eq!(feed(&input, &every, &limits).seen.len(), reqs.len());
    }

    /// (b) Arbitrary bytes: no panic, contract kept, and the outcome does not
    /// depend on how the bytes were split.
    #[test]
    fn arbitrary_bytes(
        input in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..16),
    ) {
        let limits = Limits { max_request_line: 64, max_header_bytes: 256, max_headers: 8, max_body: Some(300), max_chunk_line: 16, max_trailer_bytes: 64, max_chunk_extensions: 32 };
        let cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        prop_assert_eq!(feed(&input, &cuts, &limits), feed(&input, &[], &limits));
    }

    /// (b) Valid requests with a few bytes changed: the interesting edge of
    /// the grammar, where arbitrary bytes rarely reach.
    #[test]
    fn mutated_requests(
        req in request(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), prop::sample::select(&b"\r\n :;\t\x00\x7f0aA,\xff"[..]), 0..3u8), 1..4),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut input = req.bytes();
        for (at, byte, kind) in edits {
            let at = at.index(input.len() + 1);
            match kind {
                0 => input.insert(at, byte),
                1 if at < input.len() => input[at] = byte,
                _ if at < input.len() => { input.remove(at); }
                _ => input.push(byte),
            }
        }
        let limits = Limits::default();
        let cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        prop_assert_eq!(feed(&input, &cuts, &limits), feed(&input, &[], &limits));
    }
}

// --- (c) responses -----------------------------------------------------------

#[derive(Debug, Clone)]
struct Resp {
    http10: bool,
    is_head: bool,
    keep_alive: bool,
    status: u16,
    headers: Vec<(String, String)>,
    with_length: bool,
    trailers: Option<Vec<(String, String)>>,
    pieces: Vec<Vec<u8>>,
}

fn response() -> impl Strategy<Value = Resp> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just(101u16), Just(204), Just(304), 200..600u16],
        proptest::collection::vec((name(), "[!-~]([ -~\t]{0,20}[!-~])?"), 0..5).prop_map(|h| {
            h.into_iter()
                .filter(|(n, _)| {
                    !["connection", "date", "server"].contains(&n.to_ascii_lowercase().as_str())
                })
                .collect()
        }),
        any::<bool>(),
        proptest::option::of(proptest::collection::vec((name(), "[!-~]{1,10}"), 0..3)),
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..5),
    )
        .prop_map(
            |(http10, is_head, keep_alive, status, headers, with_length, trailers, pieces)| Resp {
                http10,
                is_head,
                keep_alive,
                status,
                headers,
                with_length,
                trailers,
                pieces,
            },
        )
}

proptest! {
    #![proptest_config(config())]

    /// (c) Whatever the encoder writes, a client reads the same body back.
    #[test]
    fn responses_read_back(r in response()) {
        let req = RequestInfo {
            version: if r.http10 { Version::Http10 } else { Version::Http11 },
            is_head: r.is_head,
            keep_alive: r.keep_alive,
        };
        let body: Vec<u8> = r.pieces.concat();
        let length = body.len().to_string();
        let mut headers: Vec<(&[u8], &[u8])> = r.headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())).collect();
        if r.with_length {
            headers.push((b"content-length", length.as_bytes()));
        }
        let mut out = Vec::new();
        let mut enc = ResponseEncoder::start(&mut out, req, r.status, headers, r.trailers.is_some(), Some(b"Sun, 06 Nov 1994 08:49:37 GMT"), Some(b"ferroloop"), &Default::default()).unwrap();
        for piece in &r.pieces {
            enc.body(&mut out, piece).unwrap();
        }
        let trailers = r.trailers.clone().unwrap_or_default();
        enc.finish(&mut out, trailers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()))).unwrap();

        let (resp, used) = support::parse_response(&out, r.is_head).map_err(TestCaseError::fail)?;
        prop_assert_eq!(used, out.len());
        prop_assert_eq!(resp.status, r.status);
        let no_body = r.is_head || r.status < 200 || r.status == 204 || r.status == 304;
        prop_assert_eq!(enc.has_body(), !no_body);
        prop_assert_eq!(&resp.body, if no_body { &[][..] } else { &body[..] });
        prop_assert!(resp.count("content-length") <= 1 && resp.count("transfer-encoding") <= 1);
        prop_assert!(resp.count("date") == 1 && resp.count("server") == 1);
        for (n, v) in &r.headers {
            prop_assert!(resp.headers.iter().any(|(rn, rv)| rn == n && rv == v), "{} missing", n);
        }
        if enc.is_chunked() {
            prop_assert!(!r.http10);
            prop_assert_eq!(resp.trailers, trailers);
        }
        if enc.keep_alive() {
            // A persistent connection needs a self-delimited body.
            prop_assert!(resp.framing != "close");
            prop_assert!(r.keep_alive && r.status != 101);
        }
        if r.http10 && !no_body && !r.with_length {
            prop_assert_eq!(resp.framing, "close");
            prop_assert!(!enc.keep_alive());
        }
    }
}
