//! The request line: `method SP request-target SP HTTP-version` (RFC 9112 §3).
//!
//! Parsed here rather than by httparse so that every rule has its own error
//! (and status code), and so an incomplete line can be judged early: a TLS
//! handshake or binary junk sent to a plain-text port fails on its first
//! byte instead of waiting for a CRLF that never comes.

use crate::error::ParseError;
use crate::head::{Span, Version};
use crate::host;
use crate::syntax::is_tchar;

/// Offsets (from the start of the line) of the request line's parts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RequestLine {
    pub method: Span,
    pub target: Span,
    /// `None` when the path is implied "/" (absolute-form without a path).
    pub path: Option<Span>,
    pub query: Span,
    pub version: Version,
}

/// Judge the method of an incomplete line (no LF yet), so bad input fails
/// as soon as it arrives. Agrees with [`parse`] on any completion.
/// `Ok(true)` once the method and its SP are complete (no need to look again).
pub(crate) fn check_partial(partial: &[u8]) -> Result<bool, ParseError> {
    // A final CR may still become the line's CRLF.
    let partial = partial.strip_suffix(b"\r").unwrap_or(partial);
    check_method(partial).map(|len| len.is_some())
}

/// Validate the method prefix; `Some(len)` once its terminating SP is seen.
fn check_method(line: &[u8]) -> Result<Option<usize>, ParseError> {
    for (i, &b) in line.iter().enumerate() {
        match b {
            // RFC 9112 §3: method SP ...; an empty method is no token.
            b' ' if i == 0 => return Err(ParseError::InvalidMethod),
            b' ' => return Ok(Some(i)),
            // RFC 9112 §2.2: a bare CR is invalid anywhere in the head.
            b'\r' => return Err(ParseError::BareCr),
            // RFC 9110 §9.1: method = token.
            _ if !is_tchar(b) => return Err(ParseError::InvalidMethod),
            _ => {}
        }
    }
    Ok(None)
}

/// Parse a complete request line (CRLF excluded).
pub(crate) fn parse(line: &[u8]) -> Result<RequestLine, ParseError> {
    let method_len = check_method(line)?;
    if line.contains(&b'\r') {
        return Err(ParseError::BareCr);
    }
    // RFC 9112 §3: exactly one SP between the parts (no "GET  /", no HTTP/0.9 "GET /").
    let method_len = method_len.ok_or(ParseError::InvalidRequestLine)?;
    let target_start = method_len + 1;
    let target_len = line[target_start..]
        .iter()
        .position(|&b| b == b' ')
        .ok_or(ParseError::InvalidRequestLine)?;
    if target_len == 0 {
        return Err(ParseError::InvalidRequestLine);
    }
    let version_start = target_start + target_len + 1;
    let version = parse_version(&line[version_start..])?;

    let method = &line[..method_len];
    // RFC 9110 §9.3.6: CONNECT asks for a tunnel, which this server does not
    // offer; 501 tells the client the method is not implemented (§15.6.2).
    if method == b"CONNECT" {
        return Err(ParseError::ConnectNotSupported);
    }
    let target = span(target_start, target_start + target_len);
    let (path, query) = parse_target(method, &line[target_start..version_start - 1], target_start)?;
    Ok(RequestLine {
        method: span(0, method_len),
        target,
        path,
        query,
        version,
    })
}

fn span(start: usize, end: usize) -> Span {
    Span::new(start, end)
}

/// RFC 9112 §2.3: `HTTP-version = HTTP-name "/" DIGIT "." DIGIT`, case-sensitive.
fn parse_version(v: &[u8]) -> Result<Version, ParseError> {
    match v {
        b"HTTP/1.1" => Ok(Version::Http11),
        b"HTTP/1.0" => Ok(Version::Http10),
        // Well-formed but another major version: 505 per RFC 9110
        // §15.6.6 (the HTTP/2 preface is caught before this).
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            Err(ParseError::UnsupportedVersion)
        }
        _ => Err(ParseError::InvalidVersion),
    }
}

