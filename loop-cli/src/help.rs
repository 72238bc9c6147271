//! `--help` text, generated from the option table in click's layout (what
//! `uvicorn --help` prints).

use std::fmt::Write as _;

use crate::options::{Arity, OptSpec, OPTIONS};

/// Total width the help text wraps to (click: 80 columns minus 2).
const WIDTH: usize = 78;
/// Indent of the option column.
const INDENT: usize = 2;
/// Longest option column kept on the same line as its help (click's
/// `col_max`).
const COL_MAX: usize = 30;
/// Spaces between the option column and its help.
const COL_GAP: usize = 2;

/// `Usage: PROG [OPTIONS] APP`.
pub(crate) fn usage_line(prog: &str) -> String {
    format!("Usage: {prog} [OPTIONS] APP")
}

/// The full `--help` text for `prog` (`"ferroloop"`, or
/// `"python -m ferroloop"`), ending in a newline.
pub fn help(prog: &str) -> String {
    let mut out = usage_line(prog);
    out.push_str("\n\n");
    for line in wrap(
        "Serve the ASGI application APP with ferroloop. APP is \
         'module:attribute', for example 'myapp:app' or \
         'pkg.main:factory.app'.",
        WIDTH - INDENT,
    ) {
        let _ = writeln!(out, "{:INDENT$}{line}", "");
    }
    out.push('\n');
    for line in wrap(
        "Options may come before or after APP; '--' ends the options. When \
         an option is repeated the last one wins (a repeated --header adds \
         one). Every option can also be set by the environment variable \
         FERROLOOP_ and its name in upper case with '_' for '-' \
         (FERROLOOP_PORT=9000; empty or 'none' unsets an optional one), \
         and uvicorn's options by uvicorn's UVICORN_ variables too \
         (UVICORN_PORT=9000; FERROLOOP_ wins over UVICORN_, a flag over \
         both). APP may come from FERROLOOP_APP or UVICORN_APP. Options marked [ignored] are \
         accepted for uvicorn's sake and do nothing; those marked [not \
         supported yet] are refused unless given their default.",
        WIDTH - INDENT,
    ) {
        let _ = writeln!(out, "{:INDENT$}{line}", "");
    }
    out.push_str("\nOptions:\n");

    let columns: Vec<(String, Vec<(&str, String)>)> =
        OPTIONS.iter().map(|s| (left(s), right(s))).collect();
    let first = columns
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0)
        .min(COL_MAX);
    let help_col = INDENT + first + COL_GAP;
    for (l, r) in &columns {
        let lines = wrap_units(r, WIDTH.saturating_sub(help_col).max(20));
        let l_len = l.chars().count();
        let mut lines = lines.iter();
        let _ = write!(out, "{:INDENT$}{l}", "");
        if l_len <= first {
            if let Some(line) = lines.next() {
                let pad = help_col - INDENT - l_len;
                let _ = write!(out, "{:pad$}{line}", "");
            }
        }
        out.push('\n');
        for line in lines {
            let _ = writeln!(out, "{:help_col$}{line}", "");
        }
    }
    out
}

/// The option column: `-h, --help`, `--port INTEGER`,
/// `--access-log / --no-access-log`.
fn left(spec: &OptSpec) -> String {
    let mut s = String::new();
    if let Some(short) = spec.short {
        s.push_str(short);
        s.push_str(", ");
    }
    s.push_str(spec.long);
    match &spec.arity {
        Arity::Value { metavar } => {
            s.push(' ');
            s.push_str(metavar);
        }
        Arity::Switch { off } => {
            s.push_str(" / ");
            s.push_str(off);
        }
        Arity::Flag => {}
    }
    s
}

/// The help column as wrap units: the help text's words, then
/// `[default: ...]` kept whole, two spaces after the text as click does.
fn right(spec: &OptSpec) -> Vec<(&'static str, String)> {
    let mut units: Vec<(&str, String)> = spec
        .help
        .split_whitespace()
        .map(|w| (" ", w.to_owned()))
        .collect();
    if let Some(note) = &spec.note {
        // "[not supported yet:" stays whole; a value list may wrap.
        let (head, tail) = note.split_once(": ").unwrap_or((note, ""));
        let head = if tail.is_empty() {
            head.to_owned()
        } else {
            format!("{head}:")
        };
        units.push((" ", head));
        units.extend(tail.split_whitespace().map(|w| (" ", w.to_owned())));
    }
    if let Some(d) = &spec.default {
        units.push(("  ", format!("[default: {d}]")));
    }
    units
}

/// Greedy wrap of unbreakable units, each with the separator that goes
/// before it when it is not first on a line. A unit longer than `width` gets
/// a line of its own.
fn wrap_units(units: &[(&str, String)], width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for (sep, unit) in units {
        if unit.is_empty() {
            continue;
        }
        if line.is_empty() {
            line.push_str(unit);
        } else if line.chars().count() + sep.len() + unit.chars().count() > width {
            lines.push(std::mem::take(&mut line));
            line.push_str(unit);
        } else {
            line.push_str(sep);
            line.push_str(unit);
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Wraps prose on whitespace.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let units: Vec<(&str, String)> = text
        .split_whitespace()
        .map(|w| (" ", w.to_owned()))
        .collect();
    wrap_units(&units, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_width() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("aa bb cc", 8), ["aa bb cc"]);
        assert_eq!(wrap("", 8), Vec::<String>::new());
    }

    #[test]
    fn defaults_stay_whole_after_two_spaces() {
        let units = [(" ", "a".to_owned()), ("  ", "[default: x]".to_owned())];
        assert_eq!(wrap_units(&units, 20), ["a  [default: x]"]);
        assert_eq!(wrap_units(&units, 14), ["a", "[default: x]"]);
    }

    #[test]
    fn wrap_gives_long_words_their_own_line() {
        assert_eq!(wrap("a verylongword b", 4), ["a", "verylongword", "b"]);
    }

    #[test]
    fn lines_fit_the_width() {
        for line in help("ferroloop").lines() {
            assert!(line.chars().count() <= WIDTH, "too wide: {line:?}");
            assert_eq!(line, line.trim_end(), "trailing space: {line:?}");
        }
    }

    #[test]
    fn long_option_columns_put_help_on_the_next_line() {
        let text = help("ferroloop");
        let mut lines = text.lines();
        assert!(lines.any(|l| l == "  --log-level [critical|error|warning|info|debug|trace]"));
        let next = lines.next().unwrap_or_default();
        assert!(next.starts_with(&" ".repeat(INDENT + COL_MAX + COL_GAP)));
        assert!(next.trim_start().starts_with("Log level"));
    }
}
