//! The response encoder's framing and keep-alive decisions, validation and
//! the fixed responses, checked through an independent response reader.

mod support;

use loop_http::{
    error_response, reason_phrase, DefaultHeaders, RequestInfo, ResponseEncoder, ResponseError,
    Version, CONTINUE_RESPONSE,
};
use support::{parse_response, Response};

type Headers<'a> = &'a [(&'a str, &'a str)];

const V11: RequestInfo = RequestInfo {
    version: Version::Http11,
    is_head: false,
    keep_alive: true,
};
const V11_CLOSE: RequestInfo = RequestInfo {
    version: Version::Http11,
    is_head: false,
    keep_alive: false,
};
const V10: RequestInfo = RequestInfo {
    version: Version::Http10,
    is_head: false,
    keep_alive: false,
};
const V10_KA: RequestInfo = RequestInfo {
    version: Version::Http10,
    is_head: false,
    keep_alive: true,
};
const HEAD11: RequestInfo = RequestInfo {
    version: Version::Http11,
    is_head: true,
    keep_alive: true,
};

fn pairs<'a>(h: Headers<'a>) -> impl Iterator<Item = (&'a [u8], &'a [u8])> {
    h.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()))
}

/// Encode a whole response; returns the bytes and the encoder.
fn encode(
    req: RequestInfo,
    status: u16,
    headers: Headers,
    trailers: bool,
    body: &[&[u8]],
    trailer_fields: Headers,
) -> (Vec<u8>, ResponseEncoder) {
    let mut out = Vec::new();
    let mut enc = ResponseEncoder::start(
        &mut out,
        req,
        status,
        pairs(headers),
        trailers,
        Some(b"Sun, 06 Nov 1994 08:49:37 GMT"),
        Some(b"ferroloop"),
        &DefaultHeaders::default(),
    )
    .expect("valid response");
    for piece in body {
        enc.body(&mut out, piece).expect("body fits");
    }
    enc.finish(&mut out, pairs(trailer_fields))
        .expect("complete");
    (out, enc)
}

fn read(out: &[u8], req: RequestInfo) -> Response {
    let (resp, used) = parse_response(out, req.is_head)
        .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(out)));
    assert_eq!(
        used,
        out.len(),
        "trailing bytes in {:?}",
        String::from_utf8_lossy(out)
    );
    resp
}

fn start_err(req: RequestInfo, status: u16, headers: Headers) -> ResponseError {
    let mut out = b"previous".to_vec();
    let err = ResponseEncoder::start(
        &mut out,
        req,
        status,
        pairs(headers),
        false,
        Some(b"d"),
        Some(b"s"),
        &DefaultHeaders::default(),
    )
    .unwrap_err();
    assert_eq!(out, b"previous", "nothing written on error");
    err
}

#[test]
fn content_length_framing() {
    let (out, enc) = encode(
        V11,
        200,
        &[("Content-Length", "11")],
        false,
        &[b"hello", b" world"],
        &[],
    );
    let r = read(&out, V11);
    assert_eq!(
        (r.status, r.reason.as_str(), r.framing),
        (200, "OK", "length")
    );
    assert_eq!(r.body, b"hello world");
    assert_eq!(r.header("content-length"), Some("11"));
    assert_eq!(r.count("content-length"), 1);
    assert!(enc.keep_alive() && !enc.is_chunked() && enc.has_body());
    assert_eq!(r.header("date"), Some("Sun, 06 Nov 1994 08:49:37 GMT"));
    assert_eq!(r.header("server"), Some("ferroloop"));
    assert_eq!(r.header("connection"), None);
}

