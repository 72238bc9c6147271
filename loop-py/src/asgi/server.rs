//! The native half of `ferroloop.Server`: listeners and accepting, the
//! registry of live connections, the periodic timeout sweep, draining and
//! logging. Binding sockets, lifespan and signals are Python
//! (`ferroloop/_server/`).

use super::connection::{connection_config, HttpConnection};
use super::dispatch::Addr;
use super::settings::{Settings, READ_CHUNK};
use crate::errors::os_error;
use crate::event_loop::{Loop, TickEnd};
use loop_core::clock;
use loop_http::{ConnectionConfig, DateCache};
use loop_transports::{
    AcceptStop, Accepted, IoFd, LayeredStream, ListenerCore, StreamConfig, StreamCore,
};
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyTuple};
use pyo3::PyTraverseError;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Connections accepted per readiness event before the loop moves on.
const ACCEPT_BATCH: usize = 64;
/// How long accepting pauses after the process ran out of fds.
const ACCEPT_BACKOFF: f64 = 1.0;

#[pyclass(module = "ferroloop._native")]
pub struct HttpServer {
    pub(super) event_loop: Py<Loop>,
    pub(super) app: Py<PyAny>,
    pub(super) state: Option<Py<PyDict>>,
    pub(super) settings: Arc<Settings>,
    /// What every connection's state machine is configured with.
    conn_config: Arc<ConnectionConfig>,
    error_log: Py<PyAny>,
    access_log: Py<PyAny>,
    /// One finished future: what `send()` returns when it need not wait.
    pub(super) done_future: Py<PyAny>,
    read_buf: Vec<u8>,
    date: DateCache,
    conns: Vec<Option<Py<HttpConnection>>>,
    free: Vec<usize>,
    live: usize,
    listeners: Vec<Listener>,
    pub(super) tasks: usize,
    pub(super) draining: bool,
    sweep: Option<Py<PyAny>>,
    warned_fds: bool,
    /// Connections whose finished responses go out at the end of the tick.
    corked: Vec<Py<HttpConnection>>,
}

/// The end-of-tick flush of a server's corked connections.
struct FlushCorked(Py<HttpServer>);

impl TickEnd for FlushCorked {
    fn run(self: Box<Self>, py: Python<'_>) {
        HttpServer::flush_corked(self.0.bind(py));
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.0)
    }
}

struct Listener {
    core: ListenerCore,
    tcp: bool,
    active: bool,
}

impl HttpServer {
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

