//! What a server's connections share: the app and its lifespan state, the
//! settings, the loggers, one read buffer and one `Date` cache, the
//! counters (`asgi::counters`),
//! and the registry of live connections (by [`ConnHandle`], any kind) with
//! the end-of-tick flush of corked output. Listening and the sweep are
//! `server`'s; the connections reach this, never the server.

use super::counters::ServerCounters;
use super::kind::ConnHandle;
use super::logs::Logs;
use super::settings::{Settings, READ_CHUNK};
use crate::event_loop::{Loop, TickEnd};
use loop_http::{ConnectionConfig, DateCache};
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use pyo3::PyTraverseError;
use std::sync::Arc;

#[pyclass(module = "ferroloop._native")]
pub struct ServerShared {
    pub(super) event_loop: Py<Loop>,
    pub(super) app: Py<PyAny>,
    pub(super) state: Option<Py<PyDict>>,
    pub(super) settings: Arc<Settings>,
    /// What every HTTP connection's state machine is configured with.
    pub(super) conn_config: Arc<ConnectionConfig>,
    pub(super) logs: Logs,
    /// One finished future: what `send()` returns when it need not wait.
    pub(super) done_future: Py<PyAny>,
    read_buf: Vec<u8>,
    date: DateCache,
    /// Shared handles: the sweep and the end-of-tick flush take a cheap
    /// clone (no allocation) to call a connection with nothing borrowed.
    conns: Vec<Option<Arc<dyn ConnHandle>>>,
    free: Vec<usize>,
    live: usize,
    /// App tasks running.
    pub(super) tasks: usize,
    /// Called (soon, from the loop) once `counters.requests` reaches the
    /// count.
    request_limit: Option<(u64, Py<PyAny>)>,
    /// Slots whose held-back output goes out at the end of the tick.
    corked: Vec<usize>,
    /// The server is shutting down: a connection that starts a new session
    /// now (a WebSocket accepted during the drain) ends it at once.
    pub(super) draining: bool,
    /// What new TLS handshakes start from (`None`: plaintext). A reload
    /// replaces it; live connections keep the sessions they have.
    pub(super) tls: Option<loop_tls::TlsConfig>,
    /// What `Server.stats()` reports; connections and TLS layers share it.
    pub(super) counters: Arc<ServerCounters>,
}

/// The end-of-tick flush of a server's corked connections.
struct FlushCorked(Py<ServerShared>);

impl TickEnd for FlushCorked {
    fn run(self: Box<Self>, py: Python<'_>) {
        ServerShared::flush_corked(self.0.bind(py));
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.0)
    }
}

impl ServerShared {
    pub(super) fn new(
        event_loop: Py<Loop>,
        app: Py<PyAny>,
        settings: Settings,
        conn_config: ConnectionConfig,
        logs: Logs,
        done_future: Py<PyAny>,
    ) -> Self {
        let tls = settings.tls_config.clone();
        ServerShared {
            tls,
            counters: Arc::default(),
            event_loop,
            app,
            state: None,
            settings: Arc::new(settings),
            conn_config: Arc::new(conn_config),
            logs,
            done_future,
            read_buf: Vec::new(),
            date: DateCache::new(),
            conns: Vec::new(),
            free: Vec::new(),
            live: 0,
            tasks: 0,
            request_limit: None,
            corked: Vec::new(),
            draining: false,
        }
    }

    pub(super) fn live_connections(&self) -> usize {
        self.live
    }

    pub(super) fn read_buffer(&mut self) -> &mut [u8] {
        if self.read_buf.len() < READ_CHUNK {
            self.read_buf.resize(READ_CHUNK, 0);
        }
        &mut self.read_buf
    }

    pub(super) fn date(&mut self) -> &[u8] {
        self.date.get()
    }

    /// The `Date` value, or `None` when the header is off.
    pub(super) fn date_value(&mut self) -> Option<&[u8]> {
        if self.settings.date_header {
            Some(self.date.get())
        } else {
            None
        }
    }

    pub(super) fn set_request_limit(&mut self, limit: u64, callback: Py<PyAny>) {
        self.request_limit = Some((limit, callback));
    }

