//! `uri-host [ ":" port ]`: the Host field and the authority of an
//! absolute-form target (RFC 9110 §7.2, RFC 3986 §3.2.2–3.2.3).

/// A Host field value. Empty is allowed: RFC 9110 §7.2 has clients send an
/// empty Host when the target URI has no authority.
pub(crate) fn is_valid_host_field(v: &[u8]) -> bool {
    v.is_empty() || is_valid_authority(v)
}

/// A non-empty `host [ ":" port ]`. RFC 9110 §4.2.1 makes an http(s) URI with
/// an empty host invalid; userinfo ("user@") fails because '@' is not a
/// reg-name byte (§4.2.4 tells recipients to treat it as an error).
pub(crate) fn is_valid_authority(v: &[u8]) -> bool {
    let (host, rest) = if let Some(inner) = v.strip_prefix(b"[") {
        // IP-literal = "[" ( IPv6address / IPvFuture ) "]"
        let Some(close) = inner.iter().position(|&b| b == b']') else {
            return false;
        };
        let literal = &inner[..close];
        let ok = !literal.is_empty()
            && literal
                .iter()
                .all(|&b| is_unreserved(b) || is_sub_delim(b) || b == b':');
        if !ok {
            return false;
        }
        (literal, &inner[close + 1..])
    } else {
        let end = v.iter().position(|&b| b == b':').unwrap_or(v.len());
        let host = &v[..end];
        if host.is_empty() || !is_reg_name(host) {
            return false;
        }
        (host, &v[end..])
    };
    debug_assert!(!host.is_empty());
    // port = *DIGIT (empty allowed by the grammar).
    match rest {
        [] => true,
        [b':', port @ ..] => port.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

/// reg-name = *( unreserved / pct-encoded / sub-delims ); IPv4 fits too.
fn is_reg_name(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if b == b'%' {
            let hex = |j: usize| s.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return false;
            }
            i += 3;
            continue;
        }
        if !(is_unreserved(b) || is_sub_delim(b)) {
            return false;
        }
        i += 1;
    }
    true
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn is_sub_delim(b: u8) -> bool {
    matches!(
        b,
        b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        for ok in [
            &b"example.com"[..],
            b"example.com:8080",
            b"example.com:",
            b"127.0.0.1:80",
            b"[::1]",
            b"[::1]:8000",
            b"[v1.fe80::a+en1]",
            b"xn--bcher-kva.example",
            b"my%20host",
        ] {
            assert!(is_valid_authority(ok), "{}", String::from_utf8_lossy(ok));
        }
        for bad in [
            &b""[..],
            b":80",
            b"user@example.com",
            b"exa mple.com",
            b"example.com:80a",
            b"example.com:80:90",
            b"[::1",
            b"[]",
            b"[::1]x",
            b"a/b",
            b"%zz",
            b"caf\xc3\xa9",
        ] {
            assert!(!is_valid_authority(bad), "{}", String::from_utf8_lossy(bad));
        }
        assert!(is_valid_host_field(b""));
        assert!(!is_valid_host_field(b" "));
    }
}
