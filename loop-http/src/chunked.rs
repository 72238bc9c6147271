//! The chunked transfer coding, decoding side (RFC 9112 §7.1).
//!
//! ```text
//! chunked-body = *chunk last-chunk trailer-section CRLF
//! chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! last-chunk   = 1*"0" [ chunk-ext ] CRLF
//! ```
//!
//! Chunk data is handed out as ranges of the caller's input (no copy). A
//! size line or trailer section is only consumed once complete, so the caller
//! holds at most `max_chunk_line` or `max_trailer_bytes` unconsumed bytes.

use std::ops::Range;

use crate::error::ParseError;
use crate::fields::{self, FieldScan, SectionLimits};
use crate::limits::Limits;
use crate::syntax::{hex_value, is_field_value};

/// What one call produced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Data(Range<usize>),
    NeedMore,
    /// Last chunk, trailers and final CRLF consumed.
    End,
}

#[derive(Clone, Debug)]
enum State {
    /// Reading a chunk-size line; `searched` bytes of it hold no LF.
    Size {
        searched: usize,
    },
    /// Inside chunk data with this many bytes left.
    Data(u64),
    /// Chunk data done; its CRLF is next.
    DataEnd,
    /// After the last chunk: the trailer section.
    Trailers(FieldScan),
    Done,
}

#[derive(Clone, Debug)]
pub(crate) struct ChunkedDecoder {
    state: State,
    /// Chunk-extension bytes of the body so far.
    extensions: usize,
}

impl ChunkedDecoder {
    pub(crate) fn new() -> ChunkedDecoder {
        ChunkedDecoder {
            state: State::Size { searched: 0 },
            extensions: 0,
        }
    }

    /// Decode from `input` (unconsumed bytes, starting where the last call's
    /// consumed count ended). `received` is the running de-chunked total.
    pub(crate) fn decode(
        &mut self,
        input: &[u8],
        received: &mut u64,
        limits: &Limits,
    ) -> Result<(usize, Step), ParseError> {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            match &mut self.state {
                State::Size { searched } => {
                    let max_line = limits.max_chunk_line;
                    let window = rest.len().min(max_line.saturating_add(2));
                    if *searched > window {
                        *searched = 0; // contract broken by the caller; rescan
                    }
                    let Some(lf) = rest[*searched..window].iter().position(|&b| b == b'\n') else {
                        // RFC 9112 §7.1.1 leaves extension length to the
                        // server; unbounded lines would be unbounded buffering.
                        if window >= max_line.saturating_add(2) {
                            return Err(ParseError::ChunkLineTooLong);
                        }
                        *searched = window;
                        return Ok((pos, Step::NeedMore));
                    };
                    let lf = *searched + lf;
                    if lf == 0 || rest[lf - 1] != b'\r' {
                        return Err(ParseError::BareLf);
                    }
                    let line = &rest[..lf - 1];
                    if line.len() > max_line {
                        return Err(ParseError::ChunkLineTooLong);
                    }
                    let (size, extensions) = parse_size_line(line)?;
                    // Bounded per line by max_chunk_line; and per body, so
                    // many small chunks cannot make the server scan
                    // megabytes of extensions for a few bytes of data.
                    self.extensions = self.extensions.saturating_add(extensions);
                    if self.extensions > limits.max_chunk_extensions {
                        return Err(ParseError::ChunkExtensionsTooLarge);
                    }
                    pos += lf + 1;
                    if size == 0 {
                        self.state = State::Trailers(FieldScan::default());
                        continue;
                    }
                    // 413 as soon as a declared chunk would take the total
                    // past the limit: no point reading it first.
                    if limits
                        .max_body
                        .is_some_and(|max| received.saturating_add(size) > max)
                    {
                        return Err(ParseError::BodyTooLarge);
                    }
                    self.state = State::Data(size);
                }
                State::Data(left) => {
                    if rest.is_empty() {
                        return Ok((pos, Step::NeedMore));
                    }
                    let n = usize::try_from(*left).map_or(rest.len(), |l| l.min(rest.len()));
                    *received += n as u64;
                    *left -= n as u64;
                    if *left == 0 {
                        self.state = State::DataEnd;
                    }
                    return Ok((pos + n, Step::Data(pos..pos + n)));
                }
                State::DataEnd => match rest {
                    [] | [b'\r'] => return Ok((pos, Step::NeedMore)),
                    [b'\r', b'\n', ..] => {
                        pos += 2;
                        self.state = State::Size { searched: 0 };
                    }
                    // RFC 9112 §7.1: chunk-data is followed by CRLF; anything
                    // else means the size was a lie.
                    _ => return Err(ParseError::InvalidChunkTerminator),
                },
                State::Trailers(scan) => {
                    // RFC 9112 §7.1.2: trailer fields use the field-line
                    // syntax, so the same rules and a bound of their own apply.
                    let section = SectionLimits {
                        max_bytes: limits.max_trailer_bytes,
                        max_lines: limits.max_headers,
                        too_large: ParseError::TrailersTooLarge,
                    };
                    let Some(end) = scan.advance(rest, &section)? else {
                        return Ok((pos, Step::NeedMore));
                    };
                    // Validated, then discarded: nothing downstream uses them.
                    fields::parse(&rest[..end], scan.lines(), 0)?;
                    self.state = State::Done;
                    return Ok((pos + end, Step::End));
                }
                State::Done => return Ok((pos, Step::End)),
            }
        }
    }
}

