//! A body the caller writes itself (a file sent with `sendfile`): framed
//! like any body, the connection's keep-alive bookkeeping unchanged.

mod support;

use loop_http::{Phase, ResponseError, ResponsePart, SendError, ServerConnection, Step};
use std::sync::Arc;
use support::parse_response;

type Headers<'a> = [(&'a [u8], &'a [u8]); 1];
type NoHeaders = [(&'static [u8], &'static [u8]); 0];

fn request(c: &mut ServerConnection, req: &[u8]) -> u64 {
    c.receive(req);
    match c.poll() {
        Step::Request(head) => c.begin_request(head),
        other => panic!("expected a request, got {other:?}"),
    }
}

fn start(c: &mut ServerConnection, id: u64, out: &mut Vec<u8>, length: Option<&str>) {
    let result = match length {
        Some(n) => {
            let headers: Headers<'_> = [(b"content-length", n.as_bytes())];
            let part = ResponsePart::Start {
                status: 200,
                headers,
                trailers: false,
            };
            c.send(id, out, part, None, None, 0.0)
        }
        None => {
            let part: ResponsePart<'_, NoHeaders> = ResponsePart::Start {
                status: 200,
                headers: [],
                trailers: false,
            };
            c.send(id, out, part, None, None, 0.0)
        }
    };
    assert_eq!(result, Ok(None));
}

/// Frame a file of `size` bytes, "write" it (`pattern`), and end the body.
fn send_file(
    c: &mut ServerConnection,
    id: u64,
    out: &mut Vec<u8>,
    size: u64,
) -> Result<Option<bool>, SendError> {
    let len = c.file_len(id, size);
    let part: ResponsePart<'_, NoHeaders> = ResponsePart::File { len };
    assert_eq!(c.send(id, out, part, None, None, 0.0), Ok(None));
    out.resize(out.len() + len as usize, b'f');
    let end: ResponsePart<'_, NoHeaders> = ResponsePart::Body {
        data: b"",
        more: false,
    };
    c.send(id, out, end, None, None, 0.0)
}

fn conn() -> ServerConnection {
    ServerConnection::new(Arc::new(Default::default()), 0.0)
}

#[test]
fn a_declared_length_is_sent_and_the_connection_kept() {
    let mut c = conn();
    let mut out = Vec::new();
    let id = request(&mut c, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    start(&mut c, id, &mut out, Some("5"));
    assert_eq!(send_file(&mut c, id, &mut out, 5), Ok(Some(true)));
    let (resp, used) = parse_response(&out, false).expect("response");
    assert_eq!(used, out.len());
    assert_eq!(resp.body, b"fffff");
    assert_eq!(c.phase(), Phase::Idle);
}

#[test]
fn a_longer_file_is_cut_to_the_declared_length() {
    let mut c = conn();
    let mut out = Vec::new();
    let id = request(&mut c, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    start(&mut c, id, &mut out, Some("3"));
    assert_eq!(c.file_len(id, 10), 3);
    assert_eq!(send_file(&mut c, id, &mut out, 10), Ok(Some(true)));
    let (resp, used) = parse_response(&out, false).expect("response");
    assert_eq!((resp.body.as_slice(), used), (&b"fff"[..], out.len()));
}

#[test]
fn a_shorter_file_cannot_end_the_response() {
    let mut c = conn();
    let mut out = Vec::new();
    let id = request(&mut c, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    start(&mut c, id, &mut out, Some("10"));
    assert_eq!(
        send_file(&mut c, id, &mut out, 4),
        Err(SendError::Invalid(ResponseError::TooShort))
    );
    let part: ResponsePart<'_, NoHeaders> = ResponsePart::File { len: 7 };
    assert_eq!(
        c.send(id, &mut out, part, None, None, 0.0),
        Err(SendError::Invalid(ResponseError::TooLong))
    );
}

#[test]
fn without_a_length_the_file_is_one_chunk() {
    let mut c = conn();
    let mut out = Vec::new();
    let id = request(&mut c, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    start(&mut c, id, &mut out, None);
    assert_eq!(send_file(&mut c, id, &mut out, 20), Ok(Some(true)));
    let (resp, used) = parse_response(&out, false).expect("response");
    assert_eq!(resp.framing, "chunked");
    assert_eq!((resp.body.len(), used), (20, out.len()));
}

#[test]
fn body_after_a_file_chunk_closes_it_first() {
    let mut c = conn();
    let mut out = Vec::new();
    let id = request(&mut c, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    start(&mut c, id, &mut out, None);
    let part: ResponsePart<'_, NoHeaders> = ResponsePart::File { len: 2 };
    assert_eq!(c.send(id, &mut out, part, None, None, 0.0), Ok(None));
    out.extend_from_slice(b"ff");
    let more: ResponsePart<'_, NoHeaders> = ResponsePart::Body {
        data: b"xy",
        more: false,
    };
    assert_eq!(c.send(id, &mut out, more, None, None, 0.0), Ok(Some(true)));
    let (resp, used) = parse_response(&out, false).expect("response");
    assert_eq!((resp.body.as_slice(), used), (&b"ffxy"[..], out.len()));
}

#[test]
fn head_takes_no_file_bytes() {
    let mut c = conn();
    let mut out = Vec::new();
    let id = request(&mut c, b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n");
    start(&mut c, id, &mut out, Some("9"));
    assert_eq!(c.file_len(id, 9), 0);
    assert_eq!(send_file(&mut c, id, &mut out, 9), Ok(Some(true)));
    let (resp, used) = parse_response(&out, true).expect("response");
    assert!(resp.body.is_empty());
    assert_eq!(used, out.len());
}

#[test]
fn a_file_before_the_start_is_refused() {
    let mut c = conn();
    let mut out = Vec::new();
    let id = request(&mut c, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let part: ResponsePart<'_, NoHeaders> = ResponsePart::File { len: 1 };
    assert_eq!(
        c.send(id, &mut out, part, None, None, 0.0),
        Err(SendError::NotStarted)
    );
}
