//! "did you mean" for misspelled options.

use crate::options::OPTIONS;

/// Longest edit distance ever suggested across.
const MAX_DISTANCE: usize = 3;

/// The known option spelling closest to `typed` (an unknown option name such
/// as `--prot`), if it is close enough: at most one edit per three
/// characters of the candidate, ignoring leading dashes and ASCII case. So
/// `--prot` suggests `--port`, and `-port` or `--PORT` suggest `--port` too.
pub(crate) fn suggest(typed: &str) -> Option<&'static str> {
    let typed_core = typed.trim_start_matches('-').to_ascii_lowercase();
    OPTIONS
        .iter()
        .flat_map(|spec| spec.names().map(|(name, _)| name))
        .filter(|name| *name != typed)
        .filter_map(|name| {
            let core = name.trim_start_matches('-');
            let limit = (core.chars().count() / 3).min(MAX_DISTANCE);
            let d = distance(&typed_core, core);
            (d <= limit).then_some((d, name))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name)
}

/// Optimal string alignment distance: Levenshtein plus swaps of adjacent
/// characters, so `prot` is one edit from `port`.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rolling rows: i-2, i-1, i.
    let mut prev2: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("port", ""), 4);
        assert_eq!(distance("", "port"), 4);
        assert_eq!(distance("port", "port"), 0);
        assert_eq!(distance("prot", "port"), 1);
        assert_eq!(distance("pot", "port"), 1);
        assert_eq!(distance("poort", "port"), 1);
        assert_eq!(distance("pert", "port"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("ca", "abc"), 3);
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("--prot"), Some("--port"));
        assert_eq!(suggest("--hots"), Some("--host"));
        assert_eq!(suggest("--usd"), Some("--uds"));
        assert_eq!(suggest("--log-levl"), Some("--log-level"));
        assert_eq!(suggest("--loglevel"), Some("--log-level"));
        assert_eq!(suggest("--root_path"), Some("--root-path"));
        assert_eq!(suggest("--acess-log"), Some("--access-log"));
        assert_eq!(suggest("--no-acess-log"), Some("--no-access-log"));
        assert_eq!(suggest("--lifespn"), Some("--lifespan"));
        assert_eq!(suggest("--verison"), Some("--version"));
        assert_eq!(suggest("--hlep"), Some("--help"));
        assert_eq!(suggest("-port"), Some("--port"));
        assert_eq!(suggest("--PORT"), Some("--port"));
        assert_eq!(suggest("-fd"), Some("--fd"));
        assert_eq!(suggest("--h"), Some("-h"));
    }

    #[test]
    fn no_suggestion_when_far() {
        assert_eq!(suggest("--daemonize"), None);
        assert_eq!(suggest("--statsd-host-and-prefix"), None);
        assert_eq!(suggest("-x"), None);
        assert_eq!(suggest("--df"), None);
        assert_eq!(suggest("--"), None);
    }
}
