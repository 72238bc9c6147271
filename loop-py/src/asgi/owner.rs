//! What an app's task needs of the exchange it runs: the lowest module of
//! `asgi/`, so `app_task` knows no protocol (HTTP, and a WebSocket
//! session, implement it above).

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

/// The exchange an `AppTask` runs the app of.
pub(super) trait TaskOwner: Send + Sync {
    /// The app awaits something: what it sent so far goes out now.
    fn app_waits(&self, py: Python<'_>) -> PyResult<()>;
    /// The app's coroutine ended (with `error`, or cancelled).
    fn app_finished(
        &self,
        py: Python<'_>,
        error: Option<Bound<'_, PyAny>>,
        cancelled: bool,
    ) -> PyResult<()>;
    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError>;
}