    /// One more request (with `method`) arrived; at the limit, its
    /// callback is scheduled (once, with nothing borrowed when it runs).
    pub(super) fn count_request(slf: &Bound<'_, Self>, method: &[u8]) -> PyResult<()> {
        let (due, event_loop) = {
            let mut me = slf.borrow_mut();
            let requests = me.counters.request(method);
            let due = match &me.request_limit {
                Some((limit, _)) if requests >= *limit => me.request_limit.take(),
                _ => None,
            };
            (due, me.event_loop.clone_ref(slf.py()))
        };
        if let Some((_, callback)) = due {
            let py = slf.py();
            event_loop
                .bind(py)
                .call_method1(intern!(py, "call_soon"), (callback,))?;
        }
        Ok(())
    }

    /// A slot for a new connection (its handle follows with `register`).
    pub(super) fn reserve(&mut self) -> usize {
        match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        }
    }

    /// A reserved slot that will not be used after all.
    pub(super) fn unreserve(&mut self, slot: usize) {
        self.free.push(slot);
    }

    pub(super) fn register(&mut self, slot: usize, handle: Arc<dyn ConnHandle>) {
        if let Some(entry) = self.conns.get_mut(slot) {
            *entry = Some(handle);
            self.live += 1;
        }
    }

    /// The connection in `slot` is gone.
    pub(super) fn forget(slf: &Bound<'_, Self>, slot: usize) {
        let removed = {
            let mut me = slf.borrow_mut();
            match me.conns.get_mut(slot).and_then(Option::take) {
                Some(conn) => {
                    me.free.push(slot);
                    me.live -= 1;
                    Some(conn)
                }
                None => None,
            }
        };
        // Dropped without the borrow: it may free the connection.
        drop(removed);
    }

    /// Run `f` on every live connection (a snapshot: `f` may close them),
    /// with nothing borrowed.
    pub(super) fn for_each(
        slf: &Bound<'_, Self>,
        mut f: impl FnMut(&dyn ConnHandle) -> PyResult<()>,
    ) -> PyResult<()> {
        let handles: Vec<Arc<dyn ConnHandle>> =
            slf.borrow().conns.iter().flatten().cloned().collect();
        for handle in &handles {
            f(handle.as_ref())?;
        }
        drop(handles);
        Ok(())
    }

    /// Hold the output of the connection in `slot` until the end of the
    /// tick, when every response finished in the tick is written together:
    /// the client is woken once for them, not once per response (a wake-up
    /// costs the sending CPU an inter-processor interrupt). False when the
    /// loop refused the deferral: the caller writes at once.
    pub(super) fn cork(slf: &Bound<'_, Self>, slot: usize) -> bool {
        let first = {
            let mut me = slf.borrow_mut();
            me.corked.push(slot);
            me.corked.len() == 1
        };
        if first {
            let hook = Box::new(FlushCorked(slf.clone().unbind()));
            let event_loop = slf.borrow().event_loop.clone_ref(slf.py());
            if event_loop.get().at_tick_end(hook).is_err() {
                slf.borrow_mut().corked.pop();
                return false;
            }
        }
        true
    }

    fn flush_corked(slf: &Bound<'_, Self>) {
        let py = slf.py();
        let slots = std::mem::take(&mut slf.borrow_mut().corked);
        for slot in slots {
            let handle = slf.borrow().conns.get(slot).and_then(Option::clone);
            // Lost since (a reused slot's connection flushes harmlessly).
            let Some(handle) = handle else { continue };
            if let Err(err) = handle.flush_corked(py) {
                let _ = Self::log_app_error(slf, &err);
                let _ = handle.abort(py);
            }
        }
    }

    pub(super) fn log_error(slf: &Bound<'_, Self>, message: &str) -> PyResult<()> {
        Self::log(slf, intern!(slf.py(), "error"), message)
    }

    pub(super) fn log_info(slf: &Bound<'_, Self>, message: &str) -> PyResult<()> {
        Self::log(slf, intern!(slf.py(), "info"), message)
    }

    pub(super) fn log_warning(slf: &Bound<'_, Self>, message: &str) -> PyResult<()> {
        Self::log(slf, intern!(slf.py(), "warning"), message)
    }

    /// `message` on the error logger through its method `level` (the
    /// logger is cloned out first: logging runs Python).
    fn log(slf: &Bound<'_, Self>, level: &Bound<'_, PyString>, message: &str) -> PyResult<()> {
        let py = slf.py();
        let logger = slf.borrow().logs.error.clone_ref(py);
        logger.call_method1(py, level, (message,))?;
        Ok(())
    }

    /// The error logger is on for DEBUG (the cached answer: test this
    /// before building a debug line).
    pub(super) fn debug_on(&self) -> bool {
        self.logs.debug_on
    }

    pub(super) fn log_debug(slf: &Bound<'_, Self>, message: &str) -> PyResult<()> {
        Self::log(slf, intern!(slf.py(), "debug"), message)
    }

    /// A request the server answered itself (400, 408, 413, …): one
    /// warning, rate-limited (see `asgi::logs`).
    pub(super) fn log_server_answer(slf: &Bound<'_, Self>, text: &str) -> PyResult<()> {
        let line = slf
            .borrow_mut()
            .logs
            .answer_warning(loop_core::clock::monotonic(), text);
        match line {
            Some(line) => Self::log_warning(slf, &line),
            None => Ok(()),
        }
    }

    /// Refresh the cached logger levels and report suppressed warnings
    /// (the sweep calls this).
    pub(super) fn refresh_logs(slf: &Bound<'_, Self>, now: f64) -> PyResult<()> {
        // The loggers are cloned out: `isEnabledFor` runs Python.
        let probe = slf.borrow().logs.probe(slf.py());
        let levels = probe.levels(slf.py())?;
        let overdue = {
            let mut me = slf.borrow_mut();
            me.logs.set_levels(levels);
            me.logs.overdue_warning(now)
        };
        match overdue {
            Some(line) => Self::log_warning(slf, &line),
            None => Ok(()),
        }
    }

    /// The app's call ended with `exc`: a client disconnect when the
    /// server had seen the client go (`client_gone`) or the error is, or
    /// was raised while handling, the server's own `ClientDisconnected`
    /// (Starlette turns it into its `ClientDisconnect`, chained); then one
    /// DEBUG line without a traceback, counted as `client_disconnects`.
    /// Anything else is an app error: ERROR with the traceback.
    pub(super) fn app_stopped(
        slf: &Bound<'_, Self>,
        exc: &Bound<'_, PyAny>,
        client_gone: bool,
    ) -> PyResult<()> {
        if client_gone || caused_by_disconnect(exc) {
            Self::log_client_gone(slf, exc)
        } else {
            Self::log_app_exception(slf, exc)
        }
    }

    /// An app that stopped with an error because its client went away:
    /// counted, and one line at DEBUG, no traceback (as uvicorn, which logs
    /// nothing).
    fn log_client_gone(slf: &Bound<'_, Self>, exc: &Bound<'_, PyAny>) -> PyResult<()> {
        {
            let me = slf.borrow();
            me.counters.client_disconnects.bump();
            if !me.debug_on() {
                return Ok(());
            }
        }
        let name = exc.get_type().qualname()?;
        let line =
            format!("ASGI application stopped after its client disconnected ({name}: {exc})");
        Self::log_debug(slf, &line)
    }
    /// "Exception in ASGI application", with the traceback (each one is
    /// counted: `app_exceptions`).
    fn log_app_exception(slf: &Bound<'_, Self>, exc: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let logger = {
            let me = slf.borrow();
            me.counters.app_exceptions.bump();
            me.logs.error.clone_ref(py)
        };
        let kwargs = PyDict::new(py);
        kwargs.set_item(intern!(py, "exc_info"), exc)?;
        logger.call_method(
            py,
            intern!(py, "error"),
            ("Exception in ASGI application",),
            Some(&kwargs),
        )?;
        Ok(())
    }

    pub(super) fn log_app_error(slf: &Bound<'_, Self>, err: &PyErr) -> PyResult<()> {
        Self::log_app_exception(slf, err.value(slf.py()).as_any())
    }

    /// An access-log line, rendered (the caller checks `logs.access_on`
    /// first). The record is made and handed to the logger's handlers
    /// directly: `Logger.info` would first walk the Python stack for a
    /// caller (there is none, the caller is Rust), which costs more than
    /// the rest of the line (see `asgi::logs`).
    pub(super) fn log_access(slf: &Bound<'_, Self>, line: String) -> PyResult<()> {
        let py = slf.py();
        let (logger, name) = {
            let me = slf.borrow();
            (
                me.logs.access.clone_ref(py),
                me.logs.access_name.clone_ref(py),
            )
        };
        let record = logger.call_method1(
            py,
            intern!(py, "makeRecord"),
            (
                name,
                20,
                "",
                0,
                line,
                pyo3::types::PyTuple::empty(py),
                py.None(),
            ),
        )?;
        logger.call_method1(py, intern!(py, "handle"), (record,))?;
        Ok(())
    }
}

