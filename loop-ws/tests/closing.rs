//! The closing handshake (RFC 6455 §5.5.1, §7), keepalive pings and the
//! timers, each input fed whole and byte by byte.

mod support;

use loop_ws::{CloseCode, Config, MessageKind, SendError, State, TimerAction};
use support::*;

#[test]
fn peer_close_is_echoed_with_its_code() {
    for how in FEEDS {
        let mut c = conn(&quiet());
        let mut input = close_frame(1000, "bye ✓".as_bytes());
        // Anything after the peer's close is ignored.
        input.extend(text("late"));
        input.extend(frame(true, false, PING, b"x"));
        feed(&mut c, &input, how);
        assert_eq!(c.state(), State::Closed);
        assert_eq!(c.close_status(), Some((CloseCode::NORMAL, "bye ✓")));
        let out = output(&mut c);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].close(), Some((1000, String::new())));
        assert!(c.next_message().is_none());
        assert!(!c.wants_read());
        let mut sink = Vec::new();
        assert_eq!(
            c.send(MessageKind::Text, b"x", &mut sink),
            Err(SendError::Closed)
        );
        assert_eq!(
            c.close(CloseCode::NORMAL, "", 0.0, &mut sink),
            Err(SendError::Closed)
        );
    }
}

#[test]
fn application_codes_are_echoed() {
    for code in [1001, 1003, 1007, 1011, 1014, 3000, 4999] {
        let mut c = conn(&quiet());
        c.receive(&close_frame(code, b""), 0.0);
        assert_eq!(output(&mut c)[0].close(), Some((code, String::new())));
        assert_eq!(c.close_status().map(|(c, _)| c.0), Some(code));
    }
}

#[test]
fn empty_close_is_1005() {
    for how in FEEDS {
        let mut c = conn(&quiet());
        feed(&mut c, &frame(true, false, CLOSE, b""), how);
        assert_eq!(c.close_status(), Some((CloseCode::NO_STATUS, "")));
        assert_eq!(output(&mut c)[0].close(), None, "an empty close answers it");
    }
}

fn assert_close_refused(payload: &[u8], code: u16) {
    for how in FEEDS {
        let mut c = conn(&quiet());
        feed(&mut c, &frame(true, false, CLOSE, payload), how);
        assert_eq!(c.state(), State::Closed);
        assert_eq!(
            output(&mut c)[0].close().map(|(c, _)| c),
            Some(code),
            "{payload:?}"
        );
        assert_eq!(c.close_status().map(|(c, _)| c.0), Some(code));
    }
}

#[test]
fn messages_before_the_peers_close_can_be_answered() {
    for how in FEEDS {
        let mut c = conn(&quiet());
        let mut input = text("last words");
        input.extend(close_frame(1001, b"going"));
        feed(&mut c, &input, how);
        assert_eq!(c.state(), State::Open);
        let m = c.next_message().unwrap();
        let mut out = Vec::new();
        c.send(m.kind, &m.data, &mut out).unwrap();
        assert!(c.next_message().is_none());
        assert_eq!(c.close_status(), Some((CloseCode::GOING_AWAY, "going")));
        c.take_output(&mut out);
        let frames = parse_frames(&out);
        assert_eq!(frames[0].payload, b"last words");
        assert_eq!(frames[1].close(), Some((1001, String::new())));
        // Or the application closes instead of reading on.
        let mut c = conn(&quiet());
        feed(&mut c, &input, how);
        let mut out = Vec::new();
        c.close(CloseCode::NORMAL, "", 0.0, &mut out).unwrap();
        assert_eq!(c.state(), State::Closed);
        assert_eq!(c.close_status(), Some((CloseCode::GOING_AWAY, "going")));
        assert_eq!(parse_frames(&out)[0].close(), Some((1000, String::new())));
    }
}

#[test]
fn one_byte_close_payload() {
    assert_close_refused(&[3], 1002);
}

#[test]
fn invalid_close_codes() {
    for code in [
        0u16, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535,
    ] {
        assert_close_refused(&code.to_be_bytes(), 1002);
    }
}

