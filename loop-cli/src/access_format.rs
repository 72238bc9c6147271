//! The access-log format (`--access-log-format`): text with `%(field)s`
//! placeholders, Python's `%`-style with named fields only, and `%%` for a
//! literal `%`. Parsed once, at start-up; the server renders each line from
//! the pieces without Python.

use thiserror::Error;

/// What a placeholder stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// `ip:port` of the client (empty on a Unix socket), as uvicorn.
    ClientAddr,
    Method,
    /// The path as the app sees it (`root_path` included), no query.
    Path,
    /// The raw query string, without `?`.
    Query,
    /// Path and `?query` when there is one.
    FullPath,
    /// `1.1` or `1.0`.
    HttpVersion,
    /// `METHOD full_path HTTP/version` (`-` when no request line was read).
    RequestLine,
    StatusCode,
    /// The reason phrase of the status (`OK`).
    StatusPhrase,
    /// Milliseconds from the complete request head to the complete
    /// response, with three decimals.
    DurationMs,
    /// The `User-Agent` request header, `-` when absent.
    UserAgent,
    /// The `Referer` request header, `-` when absent.
    Referer,
}

impl Field {
    /// Every field with its name, in the documented order.
    pub const ALL: [(&'static str, Field); 12] = [
        ("client_addr", Field::ClientAddr),
        ("method", Field::Method),
        ("path", Field::Path),
        ("query", Field::Query),
        ("full_path", Field::FullPath),
        ("http_version", Field::HttpVersion),
        ("request_line", Field::RequestLine),
        ("status_code", Field::StatusCode),
        ("status_phrase", Field::StatusPhrase),
        ("duration_ms", Field::DurationMs),
        ("user_agent", Field::UserAgent),
        ("referer", Field::Referer),
    ];

    pub fn by_name(name: &str) -> Option<Field> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }
}

/// A piece of a parsed format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Field(Field),
}

/// Why a format was refused.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum FormatError {
    #[error("unknown field '{0}' (known: {known})", known = known_fields())]
    UnknownField(String),
    #[error("'%' must start '%(field)s' or be written '%%'")]
    BadPercent,
    #[error("'%({0}' is not closed by ')s'")]
    Unclosed(String),
}

/// The field names, comma-separated.
pub fn known_fields() -> String {
    Field::ALL.map(|(n, _)| n).join(", ")
}

/// A parsed access-log format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessFormat {
    pub pieces: Vec<Piece>,
}

impl AccessFormat {
    pub fn parse(format: &str) -> Result<Self, FormatError> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut rest = format;
        while let Some(at) = rest.find('%') {
            text.push_str(&rest[..at]);
            rest = &rest[at + 1..];
            if let Some(after) = rest.strip_prefix('%') {
                text.push('%');
                rest = after;
                continue;
            }
            let Some(named) = rest.strip_prefix('(') else {
                return Err(FormatError::BadPercent);
            };
            let Some(end) = named.find(")s") else {
                return Err(FormatError::Unclosed(named.to_owned()));
            };
            let name = &named[..end];
            let field =
                Field::by_name(name).ok_or_else(|| FormatError::UnknownField(name.to_owned()))?;
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Field(field));
            rest = &named[end + 2..];
        }
        text.push_str(rest);
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(AccessFormat { pieces })
    }

    pub fn uses(&self, field: Field) -> bool {
        self.pieces.contains(&Piece::Field(field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_text() {
        let f = AccessFormat::parse("%(client_addr)s - \"%(request_line)s\" %%%(status_code)s")
            .expect("valid");
        assert_eq!(
            f.pieces,
            [
                Piece::Field(Field::ClientAddr),
                Piece::Text(" - \"".into()),
                Piece::Field(Field::RequestLine),
                Piece::Text("\" %".into()),
                Piece::Field(Field::StatusCode),
            ]
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let err = AccessFormat::parse("%(nope)s").unwrap_err();
        assert_eq!(err, FormatError::UnknownField("nope".into()));
        assert!(err.to_string().contains("client_addr"));
        assert_eq!(AccessFormat::parse("%d"), Err(FormatError::BadPercent));
        assert_eq!(
            AccessFormat::parse("%(path"),
            Err(FormatError::Unclosed("path".into()))
        );
    }
}
