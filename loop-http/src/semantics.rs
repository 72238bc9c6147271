//! What a server decides from a request's header fields: how the body is
//! framed (RFC 9112 §6), whether the connection persists (§9.3), and the
//! Host, Expect and Upgrade rules. The RFC text that forces each decision
//! sits next to the code that makes it.

use crate::error::ParseError;
use crate::head::{BodyFraming, Field, Version};
use crate::host::is_valid_host_field;
use crate::limits::Limits;
use crate::syntax::{list_has, list_items, parse_decimal};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decisions {
    pub body: BodyFraming,
    pub keep_alive: bool,
    pub expect_continue: bool,
    pub upgrade: bool,
}

/// Decide from the fields of a head whose names are already lower-case.
pub(crate) fn decide(
    version: Version,
    buf: &[u8],
    fields: &[Field],
    limits: &Limits,
) -> Result<Decisions, ParseError> {
    let mut content_length: Option<u64> = None;
    let mut te = TransferCodings::default();
    let mut hosts = 0usize;
    let mut host_valid = true;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut upgrade_token = false;
    let mut upgrade_field = false;
    let mut expect_continue = false;

    for field in fields {
        let value = buf.get(field.value.range()).unwrap_or_default();
        match buf.get(field.name.range()).unwrap_or_default() {
            b"content-length" => {
                // RFC 9110 §8.6: Content-Length = 1*DIGIT. A list of identical
                // values ("5, 5", or repeated lines) MAY be accepted as one;
                // differing values MUST be rejected (RFC 9112 §6.3 item 5).
                for item in list_items(value) {
                    let n = parse_decimal(item).ok_or(ParseError::InvalidContentLength)?;
                    match content_length {
                        Some(prev) if prev != n => {
                            return Err(ParseError::ConflictingContentLength)
                        }
                        _ => content_length = Some(n),
                    }
                }
            }
            b"transfer-encoding" => te.add(value),
            b"host" => {
                hosts += 1;
                host_valid &= is_valid_host_field(value);
            }
            b"connection" => {
                // RFC 9110 §7.6.1: connection options are case-insensitive tokens.
                close |= list_has(value, b"close");
                keep_alive_token |= list_has(value, b"keep-alive");
                upgrade_token |= list_has(value, b"upgrade");
            }
            b"expect" => {
                // RFC 9110 §10.1.1: 100-continue is the only expectation
                // defined; a server MAY answer any other with 417, which
                // a strict one does (before reading any body).
                // Empty elements are ignored (RFC 9110 §5.6.1.2).
                for item in list_items(value).filter(|i| !i.is_empty()) {
                    if !item.eq_ignore_ascii_case(b"100-continue") {
                        return Err(ParseError::ExpectationFailed);
                    }
                    expect_continue = true;
                }
            }
            b"upgrade" => upgrade_field = true,
            _ => {}
        }
    }

    let body = if te.present {
        // RFC 9112 §6.1: a server MAY reject a 1.0 request with
        // Transfer-Encoding, and a 1.0 intermediary may not have understood
        // it; treating it as framing invites smuggling, so reject.
        if version == Version::Http10 {
            return Err(ParseError::TransferEncodingInHttp10);
        }
        // RFC 9112 §6.1: a server MAY reject a request with both, which is
        // the classic smuggling vector; it then must close the connection.
        if content_length.is_some() {
            return Err(ParseError::ContentLengthWithTransferEncoding);
        }
        te.framing()?
    } else {
        match content_length {
            None | Some(0) => BodyFraming::Empty,
            Some(n) => {
                // RFC 9110 §15.5.14: 413 for content larger than we accept,
                // known here before a byte of it arrives.
                if limits.max_body.is_some_and(|max| n > max) {
                    return Err(ParseError::BodyTooLarge);
                }
                BodyFraming::Length(n)
            }
        }
    };

    // RFC 9112 §3.2: 400 for an HTTP/1.1 request without Host, and for any
    // request with more than one Host line or an invalid Host value.
    if hosts > 1 {
        return Err(ParseError::MultipleHost);
    }
    if hosts == 0 && version == Version::Http11 {
        return Err(ParseError::MissingHost);
    }
    if !host_valid {
        return Err(ParseError::InvalidHost);
    }

    let http11 = version == Version::Http11;
    // RFC 9112 §9.3: 1.1 persists unless "close"; 1.0 only with "keep-alive".
    let keep_alive = !close && (http11 || keep_alive_token);
    Ok(Decisions {
        body,
        keep_alive,
        // RFC 9110 §10.1.1: 100-continue is an HTTP/1.1 mechanism and only
        // meaningful when content follows.
        expect_continue: http11 && expect_continue && body != BodyFraming::Empty,
        // RFC 9110 §7.8: Upgrade needs the "upgrade" connection option, and
        // a server MUST ignore Upgrade in an HTTP/1.0 request.
        upgrade: http11 && upgrade_token && upgrade_field,
    })
}