    pub(super) fn date_value(&mut self) -> Option<&[u8]> {
        if self.settings.date_header {
            Some(self.date.get())
        } else {
            None
        }
    }

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
        drop(removed);
    }

    /// Hold `conn`'s output until the end of the tick, when every response
    /// finished in the tick is written together: the client is woken once
    /// for them, not once per response (a wake-up costs the sending CPU an
    /// inter-processor interrupt). False when the loop refused the deferral:
    /// the caller writes at once.
    pub(super) fn cork(slf: &Bound<'_, Self>, conn: &Bound<'_, HttpConnection>) -> bool {
        let first = {
            let mut me = slf.borrow_mut();
            me.corked.push(conn.clone().unbind());
            me.corked.len() == 1
        };
        if first {
            let hook = Box::new(FlushCorked(slf.clone().unbind()));
            let event_loop = slf.borrow().event_loop.clone_ref(slf.py());
            if event_loop.get().at_tick_end(hook).is_err() {
                let popped = slf.borrow_mut().corked.pop();
                drop(popped);
                return false;
            }
        }
        true
    }

    fn flush_corked(slf: &Bound<'_, Self>) {
        let py = slf.py();
        let conns = std::mem::take(&mut slf.borrow_mut().corked);
        for conn in &conns {
            let conn = conn.bind(py);
            conn.borrow_mut().corked = false;
            if let Err(err) = HttpConnection::flush(conn) {
                let _ = Self::log_app_error(slf, &err);
                let _ = HttpConnection::abort(conn);
            }
        }
        drop(conns);
    }

    fn connections(&self, py: Python<'_>) -> Vec<Py<HttpConnection>> {
        self.conns
            .iter()
            .flatten()
            .map(|c| c.clone_ref(py))
            .collect()
    }

    pub(super) fn log_error(slf: &Bound<'_, Self>, message: &str) -> PyResult<()> {
        let py = slf.py();
        let logger = slf.borrow().error_log.clone_ref(py);
        logger.call_method1(py, intern!(py, "error"), (message,))?;
        Ok(())
    }

    pub(super) fn log_app_exception(slf: &Bound<'_, Self>, exc: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let logger = slf.borrow().error_log.clone_ref(py);
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

    /// uvicorn's access line: `client - "METHOD target HTTP/x" status`.
    pub(super) fn log_access(
        slf: &Bound<'_, Self>,
        conn: &Bound<'_, HttpConnection>,
    ) -> PyResult<()> {
        let py = slf.py();
        if !slf.borrow().settings.access_log {
            return Ok(());
        }
        let args = {
            let me = conn.borrow();
            let Some(ex) = me.http.exchange() else {
                return Ok(());
            };
            let version = match ex.head().version {
                loop_http::Version::Http10 => "1.0",
                loop_http::Version::Http11 => "1.1",
            };
            // As uvicorn: the path as the app sees it, root_path included.
            let mut target = me.settings.root_path.clone();
            target.push_str(&String::from_utf8_lossy(ex.head().path()));
            if !ex.head().query().is_empty() {
                target.push('?');
                target.push_str(&String::from_utf8_lossy(ex.head().query()));
            }
            (
                "%s - \"%s %s HTTP/%s\" %d",
                me.client_text.clone(),
                String::from_utf8_lossy(ex.head().method()).into_owned(),
                target,
                version,
                ex.status(),
            )
        };
        let logger = slf.borrow().access_log.clone_ref(py);
        logger.call_method1(py, intern!(py, "info"), args)?;
        Ok(())
    }

    fn accept_from(slf: &Bound<'_, Self>, fd: RawFd) -> PyResult<()> {
        let py = slf.py();
        let mut accepted = Vec::new();
        let (tcp, stop) = {
            let mut me = slf.borrow_mut();
            match me.listeners.iter_mut().find(|l| l.core.fd() == fd) {
                Some(l) if l.active => (l.tcp, l.core.accept_batch(&mut accepted)),
                _ => return Ok(()),
            }
        };
        let config = StreamConfig {
            nodelay: true,
            ..StreamConfig::default()
        };
        for Accepted { fd: conn_fd, peer } in accepted {
            let stream = match StreamCore::accepted(conn_fd, tcp, &config) {
                Ok(core) => LayeredStream::plain(core),
                // The socket died before its first syscall: it is closed.
                Err(_) => continue,
            };
            Self::adopt(slf, stream, Addr::of(&peer))?;
        }
        match stop {
            AcceptStop::ResourceLimit(err) => Self::back_off(slf, fd, &err),
            // Drained, or more may wait (the next readiness event says),
            // or a listener error asyncio would log and go on from: the
            // peer gave up before we accepted (ECONNABORTED, …) is
            // skipped inside the batch already.
            AcceptStop::Drained | AcceptStop::BatchFull | AcceptStop::Failed(_) => {
                let _ = py;
                Ok(())
            }
        }
    }

    /// Make an accepted stream a connection of this server and start it.
    fn adopt(slf: &Bound<'_, Self>, stream: LayeredStream, peer: Option<Addr>) -> PyResult<()> {
        let py = slf.py();
        let (slot, event_loop, settings, config) = {
            let mut me = slf.borrow_mut();
            let slot = match me.free.pop() {
                Some(slot) => slot,
                None => {
                    me.conns.push(None);
                    me.conns.len() - 1
                }
            };
            (
                slot,
                me.event_loop.clone_ref(py),
                me.settings.clone(),
                me.conn_config.clone(),
            )
        };
        let conn = HttpConnection::new(
            py,
            slf.clone().unbind(),
            event_loop,
            settings,
            config,
            stream,
            peer,
            slot,
        );
        // On an error the stream (and its fd) is dropped with it.
        let conn = match conn.and_then(|c| Bound::new(py, c)) {
            Ok(conn) => conn,
            Err(err) => {
                slf.borrow_mut().free.push(slot);
                return Err(err);
            }
        };
        {
            let mut me = slf.borrow_mut();
            me.conns[slot] = Some(conn.clone().unbind());
            me.live += 1;
        }
        if let Err(err) = HttpConnection::start(&conn) {
            HttpConnection::lose(&conn)?;
            return Err(err);
        }
        Ok(())
    }

    /// Out of fds: stop accepting for a while (the backlog keeps the
    /// clients) instead of spinning on a listener that stays readable.
    fn back_off(slf: &Bound<'_, Self>, fd: RawFd, err: &loop_transports::Error) -> PyResult<()> {
        let py = slf.py();
        let event_loop = slf.borrow().event_loop.clone_ref(py);
        Loop::remove_fd_callback(event_loop.bind(py), PyInt::new(py, fd).as_any(), false)?;
        let warn = !std::mem::replace(&mut slf.borrow_mut().warned_fds, true);
        if warn {
            let logger = slf.borrow().error_log.clone_ref(py);
            logger.call_method1(
                py,
                intern!(py, "warning"),
                (format!(
                    "accept failed ({err}); pausing new connections for {ACCEPT_BACKOFF:.0} s"
                ),),
            )?;
        }
        let resume = slf.getattr(intern!(py, "_resume_accepting"))?;
        event_loop
            .bind(py)
            .call_method1(intern!(py, "call_later"), (ACCEPT_BACKOFF, resume, fd))?;
        Ok(())
    }

    fn watch_listener(slf: &Bound<'_, Self>, fd: RawFd) -> PyResult<()> {
        let py = slf.py();
        let event_loop = slf.borrow().event_loop.clone_ref(py);
        let callback = slf.getattr(intern!(py, "_on_accept"))?;
        Loop::add_fd_callback(
            event_loop.bind(py),
            PyInt::new(py, fd).as_any(),
            callback,
            PyTuple::new(py, [fd])?,
            false,
        )?;
        Ok(())
    }

    fn schedule_sweep(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let interval = {
            let me = slf.borrow();
            let s = &me.settings;
            let shortest = s.timeout_request_head.min(s.timeout_keep_alive).min(
                if s.min_body_rate.is_some() {
                    s.body_rate_grace
                } else {
                    f64::INFINITY
                },
            );
            (shortest / 4.0).clamp(0.05, 0.5)
        };
        let event_loop = slf.borrow().event_loop.clone_ref(py);
        let callback = slf.getattr(intern!(py, "_sweep"))?;
        let handle = event_loop
            .bind(py)
            .call_method1(intern!(py, "call_later"), (interval, callback))?;
        slf.borrow_mut().sweep = Some(handle.unbind());
        Ok(())
    }
}

