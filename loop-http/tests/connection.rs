//! The server connection state machine, rule by rule: keep-alive, pipelining,
//! `100 Continue`, unread bodies, deadlines, failing, draining, closing.

mod support;

use loop_http::{
    BodyRead, ConnectionConfig, DrainAction, Expired, FailOutcome, ParseError, Phase, ResponsePart,
    SendError, ServerConnection, Step, TimerAction,
};
use std::sync::Arc;
use support::parse_response;

const NO_HEADERS: [(&[u8], &[u8]); 0] = [];

type NoHeaders = [(&'static [u8], &'static [u8]); 0];

/// A response head without headers.
fn head_part(status: u16, trailers: bool) -> ResponsePart<'static, NoHeaders> {
    ResponsePart::Start {
        status,
        headers: NO_HEADERS,
        trailers,
    }
}

fn body_part(data: &[u8], more: bool) -> ResponsePart<'_, NoHeaders> {
    ResponsePart::Body { data, more }
}

fn conn() -> ServerConnection {
    conn_with(ConnectionConfig::default())
}

fn conn_with(config: ConnectionConfig) -> ServerConnection {
    ServerConnection::new(Arc::new(config), 0.0)
}

/// Poll until the next request head; panics on anything else.
fn next_request(c: &mut ServerConnection) -> u64 {
    match c.poll() {
        Step::Request(head) => c.begin_request(head),
        other => panic!("expected a request, got {other:?}"),
    }
}

/// A whole `200` response with this body, at time `now`; whether it kept
/// the connection.
fn respond(c: &mut ServerConnection, id: u64, out: &mut Vec<u8>, body: &[u8], now: f64) -> bool {
    let len = body.len().to_string();
    let headers = [(&b"content-length"[..], len.as_bytes())];
    let start = ResponsePart::Start {
        status: 200,
        headers,
        trailers: false,
    };
    assert_eq!(c.send(id, out, start, None, None, now), Ok(None));
    let part = body_part(body, false);
    match c.send(id, out, part, None, None, now) {
        Ok(Some(kept)) => kept,
        other => panic!("response did not complete: {other:?}"),
    }
}

fn read_all_body(c: &mut ServerConnection, id: u64, out: &mut Vec<u8>) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        match c.read_body(id, out) {
            BodyRead::Data(data, more) => {
                body.extend_from_slice(&data);
                if !more {
                    return body;
                }
            }
            BodyRead::Wait { .. } => match c.poll() {
                Step::Deliver => {
                    let (data, more) = c.take_delivery().expect("an exchange");
                    body.extend_from_slice(&data);
                    if !more {
                        return body;
                    }
                }
                other => panic!("body incomplete: {other:?}"),
            },
            BodyRead::Disconnect => panic!("disconnected"),
        }
    }
}

fn statuses(mut out: &[u8]) -> Vec<u16> {
    let mut found = Vec::new();
    while !out.is_empty() {
        let (resp, used) = parse_response(out, false).expect("a valid response");
        found.push(resp.status);
        out = &out[used..];
    }
    found
}

#[test]
fn http11_keeps_the_connection_and_10_closes_it() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    assert!(respond(&mut c, id, &mut out, b"hi", 1.0));
    assert_eq!(c.phase(), Phase::Idle);

    let mut c = conn();
    c.receive(b"GET / HTTP/1.0\r\n\r\n");
    let id = next_request(&mut c);
    assert!(!respond(&mut c, id, &mut out, b"hi", 1.0));
    assert_eq!(c.phase(), Phase::Closing);

    let mut c = conn();
    c.receive(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let id = next_request(&mut c);
    assert!(respond(&mut c, id, &mut out, b"hi", 1.0));

    let mut c = conn();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let id = next_request(&mut c);
    assert!(!respond(&mut c, id, &mut out, b"hi", 1.0));
}

#[test]
fn the_app_closing_the_connection_is_honoured() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    let start = ResponsePart::Start {
        status: 200,
        headers: [(&b"connection"[..], &b"close"[..])],
        trailers: false,
    };
    assert_eq!(c.send(id, &mut out, start, None, None, 0.0), Ok(None));
    let end = body_part(b"", false);
    assert_eq!(c.send(id, &mut out, end, None, None, 0.0), Ok(Some(false)));
    assert_eq!(c.phase(), Phase::Closing);
}

