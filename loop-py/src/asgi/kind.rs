//! What the server and an app's task need of a connection, whatever
//! protocol it speaks: the registry, the timeout sweep, drain, shutdown, the
//! end-of-tick flush and an `AppTask`'s owner reach connections only
//! through these traits, never through one kind (HTTP today; WebSocket
//! after an upgrade) by name. The lowest module of `asgi/`: it imports none
//! of the others.

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

/// A live connection, as the server's registry holds it.
pub(super) trait ConnHandle: Send + Sync {
    /// Server shutdown: idle connections close now (kept for one more
    /// response with `keep_idle`: a hand-over to a new worker), busy ones
    /// when done.
    fn drain(&self, py: Python<'_>, keep_idle: bool) -> PyResult<()>;
    /// The grace period is over: close now with an RST.
    fn abort(&self, py: Python<'_>) -> PyResult<()>;
    /// The periodic sweep: deadlines that passed by `now`.
    fn check_timers(&self, py: Python<'_>, now: f64) -> PyResult<()>;
    /// The end-of-tick flush of output the connection held back.
    fn flush_corked(&self, py: Python<'_>) -> PyResult<()>;
    /// The app task serving it now, if one runs (cancelled at shutdown).
    fn running_task(&self, py: Python<'_>) -> Option<Py<PyAny>>;
    /// Bytes read and written on its socket so far (`Server.stats()`).
    fn wire_bytes(&self, py: Python<'_>) -> (u64, u64);
    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError>;
}

/// The connection an `AppTask` runs an exchange of.
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
