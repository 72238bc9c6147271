//! The server's default response headers (`--header`, `FERROLOOP_HEADERS`,
//! `Config(headers=...)`): one validation for the command line and the
//! server, so a value the parser accepts is one the server can send.

use loop_http::{DefaultHeaders, ResponseError};

/// A header field the server cannot send.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Header bytes are Latin-1 text, as ASGI encodes them.
    #[error("{0:?} is not Latin-1")]
    NotLatin1(String),
    /// Refused by [`DefaultHeaders::new`].
    #[error(transparent)]
    Invalid(#[from] ResponseError),
}

/// Encodes `(name, value)` text pairs as Latin-1 and validates them as the
/// server's default headers.
pub fn encode(fields: &[(String, String)]) -> Result<DefaultHeaders, HeaderError> {
    let mut encoded = Vec::with_capacity(fields.len());
    for (name, value) in fields {
        encoded.push((latin1(name)?, latin1(value)?));
    }
    Ok(DefaultHeaders::new(
        encoded.iter().map(|(n, v)| (n.as_slice(), v.as_slice())),
    )?)
}

fn latin1(text: &str) -> Result<Vec<u8>, HeaderError> {
    text.chars()
        .map(|c| u8::try_from(u32::from(c)))
        .collect::<Result<_, _>>()
        .map_err(|_| HeaderError::NotLatin1(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, value: &str) -> Result<DefaultHeaders, HeaderError> {
        encode(&[(name.to_owned(), value.to_owned())])
    }

    #[test]
    fn latin1_text_is_sent_as_its_bytes() {
        let headers = one("X-Price", "5 £").map(|h| h.as_bytes().to_vec());
        assert_eq!(headers, Ok(b"x-price: 5 \xa3\r\n".to_vec()));
    }

    #[test]
    fn beyond_latin1_or_not_a_field_is_refused() {
        assert_eq!(one("x", "€"), Err(HeaderError::NotLatin1("€".into())));
        assert!(matches!(one("bad name", "1"), Err(HeaderError::Invalid(_))));
        assert!(matches!(one("x", "a\u{1}b"), Err(HeaderError::Invalid(_))));
    }
}
