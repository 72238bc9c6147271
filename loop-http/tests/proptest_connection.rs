//! Property tests of the server connection: (a) a pipelined sequence of
//! requests, cut into random pieces, with the app answering at random
//! points, writes the same bytes as when everything arrives at once and the
//! app answers at once; (b) arbitrary input plus arbitrary app actions never
//! panic, never write after the connection closed, and never start a
//! request from body bytes.

use loop_http::{BodyRead, ConnectionConfig, ResponsePart, ServerConnection, Step};
use proptest::prelude::*;
use std::sync::Arc;

/// 256 cases, or `PROPTEST_CASES` when set (for long local runs).
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// How the app handles one request.
#[derive(Clone, Copy, Debug)]
enum Plan {
    /// Read the whole body, then answer with its length.
    ReadThenAnswer,
    /// Answer without reading (the body, if any, is discarded).
    AnswerUnread,
    /// Start the response, read the body, then finish in two pieces.
    StreamWhileReading,
}

#[derive(Clone, Debug)]
struct Request {
    path: u16,
    body: Vec<u8>,
    chunked: bool,
    plan: Plan,
    /// Pieces of input that arrive before the app acts (0: at once).
    delay: usize,
}

impl Request {
    fn bytes(&self) -> Vec<u8> {
        let mut out = format!("POST /r{} HTTP/1.1\r\nHost: a\r\n", self.path).into_bytes();
        if self.chunked {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
            for part in self.body.chunks(7) {
                out.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
                out.extend_from_slice(part);
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"0\r\n\r\n");
        } else {
            out.extend_from_slice(
                format!("Content-Length: {}\r\n\r\n", self.body.len()).as_bytes(),
            );
            out.extend_from_slice(&self.body);
        }
        out
    }
}

fn request() -> impl Strategy<Value = Request> {
    (
        any::<u16>(),
        proptest::collection::vec(any::<u8>(), 0..40),
        any::<bool>(),
        prop_oneof![
            Just(Plan::ReadThenAnswer),
            Just(Plan::AnswerUnread),
            Just(Plan::StreamWhileReading)
        ],
        0usize..4,
    )
        .prop_map(|(path, body, chunked, plan, delay)| Request {
            path,
            body,
            chunked,
            plan,
            delay,
        })
}

/// The app's progress on the current request.
struct Active {
    id: u64,
    plan: Plan,
    wait: usize,
    started: bool,
    body: Vec<u8>,
    body_done: bool,
}

const NONE: [(&[u8], &[u8]); 0] = [];

fn start(c: &mut ServerConnection, id: u64, out: &mut Vec<u8>) {
    let part = ResponsePart::Start {
        status: 200,
        headers: NONE,
        trailers: false,
    };
    c.send(id, out, part, None, None, 0.0).expect("start");
}

fn body(c: &mut ServerConnection, id: u64, out: &mut Vec<u8>, data: &[u8], more: bool) {
    let part = ResponsePart::Body::<[(&[u8], &[u8]); 0]> { data, more };
    c.send(id, out, part, None, None, 0.0).expect("body");
}

/// Let the app do what it can; true when it finished its response.
fn step_app(c: &mut ServerConnection, app: &mut Active, out: &mut Vec<u8>) -> bool {
    if app.wait > 0 {
        return false;
    }
    let path = c
        .current(app.id)
        .map(|ex| String::from_utf8_lossy(ex.head().path()).into_owned())
        .unwrap_or_default();
    if matches!(app.plan, Plan::AnswerUnread) {
        start(c, app.id, out);
        body(c, app.id, out, format!("{path} unread").as_bytes(), false);
        return true;
    }
    if matches!(app.plan, Plan::StreamWhileReading) && !app.started {
        start(c, app.id, out);
        app.started = true;
    }
    while !app.body_done {
        match c.read_body(app.id, out) {
            BodyRead::Data(data, more) => {
                app.body.extend_from_slice(&data);
                app.body_done = !more;
            }
            BodyRead::Wait { .. } => return false,
            BodyRead::Disconnect => panic!("disconnected"),
        }
    }
    let text = format!(
        "{path} {} {:?}",
        app.body.len(),
        &app.body[..app.body.len().min(4)]
    );
    if !app.started {
        start(c, app.id, out);
    }
    let (a, b) = text.as_bytes().split_at(text.len() / 2);
    body(c, app.id, out, a, true);
    body(c, app.id, out, b, false);
    true
}

