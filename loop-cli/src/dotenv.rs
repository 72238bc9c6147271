//! A dotenv file's variables (what `--env-file` loads), the common syntax
//! python-dotenv reads:
//!
//! ```text
//! # a comment
//! KEY=value                  # unquoted: trimmed, ends at ' #'
//! export KEY=value           # 'export ' is dropped
//! KEY='single $quoted'       # no escapes, may span lines
//! KEY="double\nquoted"       # \n \r \t \" \\ escapes, may span lines
//! ```
//!
//! Blank lines are skipped, a line with a key and no `=` sets nothing.
//!
//! Values expand `${NAME}` and `${NAME:-default}` (`$NAME` stays as
//! written), as python-dotenv's `load_dotenv()` does: `NAME` is looked up
//! in the process environment first (a variable already set wins over the
//! file, `override=False`), then in the file's values before this line;
//! else the default, else the empty string. Quotes do not stop it:
//! python-dotenv expands single-quoted values too (its issue 422).
//!
//! Pure: the caller reads the file, passes the process environment, and
//! decides what to set.

/// A line that is not `KEY=VALUE`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct DotenvError {
    /// 1-based.
    pub line: usize,
    pub problem: &'static str,
}

/// The `(key, value)` pairs of a dotenv file, in order, expanded with
/// `process` (the process environment's lookup) and the file's earlier
/// values.
pub fn parse(
    text: &str,
    process: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, DotenvError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (key, value) in parse_raw(text)? {
        let value = expand_vars(&value, |name| {
            process(name).or_else(|| {
                pairs
                    .iter()
                    .rev()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            })
        });
        pairs.push((key, value));
    }
    Ok(pairs)
}

/// `${NAME}` and `${NAME:-default}` replaced by `lookup(NAME)`, else the
/// default, else nothing; anything else (`$NAME`, `${A:x}`) is kept.
fn expand_vars(value: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let name_end = after.find(['}', ':']).unwrap_or(after.len());
        let name = &after[..name_end];
        let tail = &after[name_end..];
        let (default, next) = if let Some(next) = tail.strip_prefix('}') {
            (None, next)
        } else if let Some(body) = tail.strip_prefix(":-") {
            match body.split_once('}') {
                Some((default, next)) => (Some(default), next),
                None => {
                    out.push('$');
                    rest = &rest[start + 1..];
                    continue;
                }
            }
        } else {
            out.push('$');
            rest = &rest[start + 1..];
            continue;
        };
        out.push_str(&lookup(name).unwrap_or_else(|| default.unwrap_or("").to_owned()));
        rest = next;
    }
    out.push_str(rest);
    out
}

/// The `(key, value)` pairs of a dotenv file, before expansion.
fn parse_raw(text: &str) -> Result<Vec<(String, String)>, DotenvError> {
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
        parse(text, &|_| None).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn expanded(text: &str, process: &[(&str, &str)]) -> Vec<(String, String)> {
        let lookup = |name: &str| {
            process
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        };
        parse(text, &lookup).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn last(text: &str, process: &[(&str, &str)]) -> String {
        expanded(text, process)
            .pop()
            .map(|(_, v)| v)
            .unwrap_or_default()
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
    fn braces_expand_from_earlier_lines_and_defaults() {
        assert_eq!(last("A=1\nB=${A}-x", &[]), "1-x");
        assert_eq!(last("A=1\nB=\"${A} y\"", &[]), "1 y");
        assert_eq!(last("B=${NOPE:-dflt}", &[]), "dflt");
        assert_eq!(last("B=${NOPE:-}", &[]), "");
        assert_eq!(last("B=${NOPE}!", &[]), "!");
        assert_eq!(last("A=1\nA=2\nB=${A}", &[]), "2");
        // Only earlier lines count.
        assert_eq!(last("B=${A}\nA=1", &[]), "1");
        assert_eq!(expanded("B=${A}\nA=1", &[])[0].1, "");
        assert_eq!(last("A=$${B}\nC=${A}", &[("B", "x")]), "$x");
    }

    #[test]
    fn the_process_environment_wins_over_the_file() {
        assert_eq!(last("A=file\nB=${A}", &[("A", "env")]), "env");
        assert_eq!(last("B=${HOME:-none}", &[("HOME", "/h")]), "/h");
        // An empty variable is set: no default.
        assert_eq!(last("B=${E:-d}", &[("E", "")]), "");
    }

    #[test]
    fn bare_dollars_and_broken_braces_stay_literal() {
        // python-dotenv expands inside single quotes too.
        assert_eq!(last("A=1\nB='${A}'", &[]), "1");
        assert_eq!(last("A=1\nB=$A", &[]), "$A");
        assert_eq!(last("A=1\nB=${A:x}", &[]), "${A:x}");
        assert_eq!(last("B=${A", &[]), "${A");
        assert_eq!(last("B=${A:-x", &[]), "${A:-x");
    }

    #[test]
    fn a_key_alone_sets_nothing() {
        assert_eq!(pairs("A\nB=1"), [("B".to_owned(), "1".to_owned())]);
    }

    #[test]
    fn errors_name_the_line() {
        let line = |text| parse(text, &|_| None).map_err(|e| e.line);
        assert_eq!(line("A=1\n=2"), Err(2));
        assert_eq!(line("A=1\n1A=2"), Err(2));
        assert_eq!(line("A=\"open\nB=1"), Err(1));
        assert_eq!(line("A='x' y"), Err(1));
        assert_eq!(line("not a line"), Err(1));
    }
}