#[test]
fn content_length_is_enforced() {
    let mut out = Vec::new();
    let mut enc = ResponseEncoder::start(
        &mut out,
        V11,
        200,
        pairs(&[("content-length", "3")]),
        false,
        None,
        None,
        &DefaultHeaders::default(),
    )
    .unwrap();
    assert_eq!(enc.remaining(), Some(3));
    let len = out.len();
    assert_eq!(enc.body(&mut out, b"abcd"), Err(ResponseError::TooLong));
    assert_eq!(out.len(), len, "nothing written");
    assert_eq!(
        ResponseError::TooLong.to_string(),
        "Response content longer than Content-Length"
    );
    enc.body(&mut out, b"ab").unwrap();
    assert_eq!(enc.remaining(), Some(1));
    assert_eq!(
        enc.finish(&mut out, pairs(&[])),
        Err(ResponseError::TooShort)
    );
    enc.body(&mut out, b"c").unwrap();
    enc.finish(&mut out, pairs(&[])).unwrap();
    assert!(enc.is_finished());
    assert_eq!(enc.body(&mut out, b"x"), Err(ResponseError::Finished));
    assert_eq!(
        enc.finish(&mut out, pairs(&[])),
        Err(ResponseError::Finished)
    );
}

#[test]
fn content_length_values() {
    let (out, _) = encode(
        V11,
        200,
        &[("content-length", "2"), ("Content-Length", "2")],
        false,
        &[b"ab"],
        &[],
    );
    assert_eq!(
        read(&out, V11).count("content-length"),
        1,
        "identical duplicates collapse"
    );
    assert_eq!(
        start_err(
            V11,
            200,
            &[("content-length", "2"), ("content-length", "3")]
        ),
        ResponseError::ConflictingContentLength
    );
    for bad in ["", "-1", "+1", "1a", "0x1", "1,1", "99999999999999999999"] {
        assert_eq!(
            start_err(V11, 200, &[("content-length", bad)]),
            ResponseError::InvalidContentLength,
            "{bad:?}"
        );
    }
}

#[test]
fn chunked_on_http11_without_length() {
    let (out, enc) = encode(
        V11,
        200,
        &[("content-type", "text/plain")],
        false,
        &[b"", b"ab", b"", b"cde"],
        &[],
    );
    assert!(enc.is_chunked());
    assert_eq!(enc.remaining(), None);
    let r = read(&out, V11);
    assert_eq!((r.framing, &r.body[..]), ("chunked", &b"abcde"[..]));
    assert!(
        out.ends_with(b"\r\n\r\n2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n"),
        "empty pieces write nothing"
    );
    assert!(enc.keep_alive());
}

#[test]
fn close_delimited_on_http10_without_length() {
    let (out, enc) = encode(V10, 200, &[], false, &[b"abc"], &[]);
    let r = read(&out, V10);
    assert_eq!((r.framing, &r.body[..]), ("close", &b"abc"[..]));
    assert!(!enc.keep_alive());
    assert_eq!(
        r.header("connection"),
        None,
        "1.0 without keep-alive closes by default"
    );
    // A 1.0 keep-alive request that cannot keep it is told so.
    let (out, enc) = encode(V10_KA, 200, &[], false, &[b"abc"], &[]);
    assert!(!enc.keep_alive());
    assert_eq!(read(&out, V10_KA).header("connection"), Some("close"));
}

#[test]
fn http10_keep_alive_with_length() {
    let (out, enc) = encode(V10_KA, 200, &[("content-length", "1")], false, &[b"x"], &[]);
    assert!(enc.keep_alive());
    assert_eq!(read(&out, V10_KA).header("connection"), Some("keep-alive"));
    // Not duplicated when the app says it.
    let (out, _) = encode(
        V10_KA,
        200,
        &[("content-length", "1"), ("Connection", "Keep-Alive")],
        false,
        &[b"x"],
        &[],
    );
    assert_eq!(read(&out, V10_KA).count("connection"), 1);
    // The app's transfer-encoding means nothing to a 1.0 client.
    let (out, enc) = encode(
        V10_KA,
        200,
        &[("transfer-encoding", "chunked")],
        false,
        &[b"xy"],
        &[],
    );
    let r = read(&out, V10_KA);
    assert_eq!(
        (r.framing, &r.body[..], enc.keep_alive()),
        ("close", &b"xy"[..], false)
    );
}

