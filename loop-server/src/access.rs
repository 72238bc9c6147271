//! An access-log line, rendered in Rust from the parsed `access_log_format`
//! (`loop_cli::access_format`): the host's logger gets one finished string
//! ([`crate::Log::Access`]).

use loop_cli::access_format::{AccessFormat, Field, Piece};
use loop_http::{reason_phrase, RequestHead, Version};
use std::fmt::Write;

/// What a line is made of: the request (`None` when the server answered
/// before a head was read) and the outcome.
pub struct Entry<'a> {
    pub client: &'a str,
    pub head: Option<&'a RequestHead>,
    pub root_path: &'a str,
    pub status: u16,
    /// Seconds from the complete head to the response (when timed).
    pub duration: Option<f64>,
}

fn lossy(out: &mut String, bytes: &[u8]) {
    out.push_str(&String::from_utf8_lossy(bytes));
}

/// The target as sent (the parser admits visible ASCII only), with `"`
/// written `%22` so a client cannot end the line's quoted request early.
fn quoted_target(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        match b {
            b'"' => out.push_str("%22"),
            _ => out.push(char::from(b)),
        }
    }
}

fn full_path(out: &mut String, root_path: &str, head: &RequestHead) {
    // As uvicorn 0.55: root_path plus the raw path and query.
    out.push_str(root_path);
    quoted_target(out, head.path());
    if !head.query().is_empty() {
        out.push('?');
        quoted_target(out, head.query());
    }
}

fn version(head: &RequestHead) -> &'static str {
    match head.version {
        Version::Http10 => "1.0",
        Version::Http11 => "1.1",
    }
}

fn header(out: &mut String, head: Option<&RequestHead>, name: &[u8]) {
    match head.and_then(|h| h.header(name)) {
        Some(value) => lossy(out, value),
        None => out.push('-'),
    }
}

pub fn render(format: &AccessFormat, entry: &Entry<'_>) -> String {
    let mut out = String::with_capacity(96);
    let head = entry.head;
    for piece in &format.pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Field(field) => match (field, head) {
                (Field::ClientAddr, _) => out.push_str(entry.client),
                (Field::StatusCode, _) => {
                    let _ = write!(out, "{}", entry.status);
                }
                (Field::StatusPhrase, _) => out.push_str(reason_phrase(entry.status)),
                (Field::DurationMs, _) => match entry.duration {
                    Some(d) => {
                        let _ = write!(out, "{:.3}", d * 1000.0);
                    }
                    None => out.push('-'),
                },
                (Field::UserAgent, _) => header(&mut out, head, b"user-agent"),
                (Field::Referer, _) => header(&mut out, head, b"referer"),
                (_, None) => out.push('-'),
                (Field::Method, Some(h)) => lossy(&mut out, h.method()),
                (Field::Path, Some(h)) => {
                    out.push_str(entry.root_path);
                    lossy(&mut out, h.path());
                }
                (Field::Query, Some(h)) => lossy(&mut out, h.query()),
                (Field::FullPath, Some(h)) => full_path(&mut out, entry.root_path, h),
                (Field::HttpVersion, Some(h)) => out.push_str(version(h)),
                (Field::RequestLine, Some(h)) => {
                    lossy(&mut out, h.method());
                    out.push(' ');
                    full_path(&mut out, entry.root_path, h);
                    out.push_str(" HTTP/");
                    out.push_str(version(h));
                }
            },
        }
    }
    out
}

/// The start of a WebSocket session's access-log lines, as uvicorn's:
/// `client - "WebSocket /path?query"`.
pub fn ws_prefix(client: &str, root_path: &str, head: &RequestHead) -> String {
    let mut out = String::with_capacity(64);
    out.push_str(if client.is_empty() { "-" } else { client });
    out.push_str(" - \"WebSocket ");
    full_path(&mut out, root_path, head);
    out.push('"');
    out
}
