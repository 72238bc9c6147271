//! The header-field grammars the handshake reads: tokens and token lists
//! (RFC 9110 §5.6) and `Sec-WebSocket-Extensions` (RFC 6455 §9.1, with
//! the quoted-string values RFC 7692 allows). `loop-ws` may not depend on
//! `loop-http`, so the few rules it needs are here, written once.

/// `tchar` (RFC 9110 §5.6.2).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

/// `token = 1*tchar`.
pub(crate) fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// Strip optional whitespace (SP / HTAB) from both ends.
pub(crate) fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// The non-empty elements of a comma-separated list, OWS-trimmed (empty
/// elements are ignored, as RFC 9110 §5.6.1.2 asks of recipients).
pub(crate) fn list_items(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|&b| b == b',')
        .map(trim_ows)
        .filter(|item| !item.is_empty())
}

/// Does a list-valued field hold `token` (ASCII case-insensitive)?
pub(crate) fn list_has(s: &[u8], token: &[u8]) -> bool {
    list_items(s).any(|item| item.eq_ignore_ascii_case(token))
}

/// One extension offered in `Sec-WebSocket-Extensions`, in offer order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtensionOffer {
    /// The extension token as sent (compare case-insensitively).
    pub name: String,
    /// Parameters in order, values unquoted; `None` for a bare parameter.
    pub params: Vec<(String, Option<String>)>,
}

/// Parse one `Sec-WebSocket-Extensions` field value into `into`. An element
/// that breaks the grammar is skipped (it is an offer we decline, not a
/// reason to refuse the handshake); the elements around it still count.
pub(crate) fn parse_extensions(value: &[u8], into: &mut Vec<ExtensionOffer>) {
    for element in split_outside_quotes(value, b',') {
        let element = trim_ows(element);
        if element.is_empty() {
            continue;
        }
        if let Some(offer) = parse_extension(element) {
            into.push(offer);
        }
    }
}

/// Split at `sep` bytes that are not inside a quoted string (a backslash
/// escapes the next byte inside quotes). An unterminated quote swallows the
/// rest, which then fails to parse as one element.
fn split_outside_quotes(s: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let mut pos = 0;
    let mut quoted = false;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        while pos < s.len() {
            let b = s[pos];
            pos += 1;
            if quoted {
                match b {
                    b'\\' => pos += 1,
                    b'"' => quoted = false,
                    _ => {}
                }
            } else if b == b'"' {
                quoted = true;
            } else if b == sep {
                let item = &s[start..pos - 1];
                start = pos;
                return Some(item);
            }
        }
        done = true;
        Some(&s[start.min(s.len())..])
    })
}

/// `extension = extension-token *( ";" extension-param )`.
fn parse_extension(element: &[u8]) -> Option<ExtensionOffer> {
    let mut parts = split_outside_quotes(element, b';');
    let name = trim_ows(parts.next()?);
    if !is_token(name) {
        return None;
    }
    let mut params = Vec::new();
    for param in parts {
        params.push(parse_param(trim_ows(param))?);
    }
    Some(ExtensionOffer {
        name: ascii(name),
        params,
    })
}

/// `extension-param = token [ "=" (token | quoted-string) ]`; a quoted
/// value must be a token once unescaped (RFC 6455 §9.1).
fn parse_param(param: &[u8]) -> Option<(String, Option<String>)> {
    let (name, value) = match param.iter().position(|&b| b == b'=') {
        None => (param, None),
        Some(eq) => (trim_ows(&param[..eq]), Some(trim_ows(&param[eq + 1..]))),
    };
    if !is_token(name) {
        return None;
    }
    let value = match value {
        None => None,
        Some(v) => {
            let unquoted = match v {
                [b'"', inner @ .., b'"'] => unescape(inner)?,
                _ => v.to_vec(),
            };
            if !is_token(&unquoted) {
                return None;
            }
            Some(ascii(&unquoted))
        }
    };
    Some((ascii(name), value))
}

/// The content of a quoted string: `\x` stands for `x`; a bare `"` or a
/// trailing backslash is malformed.
fn unescape(inner: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(inner.len());
    let mut bytes = inner.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'\\' => out.push(*bytes.next()?),
            b'"' => return None,
            _ => out.push(b),
        }
    }
    Some(out)
}

/// Token bytes are ASCII, so this never loses anything.
fn ascii(token: &[u8]) -> String {
    token.iter().map(|&b| char::from(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &str) -> Vec<ExtensionOffer> {
        let mut out = Vec::new();
        parse_extensions(v.as_bytes(), &mut out);
        out
    }

    fn offer(name: &str, params: &[(&str, Option<&str>)]) -> ExtensionOffer {
        ExtensionOffer {
            name: name.into(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
                .collect(),
        }
    }

    #[test]
    fn lists_and_tokens() {
        assert!(list_has(b"keep-alive, Upgrade", b"upgrade"));
        assert!(list_has(b" ,, websocket ", b"WebSocket"));
        assert!(!list_has(b"websocket2", b"websocket"));
        assert_eq!(list_items(b"a, ,b").collect::<Vec<_>>(), [&b"a"[..], b"b"]);
        assert!(is_token(b"chat.v2") && !is_token(b"a b") && !is_token(b""));
    }

    #[test]
    fn extension_grammar() {
        assert_eq!(
            parse("permessage-deflate; client_max_window_bits, permessage-deflate"),
            [
                offer("permessage-deflate", &[("client_max_window_bits", None)]),
                offer("permessage-deflate", &[]),
            ]
        );
        assert_eq!(
            parse("x ; a = 1 ;b=\"10\"; c=\"t\\ok\""),
            [offer(
                "x",
                &[("a", Some("1")), ("b", Some("10")), ("c", Some("tok"))]
            )]
        );
    }

    #[test]
    fn malformed_elements_are_skipped() {
        // A quoted comma does not split; a non-token quoted value, an empty
        // parameter and a bad name each spoil only their own element.
        assert_eq!(parse("a; p=\"x,y\", b"), [offer("b", &[])]);
        assert_eq!(parse("a; p=\"x y\", b; q"), [offer("b", &[("q", None)])]);
        assert_eq!(parse("a;, b"), [offer("b", &[])]);
        assert_eq!(parse("a b, c=1, d"), [offer("d", &[])]);
        assert_eq!(parse("a; p=\"unterminated, b"), []);
        assert_eq!(parse("a; p=\"\\"), []);
        assert_eq!(parse("a; p="), []);
    }
}
