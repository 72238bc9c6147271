//! The response encoder: status line and headers with the framing decided
//! here (RFC 9112 §6), then body pieces and the end, appended to the
//! caller's output buffer.

use crate::error::ResponseError;
use crate::head::{RequestHead, Version};
use crate::status::reason_phrase;
use crate::syntax::{
    is_field_value, is_token, list_has, parse_decimal, trim_ows, write_decimal, write_hex,
};

/// The interim response a server sends before reading a body the client
/// holds back with `Expect: 100-continue` (RFC 9110 §10.1.1).
pub const CONTINUE_RESPONSE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Header fields the server adds to every response it writes, its own error
/// responses included (uvicorn's `--header NAME:VALUE`): validated like an
/// application's headers and encoded once, names in lower case.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DefaultHeaders {
    block: Vec<u8>,
}

impl DefaultHeaders {
    /// Fields that decide a response's framing or the connection's fate:
    /// the encoder sets them per response, so a fixed value on every
    /// response (a 204 with `content-length: 5`) would contradict it.
    pub const FRAMING: [&'static str; 5] = [
        "content-length",
        "transfer-encoding",
        "connection",
        "trailer",
        "upgrade",
    ];

    /// The fields, in order; a value's surrounding whitespace is dropped.
    /// An error names the first field that is not a token name with a
    /// field value (no CR, LF or other control byte but HTAB), or one of
    /// [`DefaultHeaders::FRAMING`].
    pub fn new<'h>(
        fields: impl IntoIterator<Item = (&'h [u8], &'h [u8])>,
    ) -> Result<Self, ResponseError> {
        let mut block = Vec::new();
        for (name, value) in fields {
            let name = name.to_ascii_lowercase();
            if let Some(framing) = Self::FRAMING.iter().find(|f| f.as_bytes() == name) {
                return Err(ResponseError::FramingHeader(framing));
            }
            write_field(&mut block, &name, trim_ows(value))?;
        }
        Ok(DefaultHeaders { block })
    }

    pub fn is_empty(&self) -> bool {
        self.block.is_empty()
    }

    /// The encoded `name: value\r\n` lines.
    pub fn as_bytes(&self) -> &[u8] {
        &self.block
    }
}

/// What the encoder needs to know about the request it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestInfo {
    pub version: Version,
    pub is_head: bool,
    pub keep_alive: bool,
}