#[pymethods]
impl HttpServer {
    /// `HttpServer(loop, app, config, *, error_log, access_log)`: `config`
    /// is the `ferroloop.Config` (see [`Settings::from_py`]); the loggers
    /// are `logging.Logger`s.
    #[new]
    #[pyo3(signature = (event_loop, app, config, *, error_log, access_log))]
    fn new(
        py: Python<'_>,
        event_loop: &Bound<'_, PyAny>,
        app: Py<PyAny>,
        config: &Bound<'_, PyAny>,
        error_log: Py<PyAny>,
        access_log: Py<PyAny>,
    ) -> PyResult<Self> {
        let event_loop = event_loop.cast::<Loop>().map_err(|_| {
            pyo3::exceptions::PyRuntimeError::new_err(
                "ferroloop's HTTP server runs on a ferroloop loop: use ferroloop.run() or ferroloop.serve()",
            )
        })?;
        let settings = Settings::from_py(config)?;
        let done_future = Loop::create_future(event_loop)?;
        done_future.call_method1(intern!(py, "set_result"), (py.None(),))?;
        Ok(HttpServer {
            event_loop: event_loop.clone().unbind(),
            app,
            state: None,
            conn_config: Arc::new(connection_config(&settings)),
            settings: Arc::new(settings),
            error_log,
            access_log,
            done_future: done_future.unbind(),
            read_buf: Vec::new(),
            date: DateCache::new(),
            conns: Vec::new(),
            free: Vec::new(),
            live: 0,
            listeners: Vec::new(),
            tasks: 0,
            draining: false,
            sweep: None,
            warned_fds: false,
            corked: Vec::new(),
        })
    }