#[test]
fn pipelined_requests_are_served_one_at_a_time_in_order() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
    let first = next_request(&mut c);
    // The second head waits while the first is in flight.
    assert!(matches!(c.poll(), Step::Wait));
    assert!(!c.has_pipelined_input());
    assert!(respond(&mut c, first, &mut out, b"one", 0.0));
    assert!(c.has_pipelined_input());
    let second = next_request(&mut c);
    assert_ne!(first, second);
    assert_eq!(
        c.current(second).map(|ex| ex.head().path()),
        Some(&b"/2"[..])
    );
    assert!(respond(&mut c, second, &mut out, b"two", 0.0));
    assert_eq!(statuses(&out), [200, 200]);
    // An old exchange cannot touch the new one.
    let late = body_part(b"x", false);
    assert_eq!(
        c.send(first, &mut out, late, None, None, 0.0),
        Err(SendError::Completed)
    );
    assert_eq!(c.read_body(first, &mut out), BodyRead::Disconnect);
}

#[test]
fn pipelined_input_is_bounded_while_a_request_runs() {
    let mut c = conn_with(ConnectionConfig {
        pipeline_buffer: 100,
        ..ConnectionConfig::default()
    });
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    next_request(&mut c);
    assert!(c.wants_read());
    c.receive(&[b'G'; 100]);
    assert!(!c.wants_read(), "reading pauses at the pipeline bound");
}

#[test]
fn continue_goes_out_on_the_first_read_of_a_11_request() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
    let id = next_request(&mut c);
    assert!(!c.wants_read(), "the body is not read before the app asks");
    assert_eq!(
        c.read_body(id, &mut out),
        BodyRead::Wait {
            continue_written: true
        }
    );
    assert_eq!(out, b"HTTP/1.1 100 Continue\r\n\r\n");
    assert!(c.wants_read());
    // A second read while waiting writes no second 100.
    assert_eq!(
        c.read_body(id, &mut out),
        BodyRead::Wait {
            continue_written: false
        }
    );
    c.receive(b"abc");
    assert!(matches!(c.poll(), Step::Deliver));
    assert_eq!(c.take_delivery(), Some((b"abc".to_vec(), false)));
}

#[test]
fn no_continue_once_the_response_started_or_for_10() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
    let id = next_request(&mut c);
    let start = head_part(200, false);
    c.send(id, &mut out, start, None, None, 0.0).expect("start");
    assert_eq!(
        c.read_body(id, &mut out),
        BodyRead::Wait {
            continue_written: false
        }
    );
    assert!(!out.starts_with(b"HTTP/1.1 100"));
    // The response ends without the body: the client's framing is
    // unknown, so the connection closes.
    let end = body_part(b"", false);
    assert_eq!(c.send(id, &mut out, end, None, None, 0.0), Ok(Some(false)));

    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc");
    let id = next_request(&mut c);
    assert_eq!(read_all_body(&mut c, id, &mut out), b"abc");
    assert!(out.is_empty(), "HTTP/1.0 never gets a 100");
}

#[test]
fn unread_small_body_is_discarded_and_the_connection_kept() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab");
    let id = next_request(&mut c);
    assert!(respond(&mut c, id, &mut out, b"", 0.0));
    assert_eq!(c.phase(), Phase::Discard);
    c.receive(b"cdeGET /next HTTP/1.1\r\nHost: a\r\n\r\n");
    let next = next_request(&mut c);
    assert_eq!(
        c.current(next).map(|ex| ex.head().path()),
        Some(&b"/next"[..])
    );
}

#[test]
fn unread_large_body_closes_the_connection() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\n\r\n");
    let id = next_request(&mut c);
    assert!(!respond(&mut c, id, &mut out, b"", 0.0));
    assert_eq!(c.phase(), Phase::Closing);

    // A chunked body that turns out larger than the discard limit.
    let mut c = conn_with(ConnectionConfig {
        discard_limit: 4,
        ..ConnectionConfig::default()
    });
    c.receive(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
    let id = next_request(&mut c);
    assert!(respond(&mut c, id, &mut out, b"", 0.0));
    c.receive(b"a\r\n0123456789\r\n0\r\n\r\n");
    assert!(matches!(c.poll(), Step::Close));
}

