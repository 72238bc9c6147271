//! The parsed request head: one owned copy of the head bytes plus offsets.

use std::fmt;
use std::ops::Range;

/// The HTTP version of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// How the request body is delimited (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body: neither Content-Length nor Transfer-Encoding, or
    /// `Content-Length: 0`.
    Empty,
    /// Exactly this many bytes (always > 0).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A byte range into a head buffer, stored compactly (heads are far below
/// 4 GiB: the parser refuses larger ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    end: u32,
}

impl Span {
    /// Callers only build spans inside a head, whose length the parser has
    /// already bounded to fit u32 (see `parser::MAX_HEAD_LEN`).
    pub(crate) fn new(start: usize, end: usize) -> Span {
        Span {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            end: u32::try_from(end).unwrap_or(u32::MAX),
        }
    }

    pub(crate) fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// One field line: name and OWS-trimmed value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub name: Span,
    pub value: Span,
}

/// A request head. It owns one copy of the head bytes (request line through
/// the final CRLF); header names are lower-cased in that copy, values are
/// left as received.
#[derive(Clone)]
pub struct RequestHead {
    pub version: Version,
    pub body: BodyFraming,
    /// HTTP/1.1: true unless Connection has the token "close".
    /// HTTP/1.0: true only with the token "keep-alive" (and no "close").
    pub keep_alive: bool,
    /// HTTP/1.1 request with `Expect: 100-continue` (case-insensitive) that
    /// has a body. Without a body there is nothing to wait for, so no 100
    /// response is called for (RFC 9110 §10.1.1). Other expectations are ignored.
    pub expect_continue: bool,
    /// HTTP/1.1 request whose Connection has the token "upgrade" and that
    /// has an Upgrade field. RFC 9110 §7.8: Upgrade in an HTTP/1.0 request
    /// is ignored, so this is always false for 1.0.
    pub upgrade: bool,
    pub(crate) buf: Box<[u8]>,
    pub(crate) method: Span,
    pub(crate) target: Span,
    /// `None`: the implied path "/" of an absolute-form target without one.
    pub(crate) path: Option<Span>,
    pub(crate) query: Span,
    pub(crate) fields: Vec<Field>,
}

impl RequestHead {
    fn get(&self, span: Span) -> &[u8] {
        // Spans are built from this buffer; `get` keeps even a bug panic-free.
        self.buf.get(span.range()).unwrap_or_default()
    }

    /// The method, case preserved (methods are case-sensitive, RFC 9110 §9.1).
    pub fn method(&self) -> &[u8] {
        self.get(self.method)
    }

    /// The raw request target.
    pub fn target(&self) -> &[u8] {
        self.get(self.target)
    }

    /// The raw path without the query: origin-form up to the first '?';
    /// absolute-form `http://host[:port]/p?q` gives "/p" ("/" if empty);
    /// asterisk-form gives "*".
    pub fn path(&self) -> &[u8] {
        match self.path {
            Some(span) => self.get(span),
            None => b"/",
        }
    }

    /// The bytes after the first '?', without it; empty if none.
    pub fn query(&self) -> &[u8] {
        self.get(self.query)
    }

    /// All header fields in order: names lower-case, values with
    /// surrounding OWS trimmed.
    pub fn headers(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        self.fields
            .iter()
            .map(move |f| (self.get(f.name), self.get(f.value)))
    }

    /// The value of the first header named `lower_name` (give it lower-case).
    pub fn header(&self, lower_name: &[u8]) -> Option<&[u8]> {
        self.headers()
            .find(|(name, _)| *name == lower_name)
            .map(|(_, value)| value)
    }

    /// Whether the method is HEAD.
    pub fn is_head(&self) -> bool {
        self.method() == b"HEAD"
    }

    /// The whole head as received (request line through the final CRLF),
    /// except that header names are lower-cased.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

impl fmt::Debug for RequestHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        f.debug_struct("RequestHead")
            .field("method", &text(self.method()))
            .field("target", &text(self.target()))
            .field("version", &self.version)
            .field("body", &self.body)
            .field("keep_alive", &self.keep_alive)
            .field("expect_continue", &self.expect_continue)
            .field("upgrade", &self.upgrade)
            .field(
                "headers",
                &self
                    .headers()
                    .map(|(n, v)| (text(n), text(v)))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}