#[test]
fn head_responses_have_no_body() {
    let (out, enc) = encode(
        HEAD11,
        200,
        &[("content-length", "42")],
        false,
        &[b"dropped"],
        &[],
    );
    let r = read(&out, HEAD11);
    assert_eq!(
        r.header("content-length"),
        Some("42"),
        "length of the GET passed through"
    );
    assert!(r.body.is_empty() && !enc.has_body());
    assert!(out.ends_with(b"\r\n\r\n"));
    assert!(enc.keep_alive());
    let (out, _) = encode(
        HEAD11,
        200,
        &[("transfer-encoding", "chunked")],
        false,
        &[],
        &[],
    );
    let r = read(&out, HEAD11);
    assert_eq!(
        (r.header("transfer-encoding"), r.header("content-length")),
        (None, None)
    );
}

#[test]
fn no_content_and_not_modified() {
    let (out, enc) = encode(
        V11,
        204,
        &[("content-length", "5")],
        false,
        &[b"dropped"],
        &[],
    );
    let r = read(&out, V11);
    assert_eq!(
        (
            r.status,
            r.header("content-length"),
            r.header("transfer-encoding")
        ),
        (204, None, None)
    );
    assert!(r.body.is_empty() && enc.keep_alive());
    let (out, _) = encode(
        V11,
        304,
        &[("content-length", "5")],
        false,
        &[b"dropped"],
        &[],
    );
    let r = read(&out, V11);
    assert_eq!((r.status, r.header("content-length")), (304, Some("5")));
    let (out, _) = encode(V11, 304, &[], true, &[], &[("x", "y")]);
    assert_eq!(read(&out, V11).header("transfer-encoding"), None);
}

#[test]
fn switching_protocols() {
    let (out, enc) = encode(
        V11,
        101,
        &[("connection", "Upgrade"), ("upgrade", "websocket")],
        false,
        &[b"dropped"],
        &[],
    );
    let r = read(&out, V11);
    assert_eq!((r.status, r.reason.as_str()), (101, "Switching Protocols"));
    assert_eq!(r.count("connection"), 1);
    assert_eq!(
        (r.header("content-length"), r.header("transfer-encoding")),
        (None, None)
    );
    assert!(!enc.keep_alive(), "the connection leaves HTTP/1.1");
}

#[test]
fn trailers_force_chunked_on_http11() {
    let (out, enc) = encode(
        V11,
        200,
        &[("content-length", "2")],
        true,
        &[b"ab"],
        &[("x-checksum", "abc"), ("X-Other", "1")],
    );
    assert!(enc.is_chunked());
    let r = read(&out, V11);
    assert_eq!((r.framing, r.header("content-length")), ("chunked", None));
    assert_eq!(
        r.trailers,
        vec![
            ("x-checksum".into(), "abc".into()),
            ("X-Other".into(), "1".into())
        ]
    );
    // On 1.0 the trailers are dropped and the length stands.
    let (out, _) = encode(
        V10_KA,
        200,
        &[("content-length", "2")],
        true,
        &[b"ab"],
        &[("x-checksum", "abc")],
    );
    let r = read(&out, V10_KA);
    assert_eq!((r.framing, &r.body[..]), ("length", &b"ab"[..]));
}

#[test]
fn app_transfer_encoding() {
    let (out, _) = encode(
        V11,
        200,
        &[("Transfer-Encoding", "Chunked"), ("content-length", "3")],
        false,
        &[b"abc"],
        &[],
    );
    let r = read(&out, V11);
    assert_eq!(
        (
            r.framing,
            r.count("transfer-encoding"),
            r.header("content-length")
        ),
        ("chunked", 1, None)
    );
    assert_eq!(
        start_err(V11, 200, &[("transfer-encoding", "gzip")]),
        ResponseError::InvalidTransferEncoding
    );
    assert_eq!(
        start_err(V11, 200, &[("transfer-encoding", "gzip, chunked")]),
        ResponseError::InvalidTransferEncoding
    );
}