#[test]
fn body_buffer_bounds_reading() {
    let mut c = conn_with(ConnectionConfig {
        body_buffer: 10,
        ..ConnectionConfig::default()
    });
    let mut out = Vec::new();
    c.receive(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 30\r\n\r\n");
    let id = next_request(&mut c);
    c.receive(&[b'x'; 12]);
    assert!(matches!(c.poll(), Step::Wait));
    assert!(!c.wants_read(), "the app has not taken the body");
    assert_eq!(
        c.read_body(id, &mut out),
        BodyRead::Data(vec![b'x'; 12], true)
    );
    assert!(c.wants_read());
}

#[test]
fn invalid_input_fails_with_its_status() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(
        b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    let Step::Fail(status) = c.poll() else {
        panic!("expected a failure")
    };
    assert_eq!(status, 400);
    assert!(c.parse_error().is_some(), "the rule is kept for the log");
    assert_eq!(c.fail(status, &mut out, None, None), FailOutcome::Answered);
    assert_eq!(statuses(&out), [400]);
    assert_eq!(c.phase(), Phase::Closing);
    assert!(c.wants_read(), "a closing connection reads and drops input");
    c.receive(b"more");
    assert!(matches!(c.poll(), Step::Wait));
    assert_eq!(c.fail(400, &mut out, None, None), FailOutcome::Ignored);
}

#[test]
fn an_unknown_expectation_gets_417_before_the_body() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"POST / HTTP/1.1\r\nHost: a\r\nExpect: x-magic\r\nContent-Length: 5\r\n\r\n");
    let Step::Fail(status) = c.poll() else {
        panic!("expected a failure")
    };
    assert_eq!(status, 417);
    assert_eq!(c.fail(status, &mut out, None, None), FailOutcome::Answered);
    assert_eq!(statuses(&out), [417]);
}

#[test]
fn chunk_extensions_are_bounded_per_body() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
    let id = next_request(&mut c);
    // 1-byte chunks with 1,000 bytes of extensions each: every line is
    // within max_chunk_line, the body's total is not.
    let ext = format!(";{}", "e".repeat(999));
    let mut failed = None;
    for _ in 0..64 {
        c.receive(format!("1{ext}\r\nx\r\n").as_bytes());
        let _ = c.read_body(id, &mut out);
        if let Step::Fail(status) = c.poll() {
            failed = Some(status);
            break;
        }
    }
    assert_eq!(failed, Some(400));
    assert_eq!(c.parse_error(), Some(&ParseError::ChunkExtensionsTooLarge));
}

#[test]
fn failing_after_the_response_started_loses_the_connection() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    let start = head_part(200, false);
    c.send(id, &mut out, start, None, None, 0.0).expect("start");
    assert_eq!(c.fail(500, &mut out, None, None), FailOutcome::Lose);
    assert!(c.lose());
    assert!(!c.lose(), "losing twice is a no-op");
    let part = body_part(b"", false);
    assert_eq!(
        c.send(id, &mut out, part, None, None, 0.0),
        Err(SendError::Disconnected)
    );
    assert_eq!(c.read_body(id, &mut out), BodyRead::Disconnect);
}

#[test]
fn a_server_error_response_ends_the_exchange_for_the_app() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    assert_eq!(c.fail(500, &mut out, None, None), FailOutcome::Answered);
    let ex = c.current(id).expect("still the current exchange");
    assert!(ex.is_over() && ex.is_abandoned());
    assert_eq!(ex.status(), 500);
    // To the app the client is gone: its exchange was answered for it.
    let start = head_part(200, false);
    assert_eq!(
        c.send(id, &mut out, start, None, None, 0.0),
        Err(SendError::Disconnected)
    );
}