#[test]
fn close_reason_must_be_utf8() {
    let mut p = 1000u16.to_be_bytes().to_vec();
    p.extend_from_slice(b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80");
    assert_close_refused(&p, 1007);
}

#[test]
fn our_close_then_theirs() {
    for how in FEEDS {
        let mut c = conn(&quiet());
        let mut out = Vec::new();
        c.close(CloseCode::GOING_AWAY, "restart", 5.0, &mut out)
            .unwrap();
        assert_eq!(
            parse_frames(&out)[0].close(),
            Some((1001, "restart".into()))
        );
        assert_eq!(c.state(), State::Closing);
        assert_eq!(c.next_deadline(), Some(15.0));
        assert!(c.wants_read());
        // No more data from us.
        assert_eq!(
            c.send(MessageKind::Text, b"x", &mut out),
            Err(SendError::Closed)
        );
        // Their data and pings before their close: dropped, not answered.
        let mut input = text("in flight");
        input.extend(frame(true, false, PING, b"p"));
        input.extend(close_frame(1001, b""));
        feed(&mut c, &input, how);
        assert_eq!(c.state(), State::Closed);
        assert_eq!(c.close_status(), Some((CloseCode::GOING_AWAY, "")));
        assert!(c.next_message().is_none());
        assert!(output(&mut c).is_empty(), "no echo of an answer");
        assert_eq!(c.next_deadline(), None);
    }
}

#[test]
fn our_close_with_a_message_half_received() {
    let mut c = conn(&quiet());
    let f = binary(&[1; 50]);
    c.receive(&f[..20], 0.0);
    let mut out = Vec::new();
    c.close(CloseCode::NORMAL, "", 0.0, &mut out).unwrap();
    // The rest of the frame is read through, then their close is found.
    let mut rest = f[20..].to_vec();
    rest.extend(close_frame(1000, b""));
    c.receive(&rest, 0.0);
    assert_eq!(c.close_status(), Some((CloseCode::NORMAL, "")));
}

#[test]
fn close_timeout_aborts() {
    let config = Config {
        close_timeout: 3.0,
        ..quiet()
    };
    let mut c = conn(&config);
    let mut out = Vec::new();
    c.close(CloseCode::NORMAL, "", 10.0, &mut out).unwrap();
    assert_eq!(c.on_timer(12.9), TimerAction::Nothing);
    assert_eq!(c.on_timer(13.0), TimerAction::Abort);
    assert_eq!(c.state(), State::Closed);
    assert_eq!(c.close_status(), Some((CloseCode::ABNORMAL, "")));
}

#[test]
fn protocol_errors_while_closing_send_nothing_more() {
    let mut c = conn(&quiet());
    let mut out = Vec::new();
    c.close(CloseCode::NORMAL, "", 0.0, &mut out).unwrap();
    c.receive(&frame(true, false, CONT, b"x"), 0.0);
    assert_eq!(c.state(), State::Closed);
    assert!(output(&mut c).is_empty());
}

#[test]
fn close_arguments_are_checked() {
    let mut c = conn(&quiet());
    let mut out = Vec::new();
    for code in [1005, 1006, 1015, 999, 2000, 5000] {
        assert_eq!(
            c.close(CloseCode(code), "", 0.0, &mut out),
            Err(SendError::InvalidCloseCode(code))
        );
    }
    let long = "x".repeat(124);
    assert_eq!(
        c.close(CloseCode::NORMAL, &long, 0.0, &mut out),
        Err(SendError::ReasonTooLong)
    );
    assert!(out.is_empty());
    assert_eq!(c.state(), State::Open);
    c.close(CloseCode(4000), &long[..123], 0.0, &mut out)
        .unwrap();
    assert_eq!(
        parse_frames(&out)[0].close(),
        Some((4000, long[..123].into()))
    );
}

#[test]
fn keepalive_pings_and_pongs() {
    let config = Config {
        ping_interval: Some(20.0),
        ping_timeout: Some(5.0),
        ..Config::default()
    };
    let mut c = loop_ws::Connection::new(&config, None, 100.0);
    assert_eq!(c.next_deadline(), Some(120.0));
    assert_eq!(c.on_timer(119.0), TimerAction::Nothing);
    assert_eq!(c.on_timer(120.0), TimerAction::Output);
    let ping = output(&mut c).remove(0);
    assert_eq!(ping.opcode, PING);
    assert_eq!(c.next_deadline(), Some(125.0));
    // A pong with another payload does not count; the right one does.
    c.receive(&frame(true, false, PONG, b"other"), 121.0);
    assert_eq!(c.next_deadline(), Some(125.0));
    c.receive(&frame(true, false, PONG, &ping.payload), 121.0);
    assert_eq!(c.next_deadline(), Some(140.0));
    assert_eq!(c.on_timer(125.0), TimerAction::Nothing);
    assert_eq!(c.state(), State::Open);
}

#[test]
fn ping_timeout_fails_with_1011() {
    let config = Config {
        ping_interval: Some(20.0),
        ping_timeout: Some(20.0),
        ..Config::default()
    };
    let mut c = loop_ws::Connection::new(&config, None, 0.0);
    assert_eq!(c.on_timer(20.0), TimerAction::Output);
    output(&mut c);
    assert_eq!(c.next_deadline(), Some(40.0));
    assert_eq!(c.on_timer(40.0), TimerAction::Output);
    let out = output(&mut c);
    assert_eq!(
        out[0].close(),
        Some((1011, "keepalive ping timeout".into()))
    );
    assert_eq!(c.state(), State::Closed);
    assert_eq!(
        c.close_status(),
        Some((CloseCode::INTERNAL_ERROR, "keepalive ping timeout"))
    );
    assert_eq!(c.next_deadline(), None);
}

#[test]
fn no_pings_when_disabled() {
    let mut c = conn(&quiet());
    assert_eq!(c.next_deadline(), None);
    assert_eq!(c.on_timer(1e9), TimerAction::Nothing);
}
