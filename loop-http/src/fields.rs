//! Field sections: the header block of a head and the trailer section of a
//! chunked body (RFC 9112 §2.2, §5, §7.1.2).
//!
//! Two passes. [`FieldScan`] runs as bytes arrive: it finds the empty line
//! that ends the section and enforces the line syntax httparse is lenient
//! about (bare LF, bare CR, folding) plus the size and count limits, without
//! copying and without rescanning what it already saw. Once the section is
//! complete, [`parse`] hands it to httparse (strict defaults) for the
//! name/value grammar and records each field as offsets.

use crate::error::ParseError;
use crate::head::{Field, Span};
use crate::syntax::{is_field_value, is_token, trim_ows};

/// Bounds for one field section.
#[derive(Clone, Debug)]
pub(crate) struct SectionLimits {
    pub max_bytes: usize,
    pub max_lines: usize,
    /// The error for a section larger than `max_bytes`.
    pub too_large: ParseError,
}

/// Incremental scan state. Offsets are from the section's first byte, which
/// must stay at the start of the caller's input until the section ends.
#[derive(Clone, Debug, Default)]
pub(crate) struct FieldScan {
    /// Start of the first line not yet complete.
    pos: usize,
    /// Field lines seen.
    lines: usize,
}

impl FieldScan {
    /// Start scanning at `pos` (after a request line).
    pub(crate) fn starting_at(pos: usize) -> FieldScan {
        FieldScan { pos, lines: 0 }
    }

    pub(crate) fn lines(&self) -> usize {
        self.lines
    }

    /// Scan `input` from where the last call stopped. `Some(end)`: the
    /// section is complete, `input[..end]` ends with the empty line.
    pub(crate) fn advance(
        &mut self,
        input: &[u8],
        limits: &SectionLimits,
    ) -> Result<Option<usize>, ParseError> {
        if self.pos > input.len() {
            // The caller broke the contract (dropped unconsumed bytes);
            // rescan rather than slice out of bounds.
            *self = FieldScan::default();
        }
        loop {
            let Some(lf) = input[self.pos..].iter().position(|&b| b == b'\n') else {
                // Incomplete: the bytes held so far already exceed the bound.
                if input.len() > limits.max_bytes {
                    return Err(limits.too_large.clone());
                }
                return Ok(None);
            };
            let lf = self.pos + lf;
            let end = lf + 1;
            if end > limits.max_bytes {
                return Err(limits.too_large.clone());
            }
            // RFC 9112 §2.2: lines end in CRLF. Accepting a bare LF is a MAY
            // that lets two parsers disagree on where a line ends; refuse it.
            if lf == self.pos || input[lf - 1] != b'\r' {
                return Err(ParseError::BareLf);
            }
            let line = &input[self.pos..lf - 1];
            // RFC 9112 §2.2: a bare CR MUST be rejected or replaced by SP.
            if line.contains(&b'\r') {
                return Err(ParseError::BareCr);
            }
            match line.first() {
                None => {
                    self.pos = end;
                    return Ok(Some(end));
                }
                // RFC 9112 §5.2: obs-fold in a request MUST be rejected (or
                // replaced); RFC 9112 §2.2: whitespace before the first
                // field line MUST be rejected (or the line ignored).
                Some(b' ' | b'\t') => return Err(ParseError::ObsFold),
                Some(_) => {}
            }
            self.lines += 1;
            if self.lines > limits.max_lines {
                return Err(ParseError::TooManyHeaders);
            }
            self.pos = end;
        }
    }
}

