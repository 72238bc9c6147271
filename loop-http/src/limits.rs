//! Bounds on everything a client can make the parser hold or scan.
//!
//! Every buffer that input can grow has a configured bound
//! (docs/architecture.md). The
//! parser never buffers bytes itself, but the caller must keep unconsumed
//! bytes until the parser can use them, so these limits also bound the
//! caller's buffer: a head, a chunk-size line or a trailer section that is
//! still incomplete beyond its limit is an error, not a reason to read more.

/// Configurable request limits. `Limits::default()` holds the documented
/// defaults; build variations with `Limits { max_body: None, ..Default::default() }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line (method SP target SP version, without CRLF).
    /// Longer, complete or not: `RequestLineTooLong` (414).
    pub max_request_line: usize,
    /// Largest head (request line through the empty line ending the
    /// headers). Larger, complete or not: `HeadTooLarge` (431).
    pub max_header_bytes: usize,
    /// Most header field lines in a head (and field lines in a trailer
    /// section). More: `TooManyHeaders` (431).
    pub max_headers: usize,
    /// Largest request body, `None` for unbounded. A larger Content-Length is
    /// refused at head time; a chunked body as soon as a chunk-size line
    /// would take the total past it (`BodyTooLarge`, 413).
    pub max_body: Option<u64>,
    /// Longest chunk-size line, extensions included, CRLF excluded.
    /// Longer: `ChunkLineTooLong` (400).
    pub max_chunk_line: usize,
    /// Largest trailer section (after the last chunk, through the final
    /// CRLF). Larger: `TrailersTooLarge` (431).
    pub max_trailer_bytes: usize,
    /// Most chunk-extension bytes (from each `;` to the end of its size
    /// line) in one chunked body. Each line is bounded by `max_chunk_line`
    /// already; this bounds what a body of many small chunks makes the
    /// server scan. More: `ChunkExtensionsTooLarge` (400).
    pub max_chunk_extensions: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_line: 8192,
            max_header_bytes: 64 * 1024,
            max_headers: 100,
            max_body: Some(16 * 1024 * 1024),
            max_chunk_line: 4096,
            max_trailer_bytes: 16 * 1024,
            max_chunk_extensions: 16 * 1024,
        }
    }
}

/// Most empty lines (CRLF) skipped before a request line.
///
/// RFC 9112 §2.2: a server SHOULD ignore at least one empty line received
/// before the request-line (some clients send an extra CRLF after a body).
/// Unbounded skipping would let a client keep a connection busy for free, so
/// more than this is `TooManyEmptyLines` (400).
pub const MAX_LEADING_EMPTY_LINES: usize = 8;
