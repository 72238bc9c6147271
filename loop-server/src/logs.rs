//! What the driver tells the host's logs ([`Log`] events), and what keeps
//! logging cheap: lines are made only for levels the host says are on
//! ([`Driver::set_log_levels`](crate::Driver::set_log_levels), refreshed by
//! the host), and the warnings about requests the server answered itself
//! are rate-limited.
//!
//! Rate limit: at most one such warning per second. Warnings within the
//! second after one are counted, not logged; the next warning logged says
//! how many were suppressed, and so does the sweep once the second is over
//! (so the count of a flood that stopped is still reported).

/// A line for the host's logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Log {
    /// The error logger at DEBUG: a connection's life.
    Debug(String),
    /// The error logger at WARNING.
    Warning(String),
    /// The error logger at INFO.
    Info(String),
    /// The access logger: one rendered line.
    Access(String),
}

/// Seconds between two warnings about server-answered requests.
const WARN_INTERVAL: f64 = 1.0;

/// Which lines the host wants, and the rate limit.
#[derive(Debug, Default)]
pub(crate) struct LogState {
    pub debug: bool,
    pub access: bool,
    limit: RateLimit,
}

impl LogState {
    /// The warning text for a server-answered request at `now`, if the
    /// rate limit lets it out.
    pub fn answer_warning(&mut self, now: f64, text: &str) -> Option<String> {
        let suppressed = self.limit.admit(now)?;
        Some(if suppressed > 0 {
            format!("{text} [{} suppressed]", similar(suppressed))
        } else {
            text.to_owned()
        })
    }

    /// The sweep's report of warnings suppressed in a second that is over.
    pub fn overdue_warning(&mut self, now: f64) -> Option<String> {
        self.limit.overdue(now).map(|n| {
            format!(
                "{} about requests the server answered suppressed",
                similar(n)
            )
        })
    }
}

/// One line per `WARN_INTERVAL`, with a count of the rest.
#[derive(Debug, Default)]
struct RateLimit {
    /// When the last line went out (`None`: never).
    last: Option<f64>,
    suppressed: u64,
}

impl RateLimit {
    /// `Some(suppressed before it)` when a line may go out at `now`.
    fn admit(&mut self, now: f64) -> Option<u64> {
        if self.last.is_some_and(|t| now - t < WARN_INTERVAL) {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }

    /// The count suppressed in an interval that is over (then reset).
    fn overdue(&mut self, now: f64) -> Option<u64> {
        if self.suppressed == 0 || self.last.is_some_and(|t| now - t < WARN_INTERVAL) {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// "1 similar warning", "2 similar warnings".
fn similar(n: u64) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{n} similar warning{s}")
}

#[cfg(test)]
mod tests {
    use super::RateLimit;

    #[test]
    fn one_line_per_interval_with_a_count() {
        let mut limit = RateLimit::default();
        assert_eq!(limit.admit(0.0), Some(0));
        assert_eq!(limit.admit(0.1), None);
        assert_eq!(limit.admit(0.9), None);
        assert_eq!(limit.overdue(0.95), None, "the second is not over");
        assert_eq!(limit.admit(1.0), Some(2));
        assert_eq!(limit.admit(1.5), None);
        assert_eq!(limit.overdue(2.2), Some(1));
        assert_eq!(limit.overdue(3.5), None, "nothing left to report");
    }
}
