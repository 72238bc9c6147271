//! The server's loggers (`ferroloop.error`, `ferroloop.access`) and the
//! levels they are enabled for, probed here and handed to the driver
//! (which makes only the lines that are on), refreshed by the timeout
//! sweep, so a level changed at run time takes effect within a sweep
//! interval (at most 0.5 s). The rate limit of the warnings about requests
//! the server answered itself is the driver's.

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

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

    pub fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.error)?;
        visit.call(&self.access)?;
        visit.call(&self.access_name)
    }
}
