//! Request parsing end to end through the public API: one test per rule,
//! each fed both in one piece and byte by byte.

use loop_http::{BodyFraming, Event, Limits, ParseError, RequestHead, RequestParser, Version};

/// What feeding some input produced.
#[derive(Debug)]
struct Outcome {
    requests: Vec<(RequestHead, Vec<u8>)>,
    /// A head was returned without its End yet.
    partial: Option<(RequestHead, Vec<u8>)>,
    error: Option<ParseError>,
    /// Bytes held but not consumed at the end.
    held: usize,
}

/// Feed `input` `step` bytes at a time, as a caller that keeps unconsumed
/// bytes and appends new ones would.
fn feed(input: &[u8], step: usize, limits: &Limits) -> Outcome {
    let mut parser = RequestParser::new(limits.clone());
    let mut held: Vec<u8> = Vec::new();
    let mut out = Outcome {
        requests: Vec::new(),
        partial: None,
        error: None,
        held: 0,
    };
    let mut fed = 0;
    loop {
        match parser.parse(&held) {
            Err(e) => {
                // Poisoned: the same error again, whatever comes next.
                assert_eq!(
                    parser
                        .parse(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                        .unwrap_err(),
                    e
                );
                assert_eq!(parser.parse(b"").unwrap_err(), e);
                assert_eq!(parser.error(), Some(&e));
                out.error = Some(e);
                return out;
            }
            Ok((n, ev)) => {
                assert!(n <= held.len());
                match ev {
                    Some(Event::Head(h)) => {
                        assert!(out.partial.is_none());
                        assert!(parser.in_body());
                        out.partial = Some((h, Vec::new()));
                    }
                    Some(Event::Body(r)) => {
                        assert!(r.end <= n && r.start <= r.end);
                        assert!(!r.is_empty(), "empty body events are noise");
                        out.partial
                            .as_mut()
                            .expect("body after head")
                            .1
                            .extend_from_slice(&held[r]);
                    }
                    Some(Event::End) => {
                        let done = out.partial.take().expect("end after head");
                        assert_eq!(parser.body_received(), done.1.len() as u64);
                        assert!(!parser.in_body());
                        out.requests.push(done);
                    }
                    None => {
                        held.drain(..n);
                        if fed == input.len() {
                            out.held = held.len();
                            return out;
                        }
                        let next = (fed + step).min(input.len());
                        held.extend_from_slice(&input[fed..next]);
                        fed = next;
                        continue;
                    }
                }
                held.drain(..n);
            }
        }
    }
}

fn summary(o: &Outcome) -> String {
    let reqs: Vec<String> = o
        .requests
        .iter()
        .map(|(h, b)| format!("{h:?} body={:?}", String::from_utf8_lossy(b)))
        .collect();
    format!(
        "{reqs:?} partial={:?} error={:?} held={}",
        o.partial.as_ref().map(|p| format!("{:?}", p.0)),
        o.error,
        o.held
    )
}

/// Parse in one piece and byte by byte; both must agree.
fn run_with(input: &[u8], limits: &Limits) -> Outcome {
    let whole = feed(input, input.len().max(1), limits);
    for step in [1, 2, 7] {
        let split = feed(input, step, limits);
        assert_eq!(
            summary(&split),
            summary(&whole),
            "step {step} differs for {:?}",
            String::from_utf8_lossy(input)
        );
    }
    whole
}

fn run(input: &[u8]) -> Outcome {
    run_with(input, &Limits::default())
}

/// The single complete request in `input`.
fn one(input: &[u8]) -> (RequestHead, Vec<u8>) {
    let mut o = run(input);
    assert!(
        o.error.is_none(),
        "{:?} for {:?}",
        o.error,
        String::from_utf8_lossy(input)
    );
    assert_eq!(o.requests.len(), 1, "{}", summary(&o));
    o.requests.pop().unwrap()
}

fn reject_with(input: &[u8], limits: &Limits, err: ParseError, status: u16) {
    let o = run_with(input, limits);
    assert_eq!(
        o.error,
        Some(err.clone()),
        "{:?}: {}",
        String::from_utf8_lossy(input),
        summary(&o)
    );
    assert_eq!(err.status(), status);
}

fn reject(input: &[u8], err: ParseError, status: u16) {
    reject_with(input, &Limits::default(), err, status)
}

/// A 1.1 request with Host and `extra` header lines, then `body`.
fn req(extra: &str, body: &str) -> Vec<u8> {
    format!("POST /p HTTP/1.1\r\nHost: example.com\r\n{extra}\r\n{body}").into_bytes()
}

// --- accepted shapes ---------------------------------------------------

#[test]
fn simple_get() {
    let (h, body) = one(b"GET /a/b?x=1&y HTTP/1.1\r\nHost: example.com\r\nX-Thing:  v a l \t\r\nAccept: */*\r\n\r\n");
    assert_eq!(h.method(), b"GET");
    assert_eq!(h.target(), b"/a/b?x=1&y");
    assert_eq!(h.path(), b"/a/b");
    assert_eq!(h.query(), b"x=1&y");
    assert_eq!(h.version, Version::Http11);
    assert_eq!(h.body, BodyFraming::Empty);
    assert!(h.keep_alive && !h.expect_continue && !h.upgrade && !h.is_head());
    let headers: Vec<(&[u8], &[u8])> = h.headers().collect();
    assert_eq!(
        headers,
        [
            (&b"host"[..], &b"example.com"[..]),
            (b"x-thing", b"v a l"),
            (b"accept", b"*/*")
        ]
    );
    assert_eq!(h.headers().len(), 3);
    assert_eq!(h.header(b"x-thing"), Some(&b"v a l"[..]));
    assert_eq!(h.header(b"missing"), None);
    assert!(h
        .as_bytes()
        .starts_with(b"GET /a/b?x=1&y HTTP/1.1\r\nhost: example.com\r\nx-thing:"));
    assert!(body.is_empty());
}

#[test]
fn head_method_and_http10() {
    let (h, _) = one(b"HEAD / HTTP/1.0\r\n\r\n");
    assert!(h.is_head());
    assert_eq!(h.version, Version::Http10);
    assert!(!h.keep_alive);
    let (h, _) = one(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
    assert!(h.keep_alive);
}

#[test]
fn target_forms() {
    let (h, _) = one(b"GET http://example.com:8080/p/q?z HTTP/1.1\r\nHost: other\r\n\r\n");
    assert_eq!((h.path(), h.query()), (&b"/p/q"[..], &b"z"[..]));
    let (h, _) = one(b"GET https://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n");
    assert_eq!((h.path(), h.query()), (&b"/"[..], &b""[..]));
    let (h, _) = one(b"OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n");
    assert_eq!(
        (h.path(), h.query(), h.target()),
        (&b"*"[..], &b""[..], &b"*"[..])
    );
}

#[test]
fn content_length_body() {
    let (h, body) = one(&req("Content-Length: 11\r\n", "hello world"));
    assert_eq!(h.body, BodyFraming::Length(11));
    assert_eq!(body, b"hello world");
    let (h, body) = one(&req("Content-Length: 0\r\n", ""));
    assert_eq!(h.body, BodyFraming::Empty);
    assert!(body.is_empty());
    // Identical duplicates, on two lines or as a list, are one length.
    assert_eq!(
        one(&req("Content-Length: 3\r\nContent-Length: 3\r\n", "abc")).1,
        b"abc"
    );
    assert_eq!(one(&req("Content-Length: 3, 3\r\n", "abc")).1, b"abc");
}

#[test]
fn chunked_body() {
    let (h, body) = one(&req(
        "Transfer-Encoding: chunked\r\n",
        "5;name=value\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: yes\r\n\r\n",
    ));
    assert_eq!(h.body, BodyFraming::Chunked);
    assert_eq!(body, b"hello world");
}

#[test]
fn empty_body_end_comes_from_the_next_call() {
    let mut p = RequestParser::default();
    assert!(p.is_idle());
    let input = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    let (n, ev) = p.parse(input).unwrap();
    assert_eq!(n, input.len());
    assert!(matches!(ev, Some(Event::Head(_))));
    assert!(p.in_body() && !p.is_idle());
    let (n, ev) = p.parse(b"").unwrap();
    assert_eq!(n, 0);
    assert!(matches!(ev, Some(Event::End)));
    assert!(!p.in_body() && p.is_idle());
    assert_eq!(p.parse(b"").unwrap().0, 0);
    assert!(p.is_idle());
    // A lone CR (maybe the start of an empty line) is a byte seen.
    assert!(matches!(p.parse(b"\r").unwrap(), (0, None)));
    assert!(!p.is_idle());
}

#[test]
fn length_body_state() {
    let mut p = RequestParser::default();
    let (n, _) = p
        .parse(b"PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nab")
        .unwrap();
    assert_eq!(n, 46);
    let (n, ev) = p.parse(b"ab").unwrap();
    assert_eq!(
        (n, matches!(ev, Some(Event::Body(ref r)) if *r == (0..2))),
        (2, true)
    );
    assert_eq!(p.body_received(), 2);
    assert!(matches!(p.parse(b"").unwrap(), (0, None)));
    let (n, ev) = p.parse(b"cdGET").unwrap();
    assert_eq!(
        (n, matches!(ev, Some(Event::Body(ref r)) if *r == (0..2))),
        (2, true)
    );
    assert_eq!(p.body_received(), 4);
    assert!(matches!(p.parse(b"GET").unwrap(), (0, Some(Event::End))));
    assert!(!p.in_body());
    // The next head is partly here: not idle after looking at it.
    assert!(matches!(p.parse(b"GET").unwrap(), (0, None)));
    assert!(!p.is_idle());
    assert_eq!(p.body_received(), 4, "kept until the next head");
}

#[test]
fn pipelining() {
    let mut input = Vec::new();
    input.extend_from_slice(b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\n");
    input.extend_from_slice(b"POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc");
    input.extend_from_slice(
        b"POST /3 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n",
    );
    input.extend_from_slice(b"\r\nHEAD /4 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    input.extend_from_slice(b"GET /5 HTTP/1.1\r\nHo");
    let o = run(&input);
    assert!(o.error.is_none());
    let got: Vec<(&[u8], &[u8])> = o
        .requests
        .iter()
        .map(|(h, b)| (h.target(), &b[..]))
        .collect();
    assert_eq!(
        got,
        [
            (&b"/1"[..], &b""[..]),
            (b"/2", b"abc"),
            (b"/3", b"de"),
            (b"/4", b"")
        ]
    );
    assert!(!o.requests[3].0.keep_alive);
    assert_eq!(o.held, 19, "the partial fifth head stays with the caller");
}

#[test]
fn leading_empty_lines_are_bounded() {
    let ok = format!(
        "{}GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        "\r\n".repeat(loop_http::MAX_LEADING_EMPTY_LINES)
    );
    one(ok.as_bytes());
    let bad = format!(
        "{}GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        "\r\n".repeat(loop_http::MAX_LEADING_EMPTY_LINES + 1)
    );
    reject(bad.as_bytes(), ParseError::TooManyEmptyLines, 400);
    reject(
        b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        ParseError::BareLf,
        400,
    );
    reject(
        b"\r\rGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        ParseError::BareCr,
        400,
    );
}

#[test]
fn connection_expect_upgrade() {
    let (h, _) = one(&req("Connection: close\r\n", ""));
    assert!(!h.keep_alive);
    let (h, _) = one(&req("Expect: 100-continue\r\nContent-Length: 2\r\n", "ok"));
    assert!(h.expect_continue);
    let (h, _) = one(&req("Expect: 100-continue\r\n", ""));
    assert!(!h.expect_continue, "nothing to continue without a body");
    let (h, _) = one(&req("Connection: Upgrade\r\nUpgrade: websocket\r\n", ""));
    assert!(h.upgrade);
}

// --- framing rules (RFC 9112 §6) -----------------------------------------

#[test]
fn content_length_with_transfer_encoding() {
    reject(
        &req(
            "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            "0\r\n\r\n",
        ),
        ParseError::ContentLengthWithTransferEncoding,
        400,
    );
    reject(
        &req(
            "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
            "0\r\n\r\n",
        ),
        ParseError::ContentLengthWithTransferEncoding,
        400,
    );
}

#[test]
fn transfer_encoding_in_http10() {
    reject(
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ParseError::TransferEncodingInHttp10,
        400,
    );
}

#[test]
fn bad_content_length() {
    reject(
        &req("Content-Length: 5\r\nContent-Length: 6\r\n", ""),
        ParseError::ConflictingContentLength,
        400,
    );
    reject(
        &req("Content-Length: 5, 6\r\n", ""),
        ParseError::ConflictingContentLength,
        400,
    );
    for bad in [
        "-5",
        "+5",
        "5a",
        "0x5",
        "5 5",
        "",
        "99999999999999999999",
        "5,",
    ] {
        reject(
            &req(&format!("Content-Length: {bad}\r\n"), ""),
            ParseError::InvalidContentLength,
            400,
        );
    }
}

#[test]
fn transfer_codings() {
    let te = |v: &str| req(&format!("Transfer-Encoding: {v}\r\n"), "0\r\n\r\n");
    reject(
        &te("gzip, chunked"),
        ParseError::UnsupportedTransferEncoding,
        501,
    );
    reject(
        &te("identity"),
        ParseError::UnsupportedTransferEncoding,
        501,
    );
    reject(
        &te("chunked, gzip"),
        ParseError::InvalidTransferEncoding,
        400,
    );
    reject(
        &te("chunked, chunked"),
        ParseError::InvalidTransferEncoding,
        400,
    );
    reject(
        &req(
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            "",
        ),
        ParseError::InvalidTransferEncoding,
        400,
    );
    assert_eq!(one(&te("CHUNKED")).0.body, BodyFraming::Chunked);
}

#[test]
fn bad_chunks() {
    let chunked = |body: &str| req("Transfer-Encoding: chunked\r\n", body);
    for bad in [
        "",
        "-1",
        "+1",
        "0x1",
        " 1",
        "1 ",
        "1 ;a",
        "g",
        "10000000000000000",
        "1_0",
    ] {
        reject(
            &chunked(&format!("{bad}\r\nx\r\n0\r\n\r\n")),
            ParseError::InvalidChunkSize,
            400,
        );
    }
    reject(
        &chunked("1;\x7f\r\nx\r\n0\r\n\r\n"),
        ParseError::InvalidChunkExtension,
        400,
    );
    reject(
        &chunked("1\r\nxy\r\n0\r\n\r\n"),
        ParseError::InvalidChunkTerminator,
        400,
    );
    reject(
        &chunked("1\r\nx\n0\r\n\r\n"),
        ParseError::InvalidChunkTerminator,
        400,
    );
    reject(&chunked("1\nx\r\n0\r\n\r\n"), ParseError::BareLf, 400);
    reject(
        &chunked("0\r\nBad Trailer: x\r\n\r\n"),
        ParseError::InvalidHeaderName,
        400,
    );
}

#[test]
fn chunk_line_limit() {
    let limits = Limits::default();
    let ext = "a".repeat(limits.max_chunk_line - 2);
    let ok = req(
        "Transfer-Encoding: chunked\r\n",
        &format!("1;{ext}\r\nx\r\n0\r\n\r\n"),
    );
    assert!(run(&ok).error.is_none());
    let long = req(
        "Transfer-Encoding: chunked\r\n",
        &format!("1;{ext}a\r\nx\r\n0\r\n\r\n"),
    );
    reject(&long, ParseError::ChunkLineTooLong, 400);
    let endless = req(
        "Transfer-Encoding: chunked\r\n",
        &"1".repeat(limits.max_chunk_line + 2),
    );
    reject(&endless, ParseError::ChunkLineTooLong, 400);
}

#[test]
fn chunk_extensions_limit() {
    let limits = Limits {
        max_chunk_extensions: 100,
        ..Limits::default()
    };
    // 1 KiB of extensions over a 4-byte body: each line is short, the sum
    // is not.
    let chunks: String = (0..4)
        .map(|_| format!("1;{}\r\nx\r\n", "e".repeat(255)))
        .collect();
    let many = req(
        "Transfer-Encoding: chunked\r\n",
        &format!("{chunks}0\r\n\r\n"),
    );
    reject_with(&many, &limits, ParseError::ChunkExtensionsTooLarge, 400);
    // At the bound exactly: accepted (the last chunk's count too).
    let exact = req(
        "Transfer-Encoding: chunked\r\n",
        &format!("1;{}\r\nx\r\n0;{}\r\n\r\n", "e".repeat(49), "e".repeat(49)),
    );
    assert!(run_with(&exact, &limits).error.is_none());
    let over = req(
        "Transfer-Encoding: chunked\r\n",
        &format!("1;{}\r\nx\r\n0;{}\r\n\r\n", "e".repeat(49), "e".repeat(50)),
    );
    reject_with(&over, &limits, ParseError::ChunkExtensionsTooLarge, 400);
}

#[test]
fn trailer_limit() {
    let limits = Limits {
        max_trailer_bytes: 64,
        ..Limits::default()
    };
    let trailer = |n: usize| {
        req(
            "Transfer-Encoding: chunked\r\n",
            &format!("0\r\nx: {}\r\n\r\n", "v".repeat(n)),
        )
    };
    // "x: " + n + CRLF + CRLF = n + 7 bytes.
    assert!(run_with(&trailer(57), &limits).error.is_none());
    reject_with(&trailer(58), &limits, ParseError::TrailersTooLarge, 431);
    let endless = req(
        "Transfer-Encoding: chunked\r\n",
        &format!("0\r\nx: {}", "v".repeat(100)),
    );
    reject_with(&endless, &limits, ParseError::TrailersTooLarge, 431);
}

#[test]
fn body_limit() {
    let limits = Limits {
        max_body: Some(10),
        ..Limits::default()
    };
    assert!(
        run_with(&req("Content-Length: 10\r\n", "0123456789"), &limits)
            .error
            .is_none()
    );
    reject_with(
        &req("Content-Length: 11\r\n", ""),
        &limits,
        ParseError::BodyTooLarge,
        413,
    );
    let chunked = |body: &str| req("Transfer-Encoding: chunked\r\n", body);
    assert!(
        run_with(&chunked("5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n"), &limits)
            .error
            .is_none()
    );
    reject_with(
        &chunked("5\r\n01234\r\n6\r\n"),
        &limits,
        ParseError::BodyTooLarge,
        413,
    );
    // Unbounded when None.
    let unbounded = Limits {
        max_body: None,
        ..Limits::default()
    };
    let o = run_with(&req("Content-Length: 99999999999\r\n", "abc"), &unbounded);
    assert!(o.error.is_none() && o.partial.is_some());
}

// --- head syntax (RFC 9112 §2–5) -------------------------------------------

#[test]
fn bare_cr_anywhere_in_the_head() {
    reject(
        b"GET /\r HTTP/1.1\r\nHost: a\r\n\r\n",
        ParseError::BareCr,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n",
        ParseError::BareCr,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHo\rst: a\r\n\r\n",
        ParseError::BareCr,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\r\n",
        ParseError::BareCr,
        400,
    );
}

#[test]
fn bare_lf_is_not_a_line_end() {
    reject(b"GET / HTTP/1.1\nHost: a\r\n\r\n", ParseError::BareLf, 400);
    reject(b"GET / HTTP/1.1\r\nHost: a\n\r\n", ParseError::BareLf, 400);
    reject(b"GET / HTTP/1.1\r\nHost: a\r\n\n", ParseError::BareLf, 400);
}

#[test]
fn obs_fold() {
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n",
        ParseError::ObsFold,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n\t2\r\n\r\n",
        ParseError::ObsFold,
        400,
    );
    // Whitespace between the request line and the first field (RFC 9112 §2.2).
    reject(
        b"GET / HTTP/1.1\r\n Host: a\r\n\r\n",
        ParseError::ObsFold,
        400,
    );
}

#[test]
fn field_names_and_values() {
    reject(
        b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
        ParseError::WhitespaceBeforeColon,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\nX\t: 1\r\n\r\n",
        ParseError::WhitespaceBeforeColon,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\nX\x01Y: 1\r\n\r\n",
        ParseError::InvalidHeaderName,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\nX Y: 1\r\n\r\n",
        ParseError::InvalidHeaderName,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\n: 1\r\n\r\n",
        ParseError::InvalidHeaderName,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n",
        ParseError::InvalidHeaderName,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
        ParseError::InvalidHeaderValue,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fb\r\n\r\n",
        ParseError::InvalidHeaderValue,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x0bb\r\n\r\n",
        ParseError::InvalidHeaderValue,
        400,
    );
    let (h, _) = one(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\tb\x80\r\n\r\n");
    assert_eq!(h.header(b"x"), Some(&b"a\tb\x80"[..]));
}

#[test]
fn host_rules() {
    reject(b"GET / HTTP/1.1\r\n\r\n", ParseError::MissingHost, 400);
    reject(
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
        ParseError::MultipleHost,
        400,
    );
    reject(
        b"GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n",
        ParseError::MultipleHost,
        400,
    );
    reject(
        b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
        ParseError::InvalidHost,
        400,
    );
    one(b"GET / HTTP/1.0\r\n\r\n");
    one(b"GET / HTTP/1.1\r\nHost:\r\n\r\n");
    one(b"GET / HTTP/1.1\r\nHost: [::1]:8000\r\n\r\n");
}

#[test]
fn methods() {
    reject(
        b" / HTTP/1.1\r\nHost: a\r\n\r\n",
        ParseError::InvalidMethod,
        400,
    );
    reject(
        b"G@T / HTTP/1.1\r\nHost: a\r\n\r\n",
        ParseError::InvalidMethod,
        400,
    );
    reject(
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        ParseError::InvalidMethod,
        400,
    );
    reject(
        b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
        ParseError::ConnectNotSupported,
        501,
    );
    let (h, _) = one(b"PATCH / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(h.method(), b"PATCH");
}

#[test]
fn targets() {
    for bad in [
        &b"GET /a\x01 HTTP/1.1\r\n"[..],
        b"GET /\xff HTTP/1.1\r\n",
        b"GET a HTTP/1.1\r\n",
        b"GET * HTTP/1.1\r\n",
        b"GET /#f HTTP/1.1\r\n",
        b"GET ftp://a/ HTTP/1.1\r\n",
        b"GET http:// HTTP/1.1\r\n",
    ] {
        let mut input = bad.to_vec();
        input.extend_from_slice(b"Host: a\r\n\r\n");
        reject(&input, ParseError::InvalidTarget, 400);
    }
}

#[test]
fn request_line_shape() {
    reject(
        b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
        ParseError::InvalidRequestLine,
        400,
    );
    reject(b"GET /\r\n\r\n", ParseError::InvalidRequestLine, 400);
    reject(
        b"GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
        ParseError::InvalidVersion,
        400,
    );
    reject(
        b"GET / HTTP/1\r\nHost: a\r\n\r\n",
        ParseError::InvalidVersion,
        400,
    );
    reject(
        b"GET / HTTP/1.2\r\nHost: a\r\n\r\n",
        ParseError::UnsupportedVersion,
        505,
    );
}

// --- sizes ---------------------------------------------------------------

#[test]
fn request_line_limit() {
    let limits = Limits {
        max_request_line: 64,
        ..Limits::default()
    };
    let line = |len: usize| {
        let target = "x".repeat(len - "GET / HTTP/1.1".len());
        format!("GET /{target} HTTP/1.1\r\nHost: a\r\n\r\n").into_bytes()
    };
    assert!(run_with(&line(64), &limits).error.is_none());
    reject_with(&line(65), &limits, ParseError::RequestLineTooLong, 414);
    // Incomplete: 414 once max+2 bytes hold no LF, not before.
    let partial = format!("GET /{}", "x".repeat(60));
    assert_eq!(partial.len(), 65);
    assert!(run_with(partial.as_bytes(), &limits).error.is_none());
    reject_with(
        format!("{partial}x").as_bytes(),
        &limits,
        ParseError::RequestLineTooLong,
        414,
    );
}

#[test]
fn head_size_limit() {
    let limits = Limits {
        max_header_bytes: 100,
        ..Limits::default()
    };
    let head = |n: usize| {
        // "GET / HTTP/1.1\r\nHost: a\r\nX: " = 28 bytes, then n, then 4 for CRLFCRLF.
        format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n", "v".repeat(n)).into_bytes()
    };
    assert_eq!(head(68).len(), 100);
    assert!(run_with(&head(68), &limits).error.is_none());
    reject_with(&head(69), &limits, ParseError::HeadTooLarge, 431);
    // Incomplete beyond the limit.
    let mut endless = b"GET / HTTP/1.1\r\nHost: a\r\nX: ".to_vec();
    endless.extend_from_slice(&[b'v'; 73]);
    assert_eq!(endless.len(), 101);
    reject_with(&endless, &limits, ParseError::HeadTooLarge, 431);
    // The default limit too.
    let mut big = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    while big.len() <= Limits::default().max_header_bytes {
        big.extend_from_slice(
            b"X-Filler: 0123456789012345678901234567890123456789012345678901234567890123456789\r\n",
        );
    }
    let o = feed(
        &big,
        big.len(),
        &Limits {
            max_headers: 10_000,
            ..Limits::default()
        },
    );
    assert_eq!(o.error, Some(ParseError::HeadTooLarge));
}

#[test]
fn header_count_limit() {
    let limits = Limits {
        max_headers: 3,
        ..Limits::default()
    };
    assert!(run_with(
        b"GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 2\r\n\r\n",
        &limits
    )
    .error
    .is_none());
    reject_with(
        b"GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 2\r\nD: 3\r\n\r\n",
        &limits,
        ParseError::TooManyHeaders,
        431,
    );
    // Refused as soon as the extra line arrives, before the head ends.
    reject_with(
        b"GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 2\r\nD: 3\r\n",
        &limits,
        ParseError::TooManyHeaders,
        431,
    );
    let many: String = (0..101).map(|i| format!("X-{i}: v\r\n")).collect();
    reject(
        format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n").as_bytes(),
        ParseError::TooManyHeaders,
        431,
    );
}

#[test]
fn incomplete_input_needs_more() {
    let full = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\n";
    for cut in 0..full.len() {
        let o = feed(&full[..cut], 1, &Limits::default());
        assert!(
            o.error.is_none() && o.requests.is_empty(),
            "cut {cut}: {}",
            summary(&o)
        );
    }
}