#[test]
fn connection_close_decisions() {
    // App closes: keep-alive off, its header not duplicated.
    let (out, enc) = encode(
        V11,
        200,
        &[("Connection", "close"), ("content-length", "0")],
        false,
        &[],
        &[],
    );
    assert!(!enc.keep_alive());
    assert_eq!(read(&out, V11).count("connection"), 1);
    // A 1.1 client that asked to close is answered with close (RFC 9112 §9.6).
    let (out, enc) = encode(V11_CLOSE, 200, &[("content-length", "0")], false, &[], &[]);
    assert!(!enc.keep_alive());
    assert_eq!(read(&out, V11_CLOSE).header("connection"), Some("close"));
}

#[test]
fn date_and_server() {
    let (out, _) = encode(
        V11,
        200,
        &[("Date", "app date"), ("Server", "app")],
        false,
        &[],
        &[],
    );
    let r = read(&out, V11);
    assert_eq!((r.count("date"), r.header("date")), (1, Some("app date")));
    assert_eq!((r.count("server"), r.header("server")), (1, Some("app")));
    let mut out = Vec::new();
    let mut enc = ResponseEncoder::start(
        &mut out,
        V11,
        200,
        pairs(&[]),
        false,
        None,
        None,
        &DefaultHeaders::default(),
    )
    .unwrap();
    enc.finish(&mut out, pairs(&[])).unwrap();
    let r = read(&out, V11);
    assert_eq!((r.header("date"), r.header("server")), (None, None));
    let mut out = Vec::new();
    let err = ResponseEncoder::start(
        &mut out,
        V11,
        200,
        pairs(&[]),
        false,
        None,
        Some(b"evil\r\nx: y"),
        &DefaultHeaders::default(),
    )
    .unwrap_err();
    assert_eq!((err, out.len()), (ResponseError::InvalidHeaderValue, 0));
}

#[test]
fn response_splitting_is_refused() {
    use ResponseError::*;
    for (name, value, err) in [
        ("X", "a\r\nSet-Cookie: evil=1", InvalidHeaderValue),
        ("X", "a\nb", InvalidHeaderValue),
        ("X", "a\rb", InvalidHeaderValue),
        ("X", "a\0b", InvalidHeaderValue),
        ("X", "a\x7fb", InvalidHeaderValue),
        ("X", "a\x1bb", InvalidHeaderValue),
        ("content-length", "1\r\n", InvalidHeaderValue),
        ("X\r\nY", "1", InvalidHeaderName),
        ("X Y", "1", InvalidHeaderName),
        ("X:", "1", InvalidHeaderName),
        ("", "1", InvalidHeaderName),
        ("Caf\u{e9}", "1", InvalidHeaderName),
    ] {
        assert_eq!(
            start_err(V11, 200, &[("ok", "fine"), (name, value)]),
            err,
            "{name:?}: {value:?}"
        );
    }
    // HTAB and obs-text are fine in values.
    encode(V11, 200, &[("X", "a\tb \u{e9}")], false, &[], &[]);
    // Trailers are checked too, and a bad one leaves `out` untouched.
    let mut out = Vec::new();
    let mut enc = ResponseEncoder::start(
        &mut out,
        V11,
        200,
        pairs(&[]),
        true,
        None,
        None,
        &DefaultHeaders::default(),
    )
    .unwrap();
    let len = out.len();
    assert_eq!(
        enc.finish(&mut out, pairs(&[("x", "1"), ("y", "a\r\nb")])),
        Err(InvalidHeaderValue)
    );
    assert_eq!(out.len(), len);
    assert_eq!(
        enc.finish(&mut out, pairs(&[("bad name", "1")])),
        Err(InvalidHeaderName)
    );
    enc.finish(&mut out, pairs(&[("x", "1")])).unwrap();
}

