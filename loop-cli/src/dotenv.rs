//! A dotenv file's variables (what `--env-file` loads), the common syntax
//! python-dotenv reads:
//!
//! ```text
//! # a comment
//! KEY=value                  # unquoted: trimmed, ends at ' #'
//! export KEY=value           # 'export ' is dropped
//! KEY='single $quoted'       # literal, may span lines
//! KEY="double\nquoted"       # \n \r \t \" \\ escapes, may span lines
//! ```
//!
//! Blank lines are skipped, a line with a key and no `=` sets nothing.
//! Pure: the caller reads the file and decides what to set.

/// A line that is not `KEY=VALUE`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct DotenvError {
    /// 1-based.
    pub line: usize,
    pub problem: &'static str,
}

/// The `(key, value)` pairs of a dotenv file, in order.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, DotenvError> {
    let mut pairs = Vec::new();
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    while let Some((number, line)) = lines.next() {
        let fail = |problem| DotenvError {
            line: number,
            problem,
        };
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line
            .strip_prefix("export")
            .filter(|rest| rest.starts_with([' ', '\t']))
            .map_or(line, str::trim_start);
        let (key, rest) = match line.split_once('=') {
            Some((key, rest)) => (key.trim_end(), rest.trim_start()),
            None if is_key(line.trim_end()) => continue,
            None => return Err(fail("expected KEY=VALUE")),
        };
        if !is_key(key) {
            return Err(fail(
                "a key is letters, digits, '_', '.' or '-', not starting with a digit",
            ));
        }
        let value = match rest.chars().next() {
            Some(quote @ ('\'' | '"')) => {
                let mut body = rest[1..].to_owned();
                let (value, after) = loop {
                    if let Some(found) = closing(&body, quote) {
                        break found;
                    }
                    let Some((_, next)) = lines.next() else {
                        return Err(fail("unterminated quoted value"));
                    };
                    body.push('\n');
                    body.push_str(next);
                };
                let after = after.trim_start();
                if !(after.is_empty() || after.starts_with('#')) {
                    return Err(fail("unexpected text after the closing quote"));
                }
                if quote == '"' {
                    unescape(&value)
                } else {
                    value
                }
            }
            _ => match rest.find(" #").or_else(|| rest.find("\t#")) {
                Some(comment) => rest[..comment].trim_end().to_owned(),
                None => rest.trim_end().to_owned(),
            },
        };
        pairs.push((key.to_owned(), value));
    }
    Ok(pairs)
}

fn is_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// The text before the closing `quote` (skipping `\"` in a double-quoted
/// value) and what follows it, if it is there.
fn closing(body: &str, quote: char) -> Option<(String, &str)> {
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\\' if quote == '"' && !escaped => escaped = true,
            c if c == quote && !escaped => return Some((body[..i].to_owned(), &body[i + 1..])),
            _ => escaped = false,
        }
    }
    None
}

fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some(c @ ('"' | '\\' | '\'')) => out.push(c),
            Some(c) => {
                out.push('\\');
                out.push(c);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn one(text: &str) -> String {
        let p = pairs(text);
        assert_eq!(p.len(), 1, "{text:?}: {p:?}");
        p[0].1.clone()
    }

    #[test]
    fn plain_and_export() {
        assert_eq!(
            pairs("A=1\n\n# comment\nexport B = two words \n  C=\n"),
            [
                ("A".to_owned(), "1".to_owned()),
                ("B".to_owned(), "two words".to_owned()),
                ("C".to_owned(), String::new()),
            ]
        );
        assert_eq!(one("exported=1"), "1");
        assert_eq!(one("A=x # note"), "x");
        assert_eq!(one("A=x#not-a-comment"), "x#not-a-comment");
        assert_eq!(one("A=a=b"), "a=b");
        assert_eq!(one("A.b-c_9=1"), "1");
    }

    #[test]
    fn quotes() {
        assert_eq!(one("A='x # y'"), "x # y");
        assert_eq!(one(r"A='a\nb'"), r"a\nb");
        assert_eq!(one(r#"A="a\nb\t\"c\" \\ \q""#), "a\nb\t\"c\" \\ \\q");
        assert_eq!(one("A=\"x\" # comment"), "x");
        assert_eq!(one("A=\"line1\nline2\""), "line1\nline2");
    }

    #[test]
    fn a_key_alone_sets_nothing() {
        assert_eq!(pairs("A\nB=1"), [("B".to_owned(), "1".to_owned())]);
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(parse("A=1\n=2").unwrap_err().line, 2);
        assert_eq!(parse("A=1\n1A=2").unwrap_err().line, 2);
        assert_eq!(parse("A=\"open\nB=1").unwrap_err().line, 1);
        assert_eq!(parse("A='x' y").unwrap_err().line, 1);
        assert_eq!(parse("not a line").unwrap_err().line, 1);
    }
}
