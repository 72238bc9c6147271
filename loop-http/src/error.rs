//! The crate's error enums: one variant per rule, each with its status code.
//!
//! Callers match variants or call [`ParseError::status`]; they never parse
//! the `Display` text (STYLE habit 8).

use thiserror::Error;

/// Why a request was rejected. Every variant closes the connection: after an
/// error the parser cannot know where the next request would start.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    // --- sizes (RFC 9112 §3 and RFC 6585 §5 leave the limits to the server) ---
    /// The request line is longer than `Limits::max_request_line` (414).
    #[error("request line too long")]
    RequestLineTooLong,
    /// The head is larger than `Limits::max_header_bytes` (431).
    #[error("request head too large")]
    HeadTooLarge,
    /// More field lines than `Limits::max_headers`, in the head or trailers (431).
    #[error("too many header fields")]
    TooManyHeaders,
    /// More than [`crate::MAX_LEADING_EMPTY_LINES`] empty lines before a request line (400).
    #[error("too many empty lines before the request line")]
    TooManyEmptyLines,
    /// Content-Length, or the chunked total, above `Limits::max_body` (413).
    #[error("request body too large")]
    BodyTooLarge,
    /// The trailer section is larger than `Limits::max_trailer_bytes` (431).
    #[error("trailer section too large")]
    TrailersTooLarge,
    /// A chunk-size line is longer than `Limits::max_chunk_line` (400).
    #[error("chunk-size line too long")]
    ChunkLineTooLong,
    /// The chunk extensions of a body add up to more than
    /// `Limits::max_chunk_extensions` (400).
    #[error("too many chunk extension bytes")]
    ChunkExtensionsTooLarge,

    // --- line syntax (RFC 9112 §2.2) ---
    /// A CR not followed by LF in the head or trailers (400).
    #[error("bare CR in message head")]
    BareCr,
    /// An LF not preceded by CR in the head or trailers (400).
    #[error("bare LF in message head")]
    BareLf,
    /// A field line starting with SP or HTAB: obsolete line folding, or
    /// whitespace between the request line and the first field (400).
    #[error("obsolete line folding")]
    ObsFold,

    // --- request line (RFC 9112 §3) ---
    /// Not `method SP request-target SP HTTP-version` (400).
    #[error("malformed request line")]
    InvalidRequestLine,
    /// Empty method or a byte outside `tchar` (400).
    #[error("invalid method")]
    InvalidMethod,
    /// CONNECT is not implemented by this server (501).
    #[error("CONNECT is not supported")]
    ConnectNotSupported,
    /// A request target that is not origin-, absolute- or asterisk-form, or
    /// has bytes a target cannot have (400).
    #[error("invalid request target")]
    InvalidTarget,
    /// Not of the form `HTTP/DIGIT.DIGIT` (400).
    #[error("malformed HTTP version")]
    InvalidVersion,
    /// Well-formed but neither HTTP/1.0 nor HTTP/1.1 (505).
    #[error("unsupported HTTP version")]
    UnsupportedVersion,

    // --- fields (RFC 9110 §5, RFC 9112 §5) ---
    /// A field name that is empty or has a byte outside `tchar`, or a field
    /// line without a colon (400).
    #[error("invalid header name")]
    InvalidHeaderName,
    /// Whitespace between a field name and its colon (400).
    #[error("whitespace between header name and colon")]
    WhitespaceBeforeColon,
    /// A control byte other than HTAB in a field value (400).
    #[error("invalid header value")]
    InvalidHeaderValue,
    /// HTTP/1.1 request without a Host field (400).
    #[error("missing Host header")]
    MissingHost,
    /// More than one Host field line (400).
    #[error("multiple Host headers")]
    MultipleHost,
    /// A Host value that is not `uri-host [ ":" port ]` (400).
    #[error("invalid Host header")]
    InvalidHost,
    /// An `Expect` member other than `100-continue` (417, RFC 9110
    /// §10.1.1).
    #[error("unsupported expectation in Expect")]
    ExpectationFailed,

    // --- framing (RFC 9112 §6) ---
    /// Content-Length that is not a list of identical 1*DIGIT values fitting u64 (400).
    #[error("invalid Content-Length")]
    InvalidContentLength,
    /// Content-Length values that differ (400).
    #[error("conflicting Content-Length values")]
    ConflictingContentLength,
    /// Both Content-Length and Transfer-Encoding (400).
    #[error("Content-Length together with Transfer-Encoding")]
    ContentLengthWithTransferEncoding,
    /// Transfer-Encoding in an HTTP/1.0 request (400).
    #[error("Transfer-Encoding in an HTTP/1.0 request")]
    TransferEncodingInHttp10,
    /// A transfer coding other than chunked (501).
    #[error("unsupported transfer coding")]
    UnsupportedTransferEncoding,
    /// chunked not last, chunked twice, or an empty coding list (400).
    #[error("invalid Transfer-Encoding")]
    InvalidTransferEncoding,

    // --- chunked body (RFC 9112 §7.1) ---
    /// A chunk size that is empty, not hex, signed, followed by junk, or overflows u64 (400).
    #[error("invalid chunk size")]
    InvalidChunkSize,
    /// A chunk extension with a control byte (400).
    #[error("invalid chunk extension")]
    InvalidChunkExtension,
    /// Chunk data not followed by CRLF (400).
    #[error("chunk data not followed by CRLF")]
    InvalidChunkTerminator,
}