#[pymethods]
impl ServerShared {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.event_loop)?;
        visit.call(&self.app)?;
        if let Some(state) = &self.state {
            visit.call(state)?;
        }
        self.logs.traverse(&visit)?;
        visit.call(&self.done_future)?;
        if let Some((_, callback)) = &self.request_limit {
            visit.call(callback)?;
        }
        for conn in self.conns.iter().flatten() {
            conn.traverse(&visit)?;
        }
        Ok(())
    }
}

/// One direction of a connection's loop registration: what it wants, what
/// it has, and the callback registered for it.
pub(super) struct Interest {
    pub want: bool,
    pub have: bool,
    pub callback: Py<PyAny>,
}

/// Bring a connection's reader and writer registrations in line with what
/// it wants; `record(write, now)` is told each change once it is made (the
/// connection keeps its own flags). Callbacks run in `context`.
pub(super) fn sync_fd_interest(
    event_loop: &Bound<'_, Loop>,
    fd: std::os::fd::RawFd,
    context: &Py<PyAny>,
    read: Interest,
    write: Interest,
    mut record: impl FnMut(bool, bool),
) -> PyResult<()> {
    let py = event_loop.py();
    let fd_obj = pyo3::types::PyInt::new(py, fd);
    for (interest, is_write) in [(read, false), (write, true)] {
        if interest.want == interest.have {
            continue;
        }
        if interest.want {
            Loop::add_fd_callback_in(
                event_loop,
                fd_obj.as_any(),
                interest.callback.into_bound(py),
                pyo3::types::PyTuple::empty(py),
                is_write,
                Some(context.bind(py).clone()),
            )?;
        } else {
            Loop::remove_fd_callback(event_loop, fd_obj.as_any(), is_write)?;
        }
        record(is_write, interest.want);
    }
    Ok(())
}

/// How many links of an exception's `__cause__`/`__context__` chain are
/// followed looking for the server's disconnect error (a chain can be a
/// cycle; real ones are a few links long).
const CHAIN_LIMIT: usize = 32;

/// `exc` is the server's `ClientDisconnected`, or was raised (directly or
/// through others) while handling one: its cause or context chain reaches
/// it, or an exception group (anyio's task groups) holds one.
fn caused_by_disconnect(exc: &Bound<'_, PyAny>) -> bool {
    let py = exc.py();
    let mut pending = vec![exc.clone()];
    let mut seen = 0;
    while let Some(e) = pending.pop() {
        if e.is_instance_of::<super::ClientDisconnected>() {
            return true;
        }
        seen += 1;
        if seen >= CHAIN_LIMIT {
            return false;
        }
        for link in [intern!(py, "__cause__"), intern!(py, "__context__")] {
            if let Ok(next) = e.getattr(link) {
                if !next.is_none() && !next.is(&e) {
                    pending.push(next);
                }
            }
        }
        if let Ok(group) = e.getattr(intern!(py, "exceptions")) {
            if let Ok(members) = group.cast_into::<pyo3::types::PyTuple>() {
                pending.extend(members.iter());
            }
        }
    }
    false
}