impl RequestInfo {
    pub fn of(head: &RequestHead) -> Self {
        RequestInfo {
            version: head.version,
            is_head: head.is_head(),
            keep_alive: head.keep_alive,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    /// 1xx, 204, 304 or a HEAD request: no content follows the head.
    NoBody,
    /// Content-Length with this many bytes left.
    Length(u64),
    Chunked,
    /// HTTP/1.0 without a length: the body ends when the connection closes.
    CloseDelimited,
}

/// Encodes one response. Every method appends to `out` and, on error,
/// leaves `out` as it was.
#[derive(Debug)]
pub struct ResponseEncoder {
    framing: Framing,
    keep_alive: bool,
    finished: bool,
    /// A chunk's data is being written by the caller ([`Self::file`]): its
    /// closing CRLF comes before the next chunk or the last one.
    chunk_open: bool,
}

/// Header fields the encoder interprets while copying the app's headers.
#[derive(Default)]
struct AppHeaders {
    content_length: Option<u64>,
    chunked: bool,
    close: bool,
    keep_alive: bool,
    date: bool,
    server: bool,
}

impl ResponseEncoder {
    /// Write the status line and headers to `out`. The status line is always
    /// `HTTP/1.1 <status> <reason>` (RFC 9110 §6.2: a server sends its
    /// highest conformant version; 1.0 clients read it fine).
    ///
    /// Framing (RFC 9112 §6.3):
    /// * status 1xx/204/304 or a HEAD request: no body. The app's
    ///   content-length is passed through for HEAD and 304 (it describes the
    ///   GET/200 representation) and dropped for 1xx/204, where it MUST NOT
    ///   appear (RFC 9110 §8.6); the app's transfer-encoding is dropped.
    /// * `trailers` (or an app `transfer-encoding: chunked`) on HTTP/1.1:
    ///   chunked, any app content-length dropped. On HTTP/1.0 trailers are
    ///   dropped and the app's transfer-encoding too (1.0 has no chunked).
    /// * app content-length: exactly that many bytes. Values must be digits;
    ///   identical duplicates collapse, differing ones are an error.
    /// * otherwise chunked on HTTP/1.1 (`transfer-encoding: chunked` added),
    ///   close-delimited on HTTP/1.0 (keep-alive off).
    ///
    /// Connection: keep-alive is off when the request did not want it, the
    /// app sent `connection: close`, or the body is close-delimited.
    /// `connection: close` is added when the connection will close and
    /// either the request wanted keep-alive or is HTTP/1.1 (RFC 9112 §9.6
    /// asks for it in answer to a 1.1 "close"); `connection: keep-alive` is
    /// added for an HTTP/1.0 keep-alive request that stays open. For 101
    /// nothing is added and `keep_alive()` is false: the connection leaves
    /// HTTP/1.1.
    ///
    /// `date` and `server` are added (lower-case names) unless `None` or the
    /// app sent that header itself; then `defaults`, always.
    ///
    /// Validation against response splitting: names must be tokens, values
    /// (also `date`/`server`) must not hold CR, LF, NUL or any control byte
    /// other than HTAB; status must be 101 or 200..=999.
    #[allow(clippy::too_many_arguments)]
    pub fn start<'h>(
        out: &mut Vec<u8>,
        req: RequestInfo,
        status: u16,
        headers: impl IntoIterator<Item = (&'h [u8], &'h [u8])>,
        trailers: bool,
        date: Option<&[u8]>,
        server: Option<&[u8]>,
        defaults: &DefaultHeaders,
    ) -> Result<ResponseEncoder, ResponseError> {
        let mark = out.len();
        let result = write_head(out, req, status, headers, trailers, date, server, defaults);
        if result.is_err() {
            out.truncate(mark);
        }
        result
    }

    /// Append body bytes. Content-Length: error (nothing written) if they
    /// would exceed it. Chunked: one chunk; empty `data` writes nothing (an
    /// empty chunk would end the body). No-body responses drop `data`.
    pub fn body(&mut self, out: &mut Vec<u8>, data: &[u8]) -> Result<(), ResponseError> {
        if self.finished {
            return Err(ResponseError::Finished);
        }
        match &mut self.framing {
            Framing::NoBody => {}
            Framing::Length(left) => {
                let len = data.len() as u64;
                if len > *left {
                    return Err(ResponseError::TooLong);
                }
                *left -= len;
                out.extend_from_slice(data);
            }
            Framing::Chunked => {
                if self.chunk_open {
                    self.chunk_open = false;
                    out.extend_from_slice(b"\r\n");
                }
                if !data.is_empty() {
                    write_hex(out, data.len() as u64);
                    out.extend_from_slice(b"\r\n");
                    out.extend_from_slice(data);
                    out.extend_from_slice(b"\r\n");
                }
            }
            Framing::CloseDelimited => out.extend_from_slice(data),
        }
        Ok(())
    }

    /// End the response. Content-Length: error if bytes are missing.
    /// Chunked: the last chunk, `trailers` (validated like headers) and the
    /// final CRLF. Trailers are dropped for other framings.
    pub fn finish<'h>(
        &mut self,
        out: &mut Vec<u8>,
        trailers: impl IntoIterator<Item = (&'h [u8], &'h [u8])>,
    ) -> Result<(), ResponseError> {
        if self.finished {
            return Err(ResponseError::Finished);
        }
        match self.framing {
            Framing::Length(left) if left > 0 => return Err(ResponseError::TooShort),
            Framing::Chunked => {
                let mark = out.len();
                if self.chunk_open {
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n");
                for (name, value) in trailers {
                    if let Err(err) = write_field(out, name, value) {
                        out.truncate(mark);
                        return Err(err);
                    }
                }
                out.extend_from_slice(b"\r\n");
                self.chunk_open = false;
            }
            _ => {}
        }
        self.finished = true;
        Ok(())
    }

    /// How many of the `available` bytes of a file may follow as body: none
    /// for a response without one, at most the declared length's rest.
    pub fn file_len(&self, available: u64) -> u64 {
        match self.framing {
            Framing::NoBody => 0,
            Framing::Length(left) => left.min(available),
            Framing::Chunked | Framing::CloseDelimited => available,
        }
    }

    /// Frame `len` body bytes the caller writes itself, right after what
    /// this appends to `out` (a chunk header, or nothing), from a file
    /// with `sendfile`. `len` comes from [`Self::file_len`]: more than
    /// that is an error, as for [`Self::body`].
    pub fn file(&mut self, out: &mut Vec<u8>, len: u64) -> Result<(), ResponseError> {
        if self.finished {
            return Err(ResponseError::Finished);
        }
        if len > self.file_len(len) {
            return Err(ResponseError::TooLong);
        }
        match &mut self.framing {
            Framing::NoBody | Framing::CloseDelimited => {}
            Framing::Length(left) => *left -= len,
            Framing::Chunked => {
                if self.chunk_open {
                    out.extend_from_slice(b"\r\n");
                }
                self.chunk_open = len > 0;
                if len > 0 {
                    write_hex(out, len);
                    out.extend_from_slice(b"\r\n");
                }
            }
        }
        Ok(())
    }

    /// Whether the connection may carry another request after this response.
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    pub fn is_chunked(&self) -> bool {
        self.framing == Framing::Chunked
    }

    /// Declared Content-Length bytes still to send; `None` without a length.
    pub fn remaining(&self) -> Option<u64> {
        match self.framing {
            Framing::Length(left) => Some(left),
            _ => None,
        }
    }

    /// False when the response has no body (1xx/204/304/HEAD): body bytes
    /// are dropped, so the caller may skip producing them.
    pub fn has_body(&self) -> bool {
        self.framing != Framing::NoBody
    }

    /// Whether `finish` succeeded.
    pub fn is_finished(&self) -> bool {
        self.finished
    }
}

#[allow(clippy::too_many_arguments)]
fn write_head<'h>(
    out: &mut Vec<u8>,
    req: RequestInfo,
    status: u16,
    headers: impl IntoIterator<Item = (&'h [u8], &'h [u8])>,
    trailers: bool,
    date: Option<&[u8]>,
    server: Option<&[u8]>,
    defaults: &DefaultHeaders,
) -> Result<ResponseEncoder, ResponseError> {
    // 100/102/103 are interim responses (CONTINUE_RESPONSE); a final
    // response needs a three-digit code (RFC 9110 §15).
    if !(status == 101 || (200..=999).contains(&status)) {
        return Err(ResponseError::InvalidStatus(status));
    }
    write_status_line(out, status);

    let mut app = AppHeaders::default();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case(b"content-length") {
            check_field(name, value)?;
            let n = parse_decimal(trim_ows(value)).ok_or(ResponseError::InvalidContentLength)?;
            if app.content_length.is_some_and(|prev| prev != n) {
                return Err(ResponseError::ConflictingContentLength);
            }
            app.content_length = Some(n);
            continue; // written below, once framing is known
        }
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            check_field(name, value)?;
            // We only produce chunked, and apply it ourselves exactly once.
            if !trim_ows(value).eq_ignore_ascii_case(b"chunked") {
                return Err(ResponseError::InvalidTransferEncoding);
            }
            app.chunked = true;
            continue;
        }
        if name.eq_ignore_ascii_case(b"connection") {
            app.close |= list_has(value, b"close");
            app.keep_alive |= list_has(value, b"keep-alive");
        } else if name.eq_ignore_ascii_case(b"date") {
            app.date = true;
        } else if name.eq_ignore_ascii_case(b"server") {
            app.server = true;
        }
        write_field(out, name, value)?;
    }

    let http11 = req.version == Version::Http11;
    // RFC 9112 §6.3 items 1–2: these responses end with their head.
    let no_body = status < 200 || status == 204 || status == 304 || req.is_head;
    let framing = if no_body {
        Framing::NoBody
    } else if http11 && (trailers || app.chunked) {
        Framing::Chunked
    } else if let Some(n) = app.content_length {
        Framing::Length(n)
    } else if http11 {
        Framing::Chunked
    } else {
        Framing::CloseDelimited
    };

    match framing {
        // RFC 9110 §8.6: HEAD and 304 may carry the length a GET/200 would
        // have; 1xx and 204 MUST NOT carry one.
        Framing::NoBody if status >= 200 && status != 204 => {
            if let Some(n) = app.content_length {
                write_content_length(out, n);
            }
        }
        Framing::NoBody | Framing::CloseDelimited => {}
        Framing::Length(n) => write_content_length(out, n),
        Framing::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }

    let keep_alive =
        status != 101 && req.keep_alive && !app.close && framing != Framing::CloseDelimited;
    if status != 101 {
        if !keep_alive && !app.close && (req.keep_alive || http11) {
            out.extend_from_slice(b"connection: close\r\n");
        }
        // RFC 9112 §9.3: a 1.0 connection persists only if the response
        // says keep-alive too.
        if keep_alive && !http11 && !app.keep_alive {
            out.extend_from_slice(b"connection: keep-alive\r\n");
        }
    }

    if let Some(date) = date.filter(|_| !app.date) {
        write_field(out, b"date", date)?;
    }
    if let Some(server) = server.filter(|_| !app.server) {
        write_field(out, b"server", server)?;
    }
    out.extend_from_slice(&defaults.block);
    out.extend_from_slice(b"\r\n");
    Ok(ResponseEncoder {
        framing,
        keep_alive,
        finished: false,
        chunk_open: false,
    })
}

