//! The server's counters, in one place: what `Server.stats()` and
//! `Server.tls_stats()` report ([`ServerCounters::report`], a tree the host
//! renders: loop-py as dicts). The driver owns them; its connections, the
//! TLS layers and the host (app errors) hold the same `Arc` and count where
//! things happen.
//!
//! Cost: an increment is a load, an add and a store, no locked instruction
//! and no hashing. By-method and by-status counters are fixed arrays
//! (a method's bytes are matched against the nine standard ones), and so
//! are WebSocket close codes (by a bounded set of labels: a client picks
//! its code); only the rare TLS alerts go to a small list behind a mutex. Bytes on the wire are not counted per write at all: the streams
//! count them already (`StreamCore::stats`), the totals of closed
//! connections are added here when they close, and a report adds the live
//! connections' own counts.

use loop_transports::StreamStats;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// One counter. Every increment runs on the driver's thread, so a relaxed
/// load and store (plain moves) is enough; the atomic type only makes the
/// counters `Sync`, which a TLS layer (and a host object holding the
/// driver) needs. A second thread incrementing at once could lose a count,
/// never corrupt one.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub fn bump(&self) {
        self.add(1);
    }

    #[inline]
    pub fn add(&self, n: u64) {
        let v = self.0.load(Ordering::Relaxed);
        self.0.store(v.wrapping_add(n), Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counters by a name known only at run time (TLS alerts, a fixed set of
/// names the library defines): few distinct names and rare events, so a
/// list scanned under a mutex.
#[derive(Debug, Default)]
pub struct Named<K>(Mutex<Vec<(K, u64)>>);

impl<K: PartialEq + Copy> Named<K> {
    pub fn bump(&self, key: K) {
        let mut list = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match list.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => list.push((key, 1)),
        }
    }

    fn snapshot(&self) -> Vec<(K, u64)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The nine standard methods (RFC 9110 §9, PATCH from RFC 5789); any
/// other counts as `"other"`.
const METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

fn method_index(method: &[u8]) -> usize {
    match method {
        b"GET" => 0,
        b"HEAD" => 1,
        b"POST" => 2,
        b"PUT" => 3,
        b"DELETE" => 4,
        b"CONNECT" => 5,
        b"OPTIONS" => 6,
        b"TRACE" => 7,
        b"PATCH" => 8,
        _ => 9,
    }
}

const STATUS_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The statuses the server answers itself (400: malformed, 408: no head in
/// time, 413/414/431: limits, 417: an unknown `Expect`, 500: the app
/// failed before its response, 501/505: unsupported framing or version,
/// 503: `limit_concurrency`).
const REJECTIONS: [u16; 10] = [400, 408, 413, 414, 417, 431, 500, 501, 503, 505];

/// The close codes counted one by one: RFC 6455's (§7.4.1) and the rest of
/// IANA's registered range, 1000–1015. Any other code a peer or the app
/// may send counts in a group, so the labels stay bounded.
const CLOSE_FIRST: u16 = 1000;
const CLOSE_LAST: u16 = 1015;
const CLOSE_REGISTERED: usize = (CLOSE_LAST - CLOSE_FIRST + 1) as usize;

/// The groups, after the registered codes: 3000–3999 (registered with
/// IANA by libraries and frameworks), 4000–4999 (private use), anything
/// else (unassigned or reserved).
const CLOSE_GROUPS: [&str; 3] = ["application", "private", "other"];

const CLOSE_SLOTS: usize = CLOSE_REGISTERED + CLOSE_GROUPS.len();

/// WebSocket sessions by the close code each ended with.
#[derive(Debug, Default)]
pub struct CloseCodes([Counter; CLOSE_SLOTS]);

impl CloseCodes {
    pub fn bump(&self, code: u16) {
        self.0[close_code_index(code)].bump();
    }

    /// The label and count of each code or group seen, in slot order.
    fn snapshot(&self) -> impl Iterator<Item = (String, u64)> + '_ {
        self.0.iter().enumerate().filter_map(|(i, c)| {
            let n = c.get();
            (n > 0).then(|| (close_code_label(i), n))
        })
    }
}

fn close_code_index(code: u16) -> usize {
    match code {
        CLOSE_FIRST..=CLOSE_LAST => usize::from(code - CLOSE_FIRST),
        3000..=3999 => CLOSE_REGISTERED,
        4000..=4999 => CLOSE_REGISTERED + 1,
        _ => CLOSE_REGISTERED + 2,
    }
}

fn close_code_label(index: usize) -> String {
    match index.checked_sub(CLOSE_REGISTERED) {
        None => (usize::from(CLOSE_FIRST) + index).to_string(),
        Some(group) => CLOSE_GROUPS
            .get(group)
            .copied()
            .unwrap_or("other")
            .to_owned(),
    }
}

/// How a deadline ended a connection or session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timeout {
    /// An idle kept connection reached `timeout_keep_alive`.
    KeepAlive = 0,
    /// No complete head within `timeout_request_head` (408, or closed).
    RequestHead,
    /// The request body arrived slower than `min_body_rate`.
    Body,
    /// A closing connection's output did not drain in time.
    Drain,
    /// `ssl_handshake_timeout`.
    TlsHandshake,
    /// The client did not finish the WebSocket closing handshake in time.
    WsClose,
    /// No pong within `ws_ping_timeout` (closed with 1011).
    WsPing,
}

const TIMEOUTS: [&str; 7] = [
    "keep_alive",
    "request_head",
    "body",
    "drain",
    "tls_handshake",
    "ws_close",
    "ws_ping",
];

/// The TLS part (`Server.tls_stats()`, `stats()["tls"]`).
#[derive(Debug, Default)]
pub struct TlsCounters {
    pub handshakes: Counter,
    /// Handshakes that resumed a session (ticket or session id).
    pub resumptions: Counter,
    pub not_tls: Counter,
    pub handshake_failed: Counter,
    pub too_large: Counter,
    pub timed_out: Counter,
    /// The client closed (or reset) before its handshake completed.
    pub abandoned: Counter,
    /// Bad records or alerts after the handshake.
    pub protocol_errors: Counter,
    /// EOF without `close_notify` after the handshake.
    pub truncated: Counter,
    pub reloads: Counter,
    pub reload_errors: Counter,
    /// Alerts the clients sent that ended sessions, by name.
    pub alerts: Named<&'static str>,
    /// Alerts the server sent when it failed a session, by name.
    pub alerts_sent: Named<&'static str>,
}

#[derive(Debug, Default)]
pub struct ServerCounters {
    pub accepted: Counter,
    /// Connections ended (every way: `reset` is part of these).
    pub closed: Counter,
    /// Ended by a socket error from the peer (an RST, a broken pipe).
    pub reset: Counter,
    /// Requests whose head arrived (`limit_max_requests` counts these).
    pub requests: Counter,
    by_method: [Counter; 10],
    by_status: [Counter; 5],
    /// Bytes on the wire of connections closed so far.
    bytes_in: Counter,
    bytes_out: Counter,
    rejections: [Counter; REJECTIONS.len() + 1],
    timeouts: [Counter; TIMEOUTS.len()],
    pub app_exceptions: Counter,
    /// App calls that ended because their client went away (not counted
    /// in `app_exceptions`).
    pub client_disconnects: Counter,
    pub ws_sessions: Counter,
    pub ws_ended: Counter,
    pub ws_messages_in: Counter,
    pub ws_messages_out: Counter,
    pub ws_close_codes: CloseCodes,
    pub tls: TlsCounters,
}

/// A report: named counts and groups of them, in a fixed order (the host
/// renders it; loop-py as nested dicts).
#[derive(Clone, Debug, PartialEq)]
pub enum Stat {
    Count(u64),
    Group(Vec<(String, Stat)>),
}

fn group<'a>(pairs: impl IntoIterator<Item = (&'a str, u64)>) -> Stat {
    Stat::Group(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Stat::Count(v)))
            .collect(),
    )
}