/// Parse a complete field section `section` (ending with the empty line)
/// that holds `lines` field lines, as found by [`FieldScan`]. Returned spans
/// are offset by `base`.
pub(crate) fn parse(section: &[u8], lines: usize, base: usize) -> Result<Vec<Field>, ParseError> {
    if lines == 0 {
        return Ok(Vec::new());
    }
    // Exactly as many slots as lines: httparse cannot run out, and small
    // heads (the common case) need no heap array.
    let mut stack = [httparse::EMPTY_HEADER; 32];
    let mut heap;
    let slots: &mut [httparse::Header<'_>] = if lines <= stack.len() {
        &mut stack[..lines]
    } else {
        heap = vec![httparse::EMPTY_HEADER; lines];
        &mut heap
    };
    // parse_headers uses httparse's strict defaults: no space before the
    // colon, no folding, no invalid-header skipping. It enforces RFC 9110
    // §5.1 (field-name = token) and §5.5 (no CTL but HTAB in values).
    let parsed = match httparse::parse_headers(section, slots) {
        Ok(httparse::Status::Complete((_, parsed))) => parsed,
        // FieldScan saw the empty line, so httparse cannot want more; if it
        // does, the bytes are not what the scan saw.
        Ok(httparse::Status::Partial) => return Err(ParseError::InvalidHeaderName),
        Err(err) => return Err(diagnose(section).unwrap_or(map_error(err))),
    };
    let origin = section.as_ptr() as usize;
    let span_of = |s: &[u8]| -> Result<Span, ParseError> {
        // httparse returns subslices of `section`; turn them into offsets.
        let start = (s.as_ptr() as usize).wrapping_sub(origin);
        let end = start.wrapping_add(s.len());
        if start > section.len() || end > section.len() || end < start {
            return Err(ParseError::InvalidHeaderName);
        }
        Ok(Span::new(base + start, base + end))
    };
    let mut fields = Vec::with_capacity(parsed.len());
    for header in parsed.iter() {
        // httparse's value map lets DEL through on some paths; RFC 9110
        // §5.5 does not (it is a CTL). Check the few bytes ourselves.
        if !is_field_value(header.value) {
            return Err(ParseError::InvalidHeaderValue);
        }
        fields.push(Field {
            name: span_of(header.name.as_bytes())?,
            value: span_of(header.value)?,
        });
    }
    Ok(fields)
}

fn map_error(err: httparse::Error) -> ParseError {
    match err {
        httparse::Error::HeaderValue => ParseError::InvalidHeaderValue,
        httparse::Error::TooManyHeaders => ParseError::TooManyHeaders,
        httparse::Error::NewLine => ParseError::BareCr,
        _ => ParseError::InvalidHeaderName,
    }
}