#[test]
fn status_validation() {
    for bad in [0, 99, 100, 102, 103, 199, 1000, u16::MAX] {
        assert_eq!(start_err(V11, bad, &[]), ResponseError::InvalidStatus(bad));
    }
    let (out, _) = encode(V11, 999, &[], false, &[], &[]);
    assert!(
        out.starts_with(b"HTTP/1.1 999 \r\n"),
        "unknown status: empty reason"
    );
    let (out, _) = encode(V11, 418, &[], false, &[], &[]);
    assert!(out.starts_with(b"HTTP/1.1 418 \r\n"));
    let (out, _) = encode(V11, 404, &[], false, &[], &[]);
    assert!(out.starts_with(b"HTTP/1.1 404 Not Found\r\n"));
}

#[test]
fn error_responses() {
    let mut out = Vec::new();
    error_response(
        &mut out,
        431,
        Some(b"Sun, 06 Nov 1994 08:49:37 GMT"),
        Some(b"ferroloop"),
        &DefaultHeaders::default(),
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "HTTP/1.1 431 Request Header Fields Too Large\r\n\
         content-type: text/plain; charset=utf-8\r\n\
         content-length: 31\r\n\
         connection: close\r\n\
         date: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
         server: ferroloop\r\n\
         \r\n\
         Request Header Fields Too Large"
    );
    for status in [400, 413, 414, 501, 505] {
        let mut out = Vec::new();
        error_response(
            &mut out,
            status,
            None,
            Some(b"bad\r\nvalue"),
            &DefaultHeaders::default(),
        );
        let r = read(&out, V11);
        assert_eq!(r.status, status);
        assert_eq!(r.body, reason_phrase(status).as_bytes());
        assert_eq!(
            (r.header("connection"), r.header("server")),
            (Some("close"), None)
        );
    }
}

#[test]
fn continue_response() {
    let (r, used) = parse_response(CONTINUE_RESPONSE, false).unwrap();
    assert_eq!(
        (r.status, r.reason.as_str(), used),
        (100, "Continue", CONTINUE_RESPONSE.len())
    );
}

#[test]
fn request_info_of_head() {
    let mut p = loop_http::RequestParser::default();
    let (_, ev) = p
        .parse(b"HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .unwrap();
    let Some(loop_http::Event::Head(h)) = ev else {
        panic!("head expected")
    };
    assert_eq!(
        RequestInfo::of(&h),
        RequestInfo {
            version: Version::Http10,
            is_head: true,
            keep_alive: true
        }
    );
}

#[test]
fn default_headers_go_on_every_response() {
    let defaults =
        DefaultHeaders::new(pairs(&[("X-Frame", " deny "), ("via", "1.1 edge")])).unwrap();
    assert_eq!(defaults.as_bytes(), b"x-frame: deny\r\nvia: 1.1 edge\r\n");
    let mut out = Vec::new();
    let mut enc = ResponseEncoder::start(
        &mut out,
        V11,
        200,
        pairs(&[("content-length", "0"), ("via", "app")]),
        false,
        None,
        Some(b"ferroloop"),
        &defaults,
    )
    .unwrap();
    enc.finish(&mut out, pairs(&[])).unwrap();
    let r = read(&out, V11);
    assert_eq!(r.header("x-frame"), Some("deny"));
    assert_eq!(r.header("server"), Some("ferroloop"));
    let mut out = Vec::new();
    error_response(&mut out, 400, None, None, &defaults);
    let r = read(&out, V11);
    assert_eq!((r.status, r.header("x-frame")), (400, Some("deny")));
    for bad in [
        ("x", "a\r\nb"),
        ("bad name", "1"),
        ("", "1"),
        ("x", "nul\0"),
    ] {
        assert!(DefaultHeaders::new(pairs(&[bad])).is_err(), "{bad:?}");
    }
    for framing in [
        "Content-Length",
        "transfer-encoding",
        "CONNECTION",
        "trailer",
        "upgrade",
    ] {
        assert!(
            matches!(
                DefaultHeaders::new(pairs(&[(framing, "1")])),
                Err(ResponseError::FramingHeader(_))
            ),
            "{framing}"
        );
    }
    assert!(DefaultHeaders::default().is_empty());
}