    /// The `Config` attributes the server reads (`Settings::READS`).
    #[classattr]
    #[pyo3(name = "SETTINGS")]
    fn settings_read() -> Vec<&'static str> {
        Settings::READS.to_vec()
    }

    /// The lifespan state copied into every request scope.
    fn set_state(&mut self, state: Option<Py<PyDict>>) {
        self.state = state;
    }

    /// Start accepting on a bound, listening, non-blocking socket's fd
    /// (the caller keeps the socket object and closes it).
    fn listen(slf: &Bound<'_, Self>, fd: RawFd, tcp: bool) -> PyResult<()> {
        // SAFETY: the Python server keeps the socket object open until
        // after `stop_accepting`, which forgets the fd here.
        let borrowed = unsafe { IoFd::borrow_raw(fd) };
        let core = ListenerCore::new(borrowed, ACCEPT_BATCH).map_err(|e| os_error(&e.into()))?;
        slf.borrow_mut().listeners.push(Listener {
            core,
            tcp,
            active: true,
        });
        Self::watch_listener(slf, fd)?;
        if slf.borrow().sweep.is_none() {
            Self::schedule_sweep(slf)?;
        }
        Ok(())
    }

    /// Stop accepting on every listener (graceful shutdown's first step).
    fn stop_accepting(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let event_loop = slf.borrow().event_loop.clone_ref(py);
        let fds: Vec<RawFd> = {
            let mut me = slf.borrow_mut();
            me.listeners
                .iter_mut()
                .filter_map(|l| {
                    let fd = l.core.fd();
                    // Forget the borrowed fd: its socket closes after this.
                    l.core.close_fd();
                    std::mem::replace(&mut l.active, false).then_some(fd)
                })
                .collect()
        };
        for fd in fds {
            Loop::remove_fd_callback(event_loop.bind(py), PyInt::new(py, fd).as_any(), false)?;
        }
        Ok(())
    }

    /// Close idle connections now; busy ones close after their response.
    fn drain(slf: &Bound<'_, Self>) -> PyResult<()> {
        slf.borrow_mut().draining = true;
        let conns = slf.borrow().connections(slf.py());
        for conn in conns {
            HttpConnection::drain(conn.bind(slf.py()))?;
        }
        Ok(())
    }

    /// Close every connection (the grace period is over), and stop the
    /// sweep.
    fn close_all(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let conns = slf.borrow().connections(py);
        for conn in conns {
            let task = super::dispatch::running_task(&conn.borrow(py), py);
            HttpConnection::abort(conn.bind(py))?;
            if let Some(task) = task {
                task.call_method0(py, intern!(py, "cancel"))?;
            }
        }
        if let Some(handle) = slf.borrow_mut().sweep.take() {
            handle.call_method0(py, intern!(py, "cancel"))?;
        }
        Ok(())
    }

    #[getter]
    fn connection_count(&self) -> usize {
        self.live
    }

    #[getter]
    fn task_count(&self) -> usize {
        self.tasks
    }

    fn _on_accept(slf: &Bound<'_, Self>, fd: RawFd) -> PyResult<()> {
        Self::accept_from(slf, fd)
    }

    fn _resume_accepting(slf: &Bound<'_, Self>, fd: RawFd) -> PyResult<()> {
        let active = slf
            .borrow()
            .listeners
            .iter()
            .any(|l| l.core.fd() == fd && l.active);
        if active {
            Self::watch_listener(slf, fd)?;
        }
        Ok(())
    }

    fn _sweep(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let now = clock::monotonic();
        slf.borrow_mut().sweep = None;
        Self::schedule_sweep(slf)?;
        let conns = slf.borrow().connections(py);
        for conn in conns {
            if let Err(err) = HttpConnection::check_timers(conn.bind(py), now) {
                // One connection's failure must not stop every timeout.
                Self::log_app_error(slf, &err)?;
                let _ = HttpConnection::abort(conn.bind(py));
            }
        }
        Ok(())
    }
}