/// The transfer codings of all Transfer-Encoding lines, in order.
#[derive(Default)]
struct TransferCodings {
    present: bool,
    chunked: usize,
    last_is_chunked: bool,
    other: bool,
}

impl TransferCodings {
    fn add(&mut self, value: &[u8]) {
        self.present = true;
        for coding in list_items(value) {
            // RFC 9110 §5.6.1.2: recipients ignore empty list elements.
            if coding.is_empty() {
                continue;
            }
            // RFC 9112 §7: coding names are case-insensitive.
            let is_chunked = coding.eq_ignore_ascii_case(b"chunked");
            if is_chunked {
                self.chunked += 1;
            } else {
                self.other = true;
            }
            self.last_is_chunked = is_chunked;
        }
    }

    fn framing(&self) -> Result<BodyFraming, ParseError> {
        // RFC 9112 §6.3 item 4: chunked not final → length unknowable → 400.
        // RFC 9112 §7: chunked MUST NOT be applied twice.
        if self.chunked > 1 || (self.chunked == 1 && !self.last_is_chunked) {
            return Err(ParseError::InvalidTransferEncoding);
        }
        // RFC 9112 §6.1: a server that receives a coding it does not
        // understand SHOULD respond 501. We decode only chunked. (A lone
        // unknown coding also leaves chunked non-final, which §6.3 answers
        // with 400; we give the more telling 501, the connection closes
        // either way.)
        if self.other {
            return Err(ParseError::UnsupportedTransferEncoding);
        }
        // A field with no codings at all frames nothing.
        if self.chunked == 0 {
            return Err(ParseError::InvalidTransferEncoding);
        }
        Ok(BodyFraming::Chunked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::head::Span;
    use ParseError::*;

    /// Build `buf` and fields from (name, value) pairs (names lower-case).
    fn run(
        version: Version,
        pairs: &[(&str, &str)],
        limits: &Limits,
    ) -> Result<Decisions, ParseError> {
        let mut buf = Vec::new();
        let mut fields = Vec::new();
        for (n, v) in pairs {
            let ns = buf.len();
            buf.extend_from_slice(n.as_bytes());
            let vs = buf.len();
            buf.extend_from_slice(v.as_bytes());
            fields.push(Field {
                name: Span::new(ns, vs),
                value: Span::new(vs, buf.len()),
            });
        }
        decide(version, &buf, &fields, limits)
    }

    fn v11(pairs: &[(&str, &str)]) -> Result<Decisions, ParseError> {
        let mut all = vec![("host", "h")];
        all.extend_from_slice(pairs);
        run(Version::Http11, &all, &Limits::default())
    }

    fn v10(pairs: &[(&str, &str)]) -> Result<Decisions, ParseError> {
        run(Version::Http10, pairs, &Limits::default())
    }

    #[test]
    fn content_length() {
        assert_eq!(v11(&[]).unwrap().body, BodyFraming::Empty);
        assert_eq!(
            v11(&[("content-length", "0")]).unwrap().body,
            BodyFraming::Empty
        );
        assert_eq!(
            v11(&[("content-length", "5")]).unwrap().body,
            BodyFraming::Length(5)
        );
        assert_eq!(
            v11(&[("content-length", "5"), ("content-length", "5")])
                .unwrap()
                .body,
            BodyFraming::Length(5)
        );
        assert_eq!(
            v11(&[("content-length", "5, 5")]).unwrap().body,
            BodyFraming::Length(5)
        );
        assert_eq!(
            v11(&[("content-length", "5"), ("content-length", "6")]),
            Err(ConflictingContentLength)
        );
        assert_eq!(
            v11(&[("content-length", "5, 6")]),
            Err(ConflictingContentLength)
        );
        for bad in [
            "",
            "-1",
            "+1",
            "0x10",
            "1.0",
            "1 2",
            "5,",
            ",5",
            "abc",
            "18446744073709551616",
        ] {
            assert_eq!(
                v11(&[("content-length", bad)]),
                Err(InvalidContentLength),
                "{bad:?}"
            );
        }
        assert_eq!(
            v11(&[("content-length", "18446744073709551615")]),
            Err(BodyTooLarge)
        );
    }

    #[test]
    fn max_body_at_head_time() {
        let limits = Limits {
            max_body: Some(10),
            ..Limits::default()
        };
        let with = |cl: &str| {
            run(
                Version::Http11,
                &[("host", "h"), ("content-length", cl)],
                &limits,
            )
        };
        assert_eq!(with("10").unwrap().body, BodyFraming::Length(10));
        assert_eq!(with("11"), Err(BodyTooLarge));
        let unbounded = Limits {
            max_body: None,
            ..Limits::default()
        };
        let d = run(
            Version::Http11,
            &[("host", "h"), ("content-length", "18446744073709551615")],
            &unbounded,
        );
        assert_eq!(d.unwrap().body, BodyFraming::Length(u64::MAX));
    }

    #[test]
    fn transfer_encoding() {
        let te = |v: &str| v11(&[("transfer-encoding", v)]);
        assert_eq!(te("chunked").unwrap().body, BodyFraming::Chunked);
        assert_eq!(te("Chunked").unwrap().body, BodyFraming::Chunked);
        assert_eq!(te(" , chunked").unwrap().body, BodyFraming::Chunked);
        assert_eq!(te("gzip, chunked"), Err(UnsupportedTransferEncoding));
        assert_eq!(te("identity"), Err(UnsupportedTransferEncoding));
        assert_eq!(te("gzip"), Err(UnsupportedTransferEncoding));
        assert_eq!(te("chunked;q=1"), Err(UnsupportedTransferEncoding));
        assert_eq!(te("chunked, gzip"), Err(InvalidTransferEncoding));
        assert_eq!(te("chunked, chunked"), Err(InvalidTransferEncoding));
        assert_eq!(te(""), Err(InvalidTransferEncoding));
        // Split across lines counts as one list.
        let two = v11(&[
            ("transfer-encoding", "gzip"),
            ("transfer-encoding", "chunked"),
        ]);
        assert_eq!(two, Err(UnsupportedTransferEncoding));
        let two = v11(&[
            ("transfer-encoding", "chunked"),
            ("transfer-encoding", "chunked"),
        ]);
        assert_eq!(two, Err(InvalidTransferEncoding));
    }

    #[test]
    fn te_with_cl_and_http10() {
        assert_eq!(
            v11(&[("content-length", "5"), ("transfer-encoding", "chunked")]),
            Err(ContentLengthWithTransferEncoding)
        );
        assert_eq!(
            v11(&[("transfer-encoding", "chunked"), ("content-length", "5")]),
            Err(ContentLengthWithTransferEncoding)
        );
        assert_eq!(
            v10(&[("transfer-encoding", "chunked")]),
            Err(TransferEncodingInHttp10)
        );
    }

    #[test]
    fn host_rules() {
        assert_eq!(
            run(Version::Http11, &[], &Limits::default()),
            Err(MissingHost)
        );
        assert!(v10(&[]).is_ok());
        assert_eq!(v11(&[("host", "other")]), Err(MultipleHost));
        assert_eq!(v10(&[("host", "a"), ("host", "a")]), Err(MultipleHost));
        assert_eq!(v10(&[("host", "a b")]), Err(InvalidHost));
        assert_eq!(
            run(Version::Http11, &[("host", "u@h")], &Limits::default()),
            Err(InvalidHost)
        );
        assert!(run(Version::Http11, &[("host", "")], &Limits::default()).is_ok());
    }

    #[test]
    fn keep_alive() {
        assert!(v11(&[]).unwrap().keep_alive);
        assert!(!v11(&[("connection", "close")]).unwrap().keep_alive);
        assert!(
            !v11(&[("connection", "Keep-Alive, CLOSE")])
                .unwrap()
                .keep_alive
        );
        assert!(
            !v11(&[("connection", "keep-alive"), ("connection", "close")])
                .unwrap()
                .keep_alive
        );
        assert!(v11(&[("connection", "closed")]).unwrap().keep_alive);
        assert!(!v10(&[]).unwrap().keep_alive);
        assert!(v10(&[("connection", "Keep-Alive")]).unwrap().keep_alive);
        assert!(
            !v10(&[("connection", "keep-alive, close")])
                .unwrap()
                .keep_alive
        );
    }

    #[test]
    fn expect_continue() {
        let body = ("content-length", "3");
        assert!(
            v11(&[("expect", "100-continue"), body])
                .unwrap()
                .expect_continue
        );
        assert!(
            v11(&[("expect", "100-Continue"), ("transfer-encoding", "chunked")])
                .unwrap()
                .expect_continue
        );
        assert!(
            !v11(&[("expect", "100-continue")]).unwrap().expect_continue,
            "no body"
        );
        assert_eq!(
            v11(&[("expect", "200-ok"), body]),
            Err(ParseError::ExpectationFailed)
        );
        assert_eq!(
            v11(&[("expect", "100-continue, x-magic"), body]),
            Err(ParseError::ExpectationFailed)
        );
        assert_eq!(
            v10(&[("expect", "200-ok")]),
            Err(ParseError::ExpectationFailed)
        );
        assert!(!v11(&[("expect", "")]).unwrap().expect_continue, "empty");
        assert!(
            !v10(&[("expect", "100-continue"), body])
                .unwrap()
                .expect_continue
        );
    }

    #[test]
    fn upgrade() {
        let ws = [
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket"),
        ];
        assert!(v11(&ws).unwrap().upgrade);
        assert!(!v11(&ws[1..]).unwrap().upgrade, "no connection option");
        assert!(!v11(&ws[..1]).unwrap().upgrade, "no Upgrade field");
        assert!(!v10(&ws).unwrap().upgrade, "ignored in 1.0");
    }
}