/// Name the first rule a section breaks, so each gets its own error.
/// Only runs on the error path; `None` if no line is faulty by our reading.
fn diagnose(section: &[u8]) -> Option<ParseError> {
    for line in section.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Some(ParseError::InvalidHeaderName);
        };
        let name = &line[..colon];
        if !is_token(name) {
            // RFC 9112 §5.1: no whitespace between field name and colon; a
            // server MUST reject such a request with 400.
            let trimmed = trim_ows(name);
            if trimmed.len() < name.len() && name.starts_with(trimmed) && is_token(trimmed) {
                return Some(ParseError::WhitespaceBeforeColon);
            }
            return Some(ParseError::InvalidHeaderName);
        }
        if !is_field_value(&line[colon + 1..]) {
            return Some(ParseError::InvalidHeaderValue);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: SectionLimits = SectionLimits {
        max_bytes: 64,
        max_lines: 3,
        too_large: ParseError::HeadTooLarge,
    };

    fn scan_all(input: &[u8]) -> Result<Option<usize>, ParseError> {
        FieldScan::default().advance(input, &LIMITS)
    }

    #[test]
    fn finds_the_end_incrementally() {
        let input = b"a: 1\r\nb: 2\r\n\r\nBODY";
        let mut scan = FieldScan::default();
        for n in 0..14 {
            assert_eq!(scan.advance(&input[..n], &LIMITS), Ok(None), "{n}");
        }
        assert_eq!(scan.advance(input, &LIMITS), Ok(Some(14)));
        assert_eq!(scan.lines(), 2);
        assert_eq!(scan_all(b"\r\n"), Ok(Some(2)));
    }

    #[test]
    fn line_syntax() {
        assert_eq!(scan_all(b"a: 1\nb: 2\r\n\r\n"), Err(ParseError::BareLf));
        assert_eq!(scan_all(b"\n"), Err(ParseError::BareLf));
        assert_eq!(scan_all(b"a: 1\r\n\n"), Err(ParseError::BareLf));
        assert_eq!(scan_all(b"a: 1\rb: 2\r\n\r\n"), Err(ParseError::BareCr));
        assert_eq!(scan_all(b"a: 1\r\r\n\r\n"), Err(ParseError::BareCr));
        assert_eq!(
            scan_all(b"a: 1\r\n folded\r\n\r\n"),
            Err(ParseError::ObsFold)
        );
        assert_eq!(
            scan_all(b"a: 1\r\n\tfolded\r\n\r\n"),
            Err(ParseError::ObsFold)
        );
    }

    #[test]
    fn bounds() {
        assert_eq!(scan_all(&[b'a'; 65]), Err(ParseError::HeadTooLarge));
        assert_eq!(scan_all(&[b'a'; 64]), Ok(None));
        let mut exact = vec![b'a'; 60];
        exact.extend_from_slice(b"\r\n\r\n");
        assert!(matches!(scan_all(&exact), Ok(Some(64))));
        exact.insert(0, b'a');
        assert_eq!(scan_all(&exact), Err(ParseError::HeadTooLarge));
        assert_eq!(
            scan_all(b"a:1\r\nb:2\r\nc:3\r\nd:4\r\n\r\n"),
            Err(ParseError::TooManyHeaders)
        );
        assert_eq!(scan_all(b"a:1\r\nb:2\r\nc:3\r\n\r\n"), Ok(Some(17)));
    }

    type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

    fn parse_all(section: &[u8]) -> Result<Pairs, ParseError> {
        let mut scan = FieldScan::default();
        let limits = SectionLimits {
            max_bytes: 1 << 20,
            max_lines: 1000,
            ..LIMITS
        };
        let end = scan.advance(section, &limits)?.expect("complete");
        let fields = parse(&section[..end], scan.lines(), 0)?;
        Ok(fields
            .iter()
            .map(|f| {
                (
                    section[f.name.range()].to_vec(),
                    section[f.value.range()].to_vec(),
                )
            })
            .collect())
    }

    #[test]
    fn parses_names_and_trimmed_values() {
        let fields = parse_all(b"Host: a\r\nX-Empty:\r\nX-Ws: \t v  1 \t\r\n\r\n").unwrap();
        assert_eq!(
            fields,
            vec![
                (b"Host".to_vec(), b"a".to_vec()),
                (b"X-Empty".to_vec(), b"".to_vec()),
                (b"X-Ws".to_vec(), b"v  1".to_vec()),
            ]
        );
        // More than the stack array holds.
        let mut many = Vec::new();
        for i in 0..40 {
            many.extend_from_slice(format!("h{i}: v{i}\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        let fields = parse_all(&many).unwrap();
        assert_eq!(fields.len(), 40);
        assert_eq!(fields[39], (b"h39".to_vec(), b"v39".to_vec()));
    }

    #[test]
    fn field_rules() {
        use ParseError::*;
        assert_eq!(parse_all(b"Host : a\r\n\r\n"), Err(WhitespaceBeforeColon));
        assert_eq!(parse_all(b"Host\t: a\r\n\r\n"), Err(WhitespaceBeforeColon));
        assert_eq!(parse_all(b"Ho st: a\r\n\r\n"), Err(InvalidHeaderName));
        assert_eq!(parse_all(b": a\r\n\r\n"), Err(InvalidHeaderName));
        assert_eq!(parse_all(b"NoColon\r\n\r\n"), Err(InvalidHeaderName));
        assert_eq!(parse_all(b"N\xc3\xa4me: a\r\n\r\n"), Err(InvalidHeaderName));
        assert_eq!(parse_all(b"N(me): a\r\n\r\n"), Err(InvalidHeaderName));
        assert_eq!(parse_all(b"a: b\x00c\r\n\r\n"), Err(InvalidHeaderValue));
        assert_eq!(parse_all(b"a: b\x7fc\r\n\r\n"), Err(InvalidHeaderValue));
        assert_eq!(parse_all(b"a: b\x1bc\r\n\r\n"), Err(InvalidHeaderValue));
        assert_eq!(parse_all(b"a: \x7f\r\n\r\n"), Err(InvalidHeaderValue));
        // HTAB and obs-text are allowed in values.
        assert!(parse_all(b"a: b\tc\x80\xff\r\n\r\n").is_ok());
    }
}