/// Split a request target into (path, query) spans, offset by `base`.
fn parse_target(
    method: &[u8],
    target: &[u8],
    base: usize,
) -> Result<(Option<Span>, Span), ParseError> {
    // RFC 9112 §3.2 / RFC 3986: a target is visible ASCII; CTLs, SP and
    // non-ASCII bytes cannot appear, and '#' starts a fragment, which is
    // never part of a request-target. Other RFC 3986 delimiters ("|", "{",
    // '"', …) are passed through raw, as h11 and httptools do.
    if !target
        .iter()
        .all(|&b| (0x21..=0x7e).contains(&b) && b != b'#')
    {
        return Err(ParseError::InvalidTarget);
    }
    let split_query = |from: usize| -> (Option<Span>, Span) {
        let rest = &target[from..];
        match rest.iter().position(|&b| b == b'?') {
            Some(q) => (
                Some(span(base + from, base + from + q)),
                span(base + from + q + 1, base + target.len()),
            ),
            None => (
                Some(span(base + from, base + target.len())),
                span(base + target.len(), base + target.len()),
            ),
        }
    };
    match target {
        // RFC 9112 §3.2.4: asterisk-form only for a server-wide OPTIONS.
        b"*" if method == b"OPTIONS" => Ok((Some(span(base, base + 1)), span(base + 1, base + 1))),
        b"*" => Err(ParseError::InvalidTarget),
        // RFC 9112 §3.2.1: origin-form = absolute-path [ "?" query ].
        [b'/', ..] => Ok(split_query(0)),
        _ => {
            // RFC 9112 §3.2.2: absolute-form; a server MUST accept it. Only
            // http and https name resources this server can serve.
            let after_scheme = strip_prefix_ignore_case(target, b"http://")
                .or_else(|| strip_prefix_ignore_case(target, b"https://"))
                .ok_or(ParseError::InvalidTarget)?;
            let authority_start = target.len() - after_scheme.len();
            let authority_len = after_scheme
                .iter()
                .position(|&b| b == b'/' || b == b'?')
                .unwrap_or(after_scheme.len());
            let authority = &after_scheme[..authority_len];
            // RFC 9110 §4.2.1: an http(s) URI with an empty host is invalid;
            // §4.2.4: userinfo is deprecated and its presence an error.
            if !host::is_valid_authority(authority) {
                return Err(ParseError::InvalidTarget);
            }
            let path_start = authority_start + authority_len;
            if target.get(path_start) == Some(&b'/') {
                Ok(split_query(path_start))
            } else {
                // Empty path: the path is "/" (RFC 9112 §3.2.1), the query may follow.
                let (_, query) = split_query(path_start);
                Ok((None, query))
            }
        }
    }
}

