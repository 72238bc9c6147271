//! Byte classes and small grammars shared by requests and responses
//! (RFC 9110 §5.6: tokens, lists, whitespace; decimal and hex numbers).

/// `tchar` (RFC 9110 §5.6.2): the bytes of methods, field names, codings.
const TCHAR: [bool; 256] = {
    let mut map = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        map[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
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
            );
        b += 1;
    }
    map
};

pub(crate) fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

/// `token = 1*tchar`.
pub(crate) fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// A byte allowed in a field value (RFC 9110 §5.5): VCHAR, SP, HTAB and
/// obs-text. Every other control byte (CR, LF, NUL, DEL, …) is refused,
/// which is what stops response splitting on the way out.
pub(crate) fn is_field_value_byte(b: u8) -> bool {
    b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80
}

pub(crate) fn is_field_value(s: &[u8]) -> bool {
    s.iter().all(|&b| is_field_value_byte(b))
}

/// Strip optional whitespace (SP / HTAB, RFC 9110 §5.6.3) from both ends.
pub(crate) fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// The elements of a comma-separated list (RFC 9110 §5.6.1), OWS-trimmed,
/// empty elements included (each caller decides what they mean).
pub(crate) fn list_items(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|&b| b == b',').map(trim_ows)
}

/// Whether a list-valued field value holds `token` (ASCII case-insensitive).
/// Empty elements are ignored, as RFC 9110 §5.6.1.2 asks of recipients.
pub(crate) fn list_has(s: &[u8], token: &[u8]) -> bool {
    list_items(s).any(|item| item.eq_ignore_ascii_case(token))
}

/// `1*DIGIT` as u64; `None` if empty, any other byte, or overflow.
pub(crate) fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

pub(crate) fn hex_value(b: u8) -> Option<u64> {
    match b {
        b'0'..=b'9' => Some(u64::from(b - b'0')),
        b'a'..=b'f' => Some(u64::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u64::from(b - b'A' + 10)),
        _ => None,
    }
}

/// Append `n` in decimal.
pub(crate) fn write_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Append `n` in lower-case hex without leading zeros.
pub(crate) fn write_hex(out: &mut Vec<u8>, mut n: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = HEX[(n & 0xf) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert!(is_token(b"GET"));
        assert!(is_token(b"x-custom_!#$%&'*+.^`|~9"));
        assert!(!is_token(b""));
        assert!(!is_token(b"a b"));
        assert!(!is_token(b"a:b"));
        assert!(!is_token(b"\xc3\xa9"));
    }

    #[test]
    fn field_values() {
        assert!(is_field_value(b"text/plain; q=0.5\tx \x80\xff"));
        for bad in [b'\r', b'\n', 0, 0x7f, 0x1b] {
            assert!(!is_field_value(&[b'a', bad]), "{bad:#x}");
        }
    }

    #[test]
    fn ows_and_lists() {
        assert_eq!(trim_ows(b" \t a b \t"), b"a b");
        assert_eq!(trim_ows(b"  "), b"");
        let items: Vec<&[u8]> = list_items(b"a, b ,,c").collect();
        assert_eq!(items, [&b"a"[..], b"b", b"", b"c"]);
        assert!(list_has(b"keep-alive, Upgrade", b"upgrade"));
        assert!(!list_has(b"keep-alive-ish", b"keep-alive"));
    }

    #[test]
    fn decimal() {
        assert_eq!(parse_decimal(b"0"), Some(0));
        assert_eq!(parse_decimal(b"007"), Some(7));
        assert_eq!(parse_decimal(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_decimal(b"18446744073709551616"), None);
        assert_eq!(parse_decimal(b""), None);
        assert_eq!(parse_decimal(b"+1"), None);
        assert_eq!(parse_decimal(b"-1"), None);
        assert_eq!(parse_decimal(b"1 "), None);
    }

    #[test]
    fn formatting() {
        let mut out = Vec::new();
        write_decimal(&mut out, 0);
        out.push(b' ');
        write_decimal(&mut out, u64::MAX);
        out.push(b' ');
        write_hex(&mut out, 0);
        out.push(b' ');
        write_hex(&mut out, 0xabc10);
        out.push(b' ');
        write_hex(&mut out, u64::MAX);
        assert_eq!(
            out,
            b"0 18446744073709551615 0 abc10 ffffffffffffffff".to_vec()
        );
    }
}