impl ParseError {
    /// The status code of the response this error calls for.
    pub fn status(&self) -> u16 {
        use ParseError::*;
        match self {
            RequestLineTooLong => 414,
            HeadTooLarge | TooManyHeaders | TrailersTooLarge => 431,
            BodyTooLarge => 413,
            ConnectNotSupported | UnsupportedTransferEncoding => 501,
            UnsupportedVersion => 505,
            ExpectationFailed => 417,
            TooManyEmptyLines
            | ChunkLineTooLong
            | ChunkExtensionsTooLarge
            | BareCr
            | BareLf
            | ObsFold
            | InvalidRequestLine
            | InvalidMethod
            | InvalidTarget
            | InvalidVersion
            | InvalidHeaderName
            | WhitespaceBeforeColon
            | InvalidHeaderValue
            | MissingHost
            | MultipleHost
            | InvalidHost
            | InvalidContentLength
            | ConflictingContentLength
            | ContentLengthWithTransferEncoding
            | TransferEncodingInHttp10
            | InvalidTransferEncoding
            | InvalidChunkSize
            | InvalidChunkExtension
            | InvalidChunkTerminator => 400,
        }
    }
}

/// Why a response could not be encoded. Nothing is written to `out` when
/// one of these is returned.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseError {
    /// Not 101 and not in 200..=999 (1xx other than 101 go out as interim
    /// responses, not through the encoder).
    #[error("invalid response status {0}")]
    InvalidStatus(u16),
    /// A header or trailer name that is not an RFC 9110 token.
    #[error("invalid response header name")]
    InvalidHeaderName,
    /// A header or trailer value with CR, LF, NUL or another control byte except HTAB.
    #[error("invalid response header value")]
    InvalidHeaderValue,
    /// A content-length that is not 1*DIGIT fitting u64.
    #[error("invalid response content-length")]
    InvalidContentLength,
    /// Differing content-length values.
    #[error("conflicting response content-length values")]
    ConflictingContentLength,
    /// A transfer-encoding other than exactly `chunked`.
    #[error("invalid response transfer-encoding")]
    InvalidTransferEncoding,
    /// More body than the declared Content-Length.
    #[error("Response content longer than Content-Length")]
    TooLong,
    /// `finish` before the declared Content-Length was sent.
    #[error("Response content shorter than Content-Length")]
    TooShort,
    /// `body` or `finish` after `finish`.
    #[error("response already finished")]
    Finished,
    /// A default header that would set the framing of every response
    /// (`content-length`, `transfer-encoding`, `connection`, `trailer`,
    /// `upgrade`), which the encoder decides per response.
    #[error("'{0}' cannot be a default header: the server sets it per response")]
    FramingHeader(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes() {
        assert_eq!(ParseError::RequestLineTooLong.status(), 414);
        assert_eq!(ParseError::HeadTooLarge.status(), 431);
        assert_eq!(ParseError::TooManyHeaders.status(), 431);
        assert_eq!(ParseError::TrailersTooLarge.status(), 431);
        assert_eq!(ParseError::BodyTooLarge.status(), 413);
        assert_eq!(ParseError::UnsupportedTransferEncoding.status(), 501);
        assert_eq!(ParseError::ConnectNotSupported.status(), 501);
        assert_eq!(ParseError::UnsupportedVersion.status(), 505);
        assert_eq!(ParseError::BareCr.status(), 400);
        assert_eq!(ParseError::InvalidChunkTerminator.status(), 400);
    }
}