/// What a report takes from the server's live state, not from counters.
pub struct Live {
    pub open: usize,
    pub in_flight: usize,
    /// The live connections' wire bytes so far.
    pub bytes: StreamStats,
    pub tls: bool,
}

impl ServerCounters {
    /// A request head arrived (its method counted); the new total.
    #[inline]
    pub fn request(&self, method: &[u8]) -> u64 {
        self.by_method[method_index(method)].bump();
        self.requests.bump();
        self.requests.get()
    }

    /// A response (the app's or the server's own) with `status` started.
    #[inline]
    pub fn response(&self, status: u16) {
        let class = (status / 100).clamp(1, 5) as usize - 1;
        self.by_status[class].bump();
    }

    /// The server answered `status` itself (a response too).
    pub fn rejected(&self, status: u16) {
        self.response(status);
        let i = REJECTIONS
            .iter()
            .position(|s| *s == status)
            .unwrap_or(REJECTIONS.len());
        self.rejections[i].bump();
    }

    pub fn timed_out(&self, kind: Timeout) {
        self.timeouts[kind as usize].bump();
    }

    /// A connection's stream closed with these wire counts.
    pub fn stream_closed(&self, stats: &StreamStats) {
        self.closed.bump();
        self.bytes_in.add(stats.bytes_read);
        self.bytes_out.add(stats.bytes_written);
    }

