//! Incremental UTF-8 validation of a text message as it grows, failing at
//! the first invalid byte (RFC 6455 §8.1) rather than at the message's end.

/// `data[..*valid]` is known valid; extend that over what was appended.
/// A character cut off at the end waits for more bytes; `false` at the
/// first byte that cannot be part of valid UTF-8 whatever follows.
pub(crate) fn advance(data: &[u8], valid: &mut usize) -> bool {
    match simdutf8::compat::from_utf8(&data[*valid..]) {
        Ok(_) => *valid = data.len(),
        // simdutf8's compat API tells a cut-off character (no error
        // length) from an invalid one, as std does.
        Err(e) if e.error_len().is_none() => *valid += e.valid_up_to(),
        Err(_) => return false,
    }
    true
}

/// A whole message at once: the fastest validator.
pub(crate) fn whole(data: &[u8]) -> bool {
    simdutf8::basic::from_utf8(data).is_ok()
}

#[cfg(test)]
mod tests {
    use super::advance;

    #[test]
    fn cut_characters_wait_invalid_bytes_fail() {
        let s = "a€😀".as_bytes();
        for cut in 0..=s.len() {
            let mut valid = 0;
            assert!(advance(&s[..cut], &mut valid));
            assert!(valid <= cut);
            assert!(advance(s, &mut valid));
            assert_eq!(valid, s.len());
        }
        let mut valid = 0;
        assert!(
            !advance(b"ab\xf4\x90", &mut valid),
            "above U+10FFFF, known at once"
        );
        let mut valid = 0;
        assert!(
            !advance(b"\xed\xa0", &mut valid),
            "a surrogate, known at once"
        );
        let mut valid = 0;
        assert!(advance(b"ab\xe2\x82", &mut valid));
        assert_eq!(valid, 2);
    }
}
