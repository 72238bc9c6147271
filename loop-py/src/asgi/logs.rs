//! The server's loggers (`ferroloop.error`, `ferroloop.access`) and what
//! keeps logging cheap: the levels they are enabled for, cached here and
//! refreshed by the timeout sweep (so a level changed at run time takes
//! effect within a sweep interval, at most 0.5 s), and the rate limit of the
//! warnings about requests the server answered itself.
//!
//! Rate limit: at most one such warning per second. Warnings within the
//! second after one are counted, not logged; the next warning logged says
//! how many were suppressed, and so does the sweep once the second is over
//! (so the count of a flood that stopped is still reported).

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

/// Seconds between two warnings about server-answered requests.
const WARN_INTERVAL: f64 = 1.0;
const INFO: u8 = 20;
const DEBUG: u8 = 10;

pub struct Logs {
    pub error: Py<PyAny>,
    pub access: Py<PyAny>,
    /// The access logger's name, for its records.
    pub access_name: Py<PyAny>,
    /// The `access_log` setting.
    access_setting: bool,
    /// `access_log` is on and the access logger is enabled for INFO.
    pub access_on: bool,
    /// The error logger is enabled for DEBUG (connection lifecycle lines).
    pub debug_on: bool,
    limit: RateLimit,
}

/// The loggers whose levels [`Logs`] caches.
pub struct LevelProbe {
    error: Py<PyAny>,
    access: Py<PyAny>,
    access_setting: bool,
}

impl LevelProbe {
    /// Whether the access line is on (the setting and INFO) and the error
    /// logger is on for DEBUG. Calls Python.
    pub fn levels(&self, py: Python<'_>) -> PyResult<(bool, bool)> {
        let enabled = |logger: &Py<PyAny>, level: u8| -> PyResult<bool> {
            logger
                .call_method1(py, pyo3::intern!(py, "isEnabledFor"), (level,))?
                .is_truthy(py)
        };
        Ok((
            self.access_setting && enabled(&self.access, INFO)?,
            enabled(&self.error, DEBUG)?,
        ))
    }
}

/// One line per `WARN_INTERVAL`, with a count of the rest.
#[derive(Default)]
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

impl Logs {
    pub fn new(
        py: Python<'_>,
        error: Py<PyAny>,
        access: Py<PyAny>,
        access_setting: bool,
    ) -> PyResult<Self> {
        let access_name = access.getattr(py, pyo3::intern!(py, "name"))?;
        let mut logs = Logs {
            error,
            access,
            access_name,
            access_setting,
            access_on: false,
            debug_on: false,
            limit: RateLimit::default(),
        };
        let levels = logs.probe(py).levels(py)?;
        logs.set_levels(levels);
        Ok(logs)
    }

    /// What [`LevelProbe::levels`] asks, cloned out so no borrow of the
    /// server is held while Python runs.
    pub fn probe(&self, py: Python<'_>) -> LevelProbe {
        LevelProbe {
            error: self.error.clone_ref(py),
            access: self.access.clone_ref(py),
            access_setting: self.access_setting,
        }
    }

    pub fn set_levels(&mut self, (access_on, debug_on): (bool, bool)) {
        self.access_on = access_on;
        self.debug_on = debug_on;
    }

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

    pub fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.error)?;
        visit.call(&self.access)?;
        visit.call(&self.access_name)
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