#[test]
fn response_order_errors_write_nothing() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    let body = body_part(b"x", false);
    assert_eq!(
        c.send(id, &mut out, body, None, None, 0.0),
        Err(SendError::NotStarted)
    );
    let bad = ResponsePart::Start {
        status: 200,
        headers: [(&b"bad name"[..], &b"v"[..])],
        trailers: false,
    };
    assert!(matches!(
        c.send(id, &mut out, bad, None, None, 0.0),
        Err(SendError::Invalid(_))
    ));
    assert!(out.is_empty());
    let start = head_part(200, false);
    c.send(id, &mut out, start, None, None, 0.0).expect("start");
    let again = head_part(200, false);
    assert_eq!(
        c.send(id, &mut out, again, None, None, 0.0),
        Err(SendError::AlreadyStarted)
    );
    let trailers = ResponsePart::Trailers {
        headers: NO_HEADERS,
        more: false,
    };
    assert_eq!(
        c.send(id, &mut out, trailers, None, None, 0.0),
        Err(SendError::TrailersNotDeclared)
    );
}

#[test]
fn declared_trailers_end_the_response() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    let start = head_part(200, true);
    c.send(id, &mut out, start, None, None, 0.0).expect("start");
    let body = body_part(b"hi", false);
    assert_eq!(c.send(id, &mut out, body, None, None, 0.0), Ok(None));
    let more = body_part(b"", false);
    assert_eq!(
        c.send(id, &mut out, more, None, None, 0.0),
        Err(SendError::ExpectedTrailers)
    );
    let t = ResponsePart::Trailers {
        headers: [(&b"x-sum"[..], &b"1"[..])],
        more: false,
    };
    assert_eq!(c.send(id, &mut out, t, None, None, 0.0), Ok(Some(true)));
    let (resp, _) = parse_response(&out, false).expect("valid");
    assert_eq!(resp.trailers, [("x-sum".to_string(), "1".to_string())]);
}

#[test]
fn a_late_partial_head_gets_408_and_a_silent_one_is_dropped() {
    let config = ConnectionConfig {
        timeout_request_head: 10.0,
        ..ConnectionConfig::default()
    };
    let mut c = conn_with(config.clone());
    c.receive(b"GET / HT");
    assert!(matches!(c.poll(), Step::Wait));
    assert_eq!(c.on_timer(9.9), TimerAction::Nothing);
    assert_eq!(c.on_timer(10.0), TimerAction::Fail(408));

    let mut c = conn_with(config);
    assert_eq!(c.deadline(), Some(10.0));
    assert_eq!(
        c.on_timer(10.0),
        TimerAction::Lose(Expired::Head),
        "nothing was sent"
    );
}

#[test]
fn keep_alive_idle_then_head_timeout_from_the_previous_response() {
    let mut c = conn_with(ConnectionConfig {
        timeout_keep_alive: 5.0,
        timeout_request_head: 8.0,
        ..ConnectionConfig::default()
    });
    let mut out = Vec::new();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    assert_eq!(c.deadline(), None, "no deadline while the app runs");
    respond(&mut c, id, &mut out, b"", 100.0);
    assert_eq!(c.deadline(), Some(105.0));
    c.receive(b"GET");
    assert!(matches!(c.poll(), Step::Wait));
    assert_eq!(
        c.deadline(),
        Some(108.0),
        "the head deadline runs from the response"
    );
    assert_eq!(c.on_timer(108.0), TimerAction::Fail(408));

    let mut c = conn();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    respond(&mut c, id, &mut out, b"", 0.0);
    assert_eq!(c.on_timer(5.0), TimerAction::Lose(Expired::KeepAlive));
}