fn write_status_line(out: &mut Vec<u8>, status: u16) {
    if status == 200 {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        return;
    }
    out.extend_from_slice(b"HTTP/1.1 ");
    write_decimal(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason_phrase(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn check_field(name: &[u8], value: &[u8]) -> Result<(), ResponseError> {
    // RFC 9110 §5.1: field-name = token. §5.5: CR, LF and NUL are never
    // valid in a value; we refuse every CTL but HTAB, so no value can end
    // the header line early (response splitting).
    if !is_token(name) {
        return Err(ResponseError::InvalidHeaderName);
    }
    if !is_field_value(value) {
        return Err(ResponseError::InvalidHeaderValue);
    }
    Ok(())
}

fn write_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) -> Result<(), ResponseError> {
    check_field(name, value)?;
    out.reserve(name.len() + value.len() + 4);
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
    Ok(())
}

fn write_content_length(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(b"content-length: ");
    write_decimal(out, n);
    out.extend_from_slice(b"\r\n");
}

/// Write a complete error response: `text/plain; charset=utf-8`, the reason
/// phrase as body, content-length and `connection: close` (a parse error
/// leaves the connection unusable). Meant for 4xx/5xx; a status outside
/// 100..=999 is written as 500. `date`/`server` values that are not valid
/// field values are left out; `defaults` follow them.
pub fn error_response(
    out: &mut Vec<u8>,
    status: u16,
    date: Option<&[u8]>,
    server: Option<&[u8]>,
    defaults: &DefaultHeaders,
) {
    let status = if (100..=999).contains(&status) {
        status
    } else {
        500
    };
    let no_body = status < 200 || status == 204 || status == 304;
    let body = if no_body { "" } else { reason_phrase(status) };
    write_status_line(out, status);
    out.extend_from_slice(b"content-type: text/plain; charset=utf-8\r\n");
    if !no_body {
        write_content_length(out, body.len() as u64);
    }
    out.extend_from_slice(b"connection: close\r\n");
    for (name, value) in [(&b"date"[..], date), (b"server", server)] {
        if let Some(value) = value.filter(|v| is_field_value(v)) {
            // Cannot fail: the name is a token and the value was checked.
            let _ = write_field(out, name, value);
        }
    }
    out.extend_from_slice(&defaults.block);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body.as_bytes());
}