    /// The TLS counters by name (`tls_stats()`).
    pub fn tls_snapshot(&self) -> Vec<(&'static str, u64)> {
        let t = &self.tls;
        let failed = [
            &t.not_tls,
            &t.handshake_failed,
            &t.too_large,
            &t.timed_out,
            &t.abandoned,
        ]
        .into_iter()
        .map(Counter::get)
        .sum();
        vec![
            ("handshakes", t.handshakes.get()),
            ("resumptions", t.resumptions.get()),
            ("handshakes_failed", failed),
            ("failed_not_tls", t.not_tls.get()),
            ("failed_handshake", t.handshake_failed.get()),
            ("failed_too_large", t.too_large.get()),
            ("failed_timeout", t.timed_out.get()),
            ("failed_abandoned", t.abandoned.get()),
            ("protocol_errors", t.protocol_errors.get()),
            ("truncated", t.truncated.get()),
            ("reloads", t.reloads.get()),
            ("reload_errors", t.reload_errors.get()),
        ]
    }

    /// `tls_stats()`: the counters, with the alerts by name.
    pub fn tls_report(&self) -> Vec<(String, Stat)> {
        let mut out: Vec<(String, Stat)> = self
            .tls_snapshot()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Stat::Count(v)))
            .collect();
        for (key, named) in [
            ("alerts", &self.tls.alerts),
            ("alerts_sent", &self.tls.alerts_sent),
        ] {
            out.push((key.to_owned(), group(named.snapshot())));
        }
        out
    }

    /// `Server.stats()`: everything.
    pub fn report(&self, live: &Live) -> Vec<(String, Stat)> {
        let connections = group([
            ("open", live.open as u64),
            ("accepted", self.accepted.get()),
            ("closed", self.closed.get()),
            ("reset", self.reset.get()),
        ]);
        let by_method = group(
            METHODS
                .iter()
                .chain(&["other"])
                .zip(&self.by_method)
                .map(|(name, c)| (*name, c.get())),
        );
        let by_status = group(
            STATUS_CLASSES
                .iter()
                .zip(&self.by_status)
                .map(|(name, c)| (*name, c.get())),
        );
        let requests = Stat::Group(vec![
            ("total".into(), Stat::Count(self.requests.get())),
            ("in_flight".into(), Stat::Count(live.in_flight as u64)),
            ("by_method".into(), by_method),
            ("by_status".into(), by_status),
        ]);
        let bytes = group([
            ("in", self.bytes_in.get() + live.bytes.bytes_read),
            ("out", self.bytes_out.get() + live.bytes.bytes_written),
        ]);
        let mut rejections: Vec<(String, Stat)> = REJECTIONS
            .iter()
            .zip(&self.rejections)
            .map(|(status, c)| (status.to_string(), Stat::Count(c.get())))
            .collect();
        rejections.push((
            "other".into(),
            Stat::Count(self.rejections[REJECTIONS.len()].get()),
        ));
        let timeouts = group(
            TIMEOUTS
                .iter()
                .zip(&self.timeouts)
                .map(|(n, c)| (*n, c.get())),
        );
        let total = self.ws_sessions.get();
        let codes = Stat::Group(
            self.ws_close_codes
                .snapshot()
                .map(|(label, n)| (label, Stat::Count(n)))
                .collect(),
        );
        let websocket = Stat::Group(vec![
            (
                "sessions_open".into(),
                Stat::Count(total.saturating_sub(self.ws_ended.get())),
            ),
            ("sessions_total".into(), Stat::Count(total)),
            ("messages_in".into(), Stat::Count(self.ws_messages_in.get())),
            (
                "messages_out".into(),
                Stat::Count(self.ws_messages_out.get()),
            ),
            ("close_codes".into(), codes),
        ]);
        let tls = Stat::Group(if live.tls {
            self.tls_report()
        } else {
            Vec::new()
        });
        vec![
            ("connections".into(), connections),
            ("requests".into(), requests),
            ("bytes".into(), bytes),
            ("rejections".into(), Stat::Group(rejections)),
            ("timeouts".into(), timeouts),
            (
                "app_exceptions".into(),
                Stat::Count(self.app_exceptions.get()),
            ),
            (
                "client_disconnects".into(),
                Stat::Count(self.client_disconnects.get()),
            ),
            ("websocket".into(), websocket),
            ("tls".into(), tls),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_and_statuses_land_in_their_slots() {
        let c = ServerCounters::default();
        for m in [&b"GET"[..], b"GET", b"POST", b"PATCH", b"BREW", b"get"] {
            c.request(m);
        }
        let counts: Vec<u64> = c.by_method.iter().map(Counter::get).collect();
        assert_eq!(counts, [2, 0, 1, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(c.requests.get(), 6);
        for s in [101, 200, 204, 301, 404, 500, 503, 99, 600] {
            c.response(s);
        }
        let classes: Vec<u64> = c.by_status.iter().map(Counter::get).collect();
        assert_eq!(classes, [2, 2, 1, 1, 3]);
    }

    #[test]
    fn rejections_count_as_responses_and_by_status_code() {
        let c = ServerCounters::default();
        c.rejected(431);
        c.rejected(431);
        c.rejected(418);
        let slot_431 = REJECTIONS.iter().position(|&s| s == 431).unwrap();
        assert_eq!(c.rejections[slot_431].get(), 2);
        assert_eq!(c.rejections[REJECTIONS.len()].get(), 1);
        assert_eq!(c.by_status[3].get(), 3);
    }

    #[test]
    fn failures_are_summed_and_a_protocol_error_is_no_failed_handshake() {
        let c = ServerCounters::default();
        c.tls.not_tls.bump();
        c.tls.too_large.bump();
        c.tls.timed_out.bump();
        c.tls.protocol_errors.bump();
        let snapshot: std::collections::HashMap<_, _> = c.tls_snapshot().into_iter().collect();
        assert_eq!(snapshot["handshakes_failed"], 3);
        assert_eq!(snapshot["protocol_errors"], 1);
    }

    #[test]
    fn named_counters_add_up_per_key() {
        let n = Named::default();
        n.bump("bad_certificate");
        n.bump("decode_error");
        n.bump("bad_certificate");
        assert_eq!(n.snapshot(), [("bad_certificate", 2), ("decode_error", 1)]);
    }

    #[test]
    fn close_codes_are_counted_by_registered_code_or_group() {
        let c = CloseCodes::default();
        for code in [
            1000,
            1000,
            1015,
            1016,
            2999,
            3000,
            3999,
            4000,
            4001,
            4999,
            5000,
            0,
            u16::MAX,
        ] {
            c.bump(code);
        }
        let got: Vec<(String, u64)> = c.snapshot().collect();
        let want = [
            ("1000", 2),
            ("1015", 1),
            ("application", 2),
            ("private", 3),
            ("other", 5),
        ];
        let want: Vec<(String, u64)> = want.iter().map(|(l, n)| (l.to_string(), *n)).collect();
        assert_eq!(got, want);
        // Every label there is: the registered codes and the three groups.
        let labels: Vec<String> = (0..CLOSE_SLOTS).map(close_code_label).collect();
        assert_eq!(labels.len(), CLOSE_SLOTS);
        assert_eq!((labels[0].as_str(), labels[15].as_str()), ("1000", "1015"));
    }
}