#[test]
fn a_slow_body_is_dropped_after_its_grace_period() {
    let mut c = conn_with(ConnectionConfig {
        min_body_rate: Some(100.0),
        body_rate_grace: 2.0,
        ..ConnectionConfig::default()
    });
    let mut out = Vec::new();
    c.receive(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n");
    let id = next_request(&mut c);
    assert!(matches!(c.read_body(id, &mut out), BodyRead::Wait { .. }));
    // The first check credits nothing; then the wait accumulates.
    for t in [0.0, 1.0, 2.0] {
        assert_eq!(c.on_timer(t), TimerAction::Nothing, "at {t}");
    }
    c.receive(&[b'x'; 50]);
    assert!(matches!(c.poll(), Step::Deliver));
    c.take_delivery();
    assert_eq!(
        c.on_timer(2.5),
        TimerAction::Lose(Expired::BodyRate),
        "50 bytes in 2.5 s < 100 B/s"
    );
}

#[test]
fn closing_takes_no_more_requests_and_has_no_deadline_of_its_own() {
    let mut c = conn();
    assert!(c.close());
    assert!(!c.close());
    assert_eq!(c.phase(), Phase::Closing);
    // Draining the output, the half-close and the linger are the caller's
    // (the driver's, the same for every protocol).
    assert_eq!(c.deadline(), None);
    assert_eq!(c.on_timer(1e9), TimerAction::Nothing);
    c.receive(
        b"GET / HTTP/1.1
Host: a

",
    );
    assert!(matches!(c.poll(), Step::Wait), "input is dropped");
}

#[test]
fn drain_closes_idle_connections_and_busy_ones_after_their_response() {
    let mut c = conn();
    assert_eq!(c.drain(false, false), DrainAction::Lose);
    let mut c = conn();
    assert_eq!(c.drain(true, false), DrainAction::Flush);
    assert_eq!(c.phase(), Phase::Closing);

    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    assert_eq!(c.drain(false, false), DrainAction::AfterResponse);
    assert!(
        !respond(&mut c, id, &mut out, b"", 0.0),
        "the last response"
    );
}

#[test]
fn a_response_started_after_drain_says_connection_close() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    assert_eq!(c.drain(false, false), DrainAction::AfterResponse);
    assert!(!respond(&mut c, id, &mut out, b"", 0.0));
    let text = String::from_utf8_lossy(&out).to_ascii_lowercase();
    assert!(text.contains("connection: close\r\n"), "{text}");
}

#[test]
fn a_handover_drain_keeps_idle_connections_for_one_more_response() {
    let mut c = conn();
    let mut out = Vec::new();
    // Idle between requests: kept, not lost under the client.
    assert_eq!(c.drain(false, true), DrainAction::AfterResponse);
    assert_eq!(c.phase(), Phase::Idle);
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    assert!(
        !respond(&mut c, id, &mut out, b"", 0.0),
        "the next response is the last"
    );
    let text = String::from_utf8_lossy(&out).to_ascii_lowercase();
    assert!(text.contains("connection: close\r\n"), "{text}");
    // Without a request the keep-alive timeout still ends it.
    let mut c = conn();
    assert_eq!(c.drain(false, true), DrainAction::AfterResponse);
    assert_ne!(c.on_timer(1e9), TimerAction::Nothing);
}

#[test]
fn eof_is_a_disconnect() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n");
    let id = next_request(&mut c);
    c.receive_eof();
    assert!(!c.wants_read());
    assert!(c.lose());
    assert_eq!(c.read_body(id, &mut out), BodyRead::Disconnect);
    assert!(c.current(id).is_some_and(|ex| ex.is_abandoned()));
}

#[test]
fn a_101_hands_the_connection_over_with_the_bytes_after_the_request() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(
        b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x05hello",
    );
    let id = next_request(&mut c);
    let start = ResponsePart::Start {
        status: 101,
        headers: [
            (&b"upgrade"[..], &b"websocket"[..]),
            (b"connection", b"Upgrade"),
        ],
        trailers: false,
    };
    assert_eq!(c.send(id, &mut out, start, None, None, 0.0), Ok(None));
    let end = body_part(b"", false);
    assert_eq!(c.send(id, &mut out, end, None, None, 0.0), Ok(Some(false)));
    assert_eq!(c.phase(), Phase::Upgraded);
    assert!(out.starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
    assert!(!c.wants_read() && matches!(c.poll(), Step::Wait));
    assert_eq!(c.on_timer(1e9), TimerAction::Nothing);
    assert_eq!(
        c.take_unparsed(),
        b"\x81\x05hello",
        "nothing was parsed as HTTP"
    );
    assert_eq!(c.fail(400, &mut out, None, None), FailOutcome::Ignored);
}

#[test]
fn a_101_without_an_upgrade_request_is_refused() {
    let mut c = conn();
    let mut out = Vec::new();
    c.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let id = next_request(&mut c);
    let start = head_part(101, false);
    assert_eq!(
        c.send(id, &mut out, start, None, None, 0.0),
        Err(SendError::NoUpgrade)
    );
    assert!(out.is_empty());
    assert!(c.take_unparsed().is_empty());
}