/// Serve `requests` with their input cut at `cuts`; the bytes written and
/// the paths the app saw, in order.
fn serve(requests: &[Request], cuts: &[usize], honour_delays: bool) -> (Vec<u8>, Vec<String>) {
    let input: Vec<u8> = requests.iter().flat_map(Request::bytes).collect();
    let mut points: Vec<usize> = cuts.iter().map(|&c| c % (input.len() + 1)).collect();
    points.push(input.len());
    points.sort_unstable();
    points.dedup();
    let mut c = ServerConnection::new(Arc::new(ConnectionConfig::default()), 0.0);
    let mut out = Vec::new();
    let mut seen = Vec::new();
    let mut app: Option<Active> = None;
    let mut fed = 0;
    let mut pieces = points.into_iter();
    let mut quiet_rounds = 0;
    loop {
        let mut progressed = true;
        while progressed {
            progressed = false;
            match c.poll() {
                Step::Request(head) => {
                    assert!(app.is_none(), "a request started while another runs");
                    seen.push(String::from_utf8_lossy(head.path()).into_owned());
                    let plan = &requests[seen.len() - 1];
                    let id = c.begin_request(head);
                    app = Some(Active {
                        id,
                        plan: plan.plan,
                        wait: if honour_delays { plan.delay } else { 0 },
                        started: false,
                        body: Vec::new(),
                        body_done: false,
                    });
                    progressed = true;
                }
                Step::Deliver => {
                    let (data, more) = c.take_delivery().expect("an exchange");
                    if let Some(app) = app.as_mut() {
                        app.body.extend_from_slice(&data);
                        app.body_done = !more;
                    }
                    progressed = true;
                }
                Step::Fail(status) => panic!("valid input failed with {status}"),
                Step::Close => panic!("a small body closed the connection"),
                Step::Wait => {}
            }
            if let Some(active) = app.as_mut() {
                if step_app(&mut c, active, &mut out) {
                    app = None;
                    progressed = true;
                }
            }
        }
        match pieces.next() {
            Some(end) => {
                c.receive(&input[fed..end]);
                fed = end;
            }
            None if app.is_none() || quiet_rounds > requests.len() * 4 + 8 => break,
            None => quiet_rounds += 1,
        }
        if let Some(active) = app.as_mut() {
            active.wait = active.wait.saturating_sub(1);
        }
    }
    assert!(app.is_none(), "the app never finished");
    (out, seen)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn splits_and_app_timing_do_not_change_the_output(
        requests in proptest::collection::vec(request(), 1..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let (reference, paths) = serve(&requests, &[], false);
        let (out, seen) = serve(&requests, &cuts, true);
        prop_assert_eq!(&seen, &paths);
        prop_assert_eq!(seen.len(), requests.len(), "a body was taken for a request");
        prop_assert_eq!(out, reference);
    }

    #[test]
    fn arbitrary_input_and_app_actions_keep_the_invariants(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
        actions in proptest::collection::vec(0u8..8, 0..24),
    ) {
        let mut c = ServerConnection::new(Arc::new(ConnectionConfig::default()), 0.0);
        let mut out = Vec::new();
        let mut id = None;
        let mut actions = actions.into_iter();
        for (now, chunk) in chunks.iter().enumerate() {
            let now = now as f64;
            c.receive(chunk);
            for _ in 0..4 {
                let closed_before = c.is_closed();
                let before = out.len();
                match c.poll() {
                    Step::Request(head) => id = Some(c.begin_request(head)),
                    Step::Deliver => { c.take_delivery(); }
                    Step::Fail(status) => { c.fail(status, &mut out, None, None); }
                    Step::Close => { c.close(); }
                    Step::Wait => {}
                }
                if let (Some(id), Some(action)) = (id, actions.next()) {
                    match action {
                        0 => { c.read_body(id, &mut out); }
                        1 => { let _ = c.send(id, &mut out, ResponsePart::Start { status: 200, headers: NONE, trailers: false }, None, None, now); }
                        2 => { let _ = c.send(id, &mut out, ResponsePart::Body::<[(&[u8], &[u8]); 0]> { data: b"x", more: true }, None, None, now); }
                        3 => { let _ = c.send(id, &mut out, ResponsePart::Body::<[(&[u8], &[u8]); 0]> { data: b"", more: false }, None, None, now); }
                        4 => { c.on_timer(now + 100.0); }
                        5 => { c.close(); }
                        6 => { c.drain(false, false); }
                        _ => { c.lose(); }
                    }
                }
                if closed_before {
                    prop_assert_eq!(out.len(), before, "wrote after close");
                }
            }
        }
    }
}