/// `chunk-size [ chunk-ext ]` (RFC 9112 §7.1, §7.1.1): the size and the
/// length of the extensions.
fn parse_size_line(line: &[u8]) -> Result<(u64, usize), ParseError> {
    if line.contains(&b'\r') {
        return Err(ParseError::BareCr);
    }
    // chunk-size = 1*HEXDIG: no sign, no "0x", no whitespace.
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return Err(ParseError::InvalidChunkSize);
    }
    let size = line[..digits].iter().try_fold(0u64, |acc, &b| {
        acc.checked_mul(16)?.checked_add(hex_value(b)?)
    });
    let size = size.ok_or(ParseError::InvalidChunkSize)?;
    match &line[digits..] {
        [] => Ok((size, 0)),
        // Extensions are ignored (§7.1.1 lets recipients do so); they only
        // must not smuggle control bytes, and their length is bounded.
        [b';', ext @ ..] if is_field_value(ext) => Ok((size, ext.len() + 1)),
        [b';', ..] => Err(ParseError::InvalidChunkExtension),
        // Trailing junk, including whitespace before ';' (BWS): strict.
        _ => Err(ParseError::InvalidChunkSize),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ParseError::*;

    /// Decode everything in `input`, as a caller that keeps unconsumed bytes
    /// and feeds `step` more each time would.
    fn decode_all(
        input: &[u8],
        step: usize,
        limits: &Limits,
    ) -> Result<Option<Vec<u8>>, ParseError> {
        let mut dec = ChunkedDecoder::new();
        let mut received = 0;
        let mut body = Vec::new();
        let mut start = 0;
        let mut avail = 0;
        loop {
            let (n, ev) = dec.decode(&input[start..avail], &mut received, limits)?;
            match ev {
                Step::Data(r) => {
                    assert!(r.end <= n);
                    body.extend_from_slice(&input[start..avail][r]);
                }
                Step::End => {
                    assert_eq!(received, body.len() as u64);
                    return Ok(Some(body));
                }
                Step::NeedMore => {
                    if avail == input.len() {
                        return Ok(None);
                    }
                    avail = (avail + step).min(input.len());
                }
            }
            start += n;
        }
    }

    fn decode(input: &[u8]) -> Result<Option<Vec<u8>>, ParseError> {
        let limits = Limits::default();
        let whole = decode_all(input, input.len().max(1), &limits);
        for step in 1..4 {
            assert_eq!(decode_all(input, step, &limits), whole, "step {step}");
        }
        whole
    }

    #[test]
    fn decodes() {
        assert_eq!(
            decode(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
            Ok(Some(b"hello world".to_vec()))
        );
        assert_eq!(decode(b"0\r\n\r\n"), Ok(Some(Vec::new())));
        assert_eq!(decode(b"000\r\n\r\n"), Ok(Some(Vec::new())));
        assert_eq!(
            decode(b"A\r\n0123456789\r\n0\r\n\r\n"),
            Ok(Some(b"0123456789".to_vec()))
        );
        assert_eq!(
            decode(b"a\r\n0123456789\r\n0\r\n\r\n"),
            Ok(Some(b"0123456789".to_vec()))
        );
        assert_eq!(decode(b"5\r\nhel"), Ok(None));
    }

    #[test]
    fn extensions_and_trailers() {
        assert_eq!(
            decode(b"3;a=b;c=\"d e\"\r\nabc\r\n0;x\r\n\r\n"),
            Ok(Some(b"abc".to_vec()))
        );
        assert_eq!(
            decode(b"3\r\nabc\r\n0\r\nX-Sum: 1\r\nY: 2\r\n\r\n"),
            Ok(Some(b"abc".to_vec()))
        );
        assert_eq!(
            decode(b"1;\x01\r\na\r\n0\r\n\r\n"),
            Err(InvalidChunkExtension)
        );
        assert_eq!(decode(b"0\r\nBad Name: 1\r\n\r\n"), Err(InvalidHeaderName));
        assert_eq!(decode(b"0\r\nX : 1\r\n\r\n"), Err(WhitespaceBeforeColon));
        assert_eq!(decode(b"0\r\nX: \x00\r\n\r\n"), Err(InvalidHeaderValue));
        assert_eq!(decode(b"0\r\nX: 1\r\n folded\r\n\r\n"), Err(ObsFold));
        assert_eq!(decode(b"0\r\nX: 1\n\r\n"), Err(BareLf));
        assert_eq!(decode(b"0\r\nX: 1\r2\r\n\r\n"), Err(BareCr));
    }

    #[test]
    fn bad_sizes() {
        for bad in [
            &b"\r\n"[..],
            b"-5\r\n",
            b"+5\r\n",
            b"0x5\r\n",
            b" 5\r\n",
            b"5 \r\n",
            b"5 ;ext\r\n",
            b"5g\r\n",
            b"g\r\n",
            b"10000000000000000\r\n",
            b"ffffffffffffffff0\r\n",
        ] {
            assert_eq!(
                decode(bad),
                Err(InvalidChunkSize),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(decode(b"5\n"), Err(BareLf));
        assert_eq!(decode(b"\n"), Err(BareLf));
        assert_eq!(decode(b"5\r5\r\n"), Err(BareCr));
    }

    #[test]
    fn data_terminator() {
        assert_eq!(
            decode(b"3\r\nabcd\r\n0\r\n\r\n"),
            Err(InvalidChunkTerminator)
        );
        assert_eq!(decode(b"3\r\nabc\n0\r\n\r\n"), Err(InvalidChunkTerminator));
        assert_eq!(decode(b"3\r\nabc\r0\r\n\r\n"), Err(InvalidChunkTerminator));
        assert_eq!(decode(b"3\r\nabc0\r\n\r\n"), Err(InvalidChunkTerminator));
    }

    #[test]
    fn chunk_line_limit() {
        let limits = Limits {
            max_chunk_line: 8,
            ..Limits::default()
        };
        let ok = b"1;abcdef\r\nx\r\n0\r\n\r\n"; // line of exactly 8
        assert_eq!(decode_all(ok, 100, &limits), Ok(Some(b"x".to_vec())));
        assert_eq!(decode_all(ok, 1, &limits), Ok(Some(b"x".to_vec())));
        let long = b"1;abcdefg\r\nx\r\n0\r\n\r\n";
        assert_eq!(decode_all(long, 100, &limits), Err(ChunkLineTooLong));
        assert_eq!(decode_all(long, 1, &limits), Err(ChunkLineTooLong));
        // Never terminated: refused once max+2 bytes hold no LF.
        let endless = [b'1'; 10];
        assert_eq!(decode_all(&endless[..9], 1, &limits), Ok(None));
        assert_eq!(decode_all(&endless, 1, &limits), Err(ChunkLineTooLong));
    }

    #[test]
    fn trailer_limit() {
        let limits = Limits {
            max_trailer_bytes: 16,
            ..Limits::default()
        };
        let ok = b"0\r\nX: 123456789\r\n\r\n"; // trailer section of 16 bytes
        assert_eq!(decode_all(ok, 100, &limits), Ok(Some(Vec::new())));
        let big = b"0\r\nX: 1234567890\r\n\r\n";
        assert_eq!(decode_all(big, 100, &limits), Err(TrailersTooLarge));
        assert_eq!(decode_all(big, 1, &limits), Err(TrailersTooLarge));
        let endless = [b'x'; 40];
        let mut input = b"0\r\n".to_vec();
        input.extend_from_slice(&endless);
        assert_eq!(decode_all(&input, 1, &limits), Err(TrailersTooLarge));
        let limits = Limits {
            max_headers: 1,
            ..Limits::default()
        };
        assert_eq!(
            decode_all(b"0\r\na: 1\r\nb: 2\r\n\r\n", 100, &limits),
            Err(TooManyHeaders)
        );
    }

    #[test]
    fn max_body_running_total() {
        let limits = Limits {
            max_body: Some(5),
            ..Limits::default()
        };
        assert_eq!(
            decode_all(b"2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n", 100, &limits),
            Ok(Some(b"abcde".to_vec()))
        );
        assert_eq!(
            decode_all(b"2\r\nab\r\n4\r\ncdef\r\n0\r\n\r\n", 100, &limits),
            Err(BodyTooLarge)
        );
        assert_eq!(decode_all(b"6\r\n", 100, &limits), Err(BodyTooLarge));
        let huge = b"ffffffffffffffff\r\n";
        assert_eq!(
            decode_all(
                huge,
                100,
                &Limits {
                    max_body: None,
                    ..Limits::default()
                }
            ),
            Ok(None)
        );
    }
}