fn strip_prefix_ignore_case<'a>(s: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    if s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix) {
        Some(&s[prefix.len()..])
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ParseError::*;

    fn parts(line: &[u8]) -> (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Version) {
        let rl = parse(line).expect("valid line");
        let get = |s: Span| line[s.range()].to_vec();
        (
            get(rl.method),
            get(rl.target),
            rl.path.map(get).unwrap_or_else(|| b"/".to_vec()),
            get(rl.query),
            rl.version,
        )
    }

    #[test]
    fn origin_form() {
        let (m, t, p, q, v) = parts(b"GET /a/b?x=1?y HTTP/1.1");
        assert_eq!(
            (&m[..], &t[..], &p[..], &q[..]),
            (&b"GET"[..], &b"/a/b?x=1?y"[..], &b"/a/b"[..], &b"x=1?y"[..])
        );
        assert_eq!(v, Version::Http11);
        let (_, _, p, q, v) = parts(b"POST / HTTP/1.0");
        assert_eq!((&p[..], &q[..], v), (&b"/"[..], &b""[..], Version::Http10));
        let (_, _, p, q, _) = parts(b"GET /? HTTP/1.1");
        assert_eq!((&p[..], &q[..]), (&b"/"[..], &b""[..]));
    }

    #[test]
    fn absolute_form() {
        let (_, t, p, q, _) = parts(b"GET http://example.com:8080/p?q HTTP/1.1");
        assert_eq!(
            (&t[..], &p[..], &q[..]),
            (&b"http://example.com:8080/p?q"[..], &b"/p"[..], &b"q"[..])
        );
        let (_, _, p, q, _) = parts(b"GET HTTPS://example.com HTTP/1.1");
        assert_eq!((&p[..], &q[..]), (&b"/"[..], &b""[..]));
        let (_, _, p, q, _) = parts(b"GET http://[::1]?a=b HTTP/1.1");
        assert_eq!((&p[..], &q[..]), (&b"/"[..], &b"a=b"[..]));
        for bad in [
            &b"GET http:///p HTTP/1.1"[..],
            b"GET http://user@host/ HTTP/1.1",
            b"GET ftp://host/ HTTP/1.1",
            b"GET example.com/ HTTP/1.1",
            b"GET http://exa mple/ HTTP/1.1",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(
            parse(b"GET ftp://host/ HTTP/1.1").unwrap_err(),
            InvalidTarget
        );
        assert_eq!(
            parse(b"GET http://u@h/ HTTP/1.1").unwrap_err(),
            InvalidTarget
        );
    }

    #[test]
    fn asterisk_form_only_for_options() {
        let (m, _, p, q, _) = parts(b"OPTIONS * HTTP/1.1");
        assert_eq!(
            (&m[..], &p[..], &q[..]),
            (&b"OPTIONS"[..], &b"*"[..], &b""[..])
        );
        assert_eq!(parse(b"GET * HTTP/1.1").unwrap_err(), InvalidTarget);
    }

    #[test]
    fn target_bytes() {
        for bad in [
            &b"GET /a\x01b HTTP/1.1"[..],
            b"GET /a\x7fb HTTP/1.1",
            b"GET /caf\xc3\xa9 HTTP/1.1",
            b"GET /a#frag HTTP/1.1",
            b"GET a/b HTTP/1.1",
        ] {
            assert_eq!(parse(bad).unwrap_err(), InvalidTarget, "{bad:?}");
        }
        // Raw delimiters that RFC 3986 would have percent-encoded pass through.
        assert!(parse(b"GET /a|b{c}\"d HTTP/1.1").is_ok());
    }

    #[test]
    fn methods() {
        assert!(parse(b"M-SEARCH * HTTP/1.1").is_err()); // asterisk needs OPTIONS
        assert!(parse(b"PROPFIND /x HTTP/1.1").is_ok());
        assert_eq!(parse(b" / HTTP/1.1").unwrap_err(), InvalidMethod);
        assert_eq!(parse(b"GE(T / HTTP/1.1").unwrap_err(), InvalidMethod);
        assert_eq!(parse(b"G\xc3T / HTTP/1.1").unwrap_err(), InvalidMethod);
        assert_eq!(
            parse(b"CONNECT example.com:443 HTTP/1.1").unwrap_err(),
            ConnectNotSupported
        );
        assert_eq!(check_partial(b"\x16\x03\x01"), Err(InvalidMethod));
        assert_eq!(check_partial(b"GET\r"), Ok(false));
        assert_eq!(check_partial(b"GE\rT"), Err(BareCr));
        assert_eq!(check_partial(b"GET /\x01"), Ok(true));
    }

    #[test]
    fn structure() {
        for bad in [
            &b"GET / HTTP/1.1 "[..],
            b"GET  / HTTP/1.1",
            b"GET /",
            b"GET",
            b"GET / HTTP/1.1 extra",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(
                matches!(err, InvalidRequestLine | InvalidVersion),
                "{bad:?}: {err:?}"
            );
        }
        assert_eq!(parse(b"GET /\r HTTP/1.1").unwrap_err(), BareCr);
    }

    #[test]
    fn versions() {
        // HTTP/2's preface line is an HTTP/1.1 request line of version 2.0
        // here: it is told apart where the protocol is chosen (loop-server).
        assert_eq!(parse(b"PRI * HTTP/2.0").unwrap_err(), UnsupportedVersion);
        assert_eq!(parse(b"GET / HTTP/2.0").unwrap_err(), UnsupportedVersion);
        assert_eq!(parse(b"GET / HTTP/1.2").unwrap_err(), UnsupportedVersion);
        assert_eq!(parse(b"GET / HTTP/0.9").unwrap_err(), UnsupportedVersion);
        assert_eq!(parse(b"GET / http/1.1").unwrap_err(), InvalidVersion);
        assert_eq!(parse(b"GET / HTTP/1.10").unwrap_err(), InvalidVersion);
        assert_eq!(parse(b"GET / HTTP/2").unwrap_err(), InvalidVersion);
    }
}
