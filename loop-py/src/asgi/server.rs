//! The native half of `ferroloop.Server`: listeners and accepting, the
//! periodic timeout sweep, draining and shutdown. What connections share
//! (the registry among it) is [`ServerShared`]; binding sockets, lifespan
//! and signals are Python (`ferroloop/server/`).

use super::counters::Live;
use super::http::{connection_config, Addr, HttpConnection, HttpHandle};
use super::kind::ConnHandle;
use super::logs::Logs;
use super::settings::Settings;
use super::shared::ServerShared;
use super::tls::{self, TlsState};
use crate::errors::os_error;
use crate::event_loop::Loop;
use loop_core::clock;
use loop_transports::{
    AcceptStop, Accepted, IoFd, LayeredStream, ListenerCore, StreamConfig, StreamCore,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyTuple};
use std::os::fd::RawFd;
use std::sync::Arc;

/// Connections accepted per readiness event before the loop moves on.
const ACCEPT_BATCH: usize = 64;
/// The same for a listener shared with other processes (pre-fork workers):
/// a worker that took a whole burst in one batch would leave its siblings
/// idle, so each takes one per wake-up and lets the others' loops (all
/// woken: `EPOLLEXCLUSIVE` measured less even) take the rest. Measured in
/// docs/decisions.md ("accept spread").
const SHARED_ACCEPT_BATCH: usize = 1;
/// How long accepting pauses after the process ran out of fds.
const ACCEPT_BACKOFF: f64 = 1.0;

#[pyclass(module = "ferroloop._native")]
pub struct HttpServer {
    shared: Py<ServerShared>,
    event_loop: Py<Loop>,
    listeners: Vec<Listener>,
    sweep: Option<Py<PyAny>>,
    warned_fds: bool,
}

struct Listener {
    core: ListenerCore,
    tcp: bool,
    active: bool,
}

impl HttpServer {
    fn accept_from(slf: &Bound<'_, Self>, fd: RawFd) -> PyResult<()> {
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
        // The current config: a reload swaps it for the next batch.
        let tls = {
            let shared = slf.borrow().shared.clone_ref(slf.py());
            let sh = shared.borrow(slf.py());
            sh.tls.clone().map(|c| (c, sh.counters.clone()))
        };
        // One connection's error (reported at the end) does not drop the
        // rest of the batch: their sockets would close unserved.
        let mut first_error = None;
        for Accepted { fd: conn_fd, peer } in accepted {
            let core = match StreamCore::accepted(conn_fd, tcp, &config) {
                Ok(core) => core,
                // The socket died before its first syscall: it is closed.
                Err(_) => continue,
            };
            let (stream, state) = match &tls {
                None => (LayeredStream::plain(core), None),
                Some((config, stats)) => match tls::layer(config, stats) {
                    Ok((layer, state)) => {
                        (LayeredStream::with_layer(core, Some(layer)), Some(state))
                    }
                    // rustls refused to start a session: the socket closes.
                    Err(err) => {
                        if let Err(log_error) = Self::log_refused(slf, &err) {
                            first_error.get_or_insert(log_error);
                        }
                        continue;
                    }
                },
            };
            if let Err(err) = Self::adopt(slf, stream, Addr::of(&peer), state) {
                first_error.get_or_insert(err);
            }
        }
        match stop {
            AcceptStop::ResourceLimit(err) => Self::back_off(slf, fd, &err)?,
            // Drained, or more may wait (the next readiness event says),
            // or a listener error asyncio would log and go on from: the
            // peer gave up before we accepted (ECONNABORTED, …) is
            // skipped inside the batch already.
            AcceptStop::Drained | AcceptStop::BatchFull | AcceptStop::Failed(_) => {}
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Make an accepted stream a connection of this server and start it.
    fn adopt(
        slf: &Bound<'_, Self>,
        stream: LayeredStream,
        peer: Option<Addr>,
        tls: Option<Arc<TlsState>>,
    ) -> PyResult<()> {
        let py = slf.py();
        let shared = slf.borrow().shared.clone_ref(py);
        let (slot, settings, config) = {
            let mut sh = shared.borrow_mut(py);
            sh.counters.accepted.bump();
            (sh.reserve(), sh.settings.clone(), sh.conn_config.clone())
        };
        let conn = HttpConnection::new(
            py,
            shared.clone_ref(py),
            slf.borrow().event_loop.clone_ref(py),
            settings,
            config,
            stream,
            peer,
            slot,
            tls,
        );
        // On an error the stream (and its fd) is dropped with it.
        let conn = match conn.and_then(|c| Bound::new(py, c)) {
            Ok(conn) => conn,
            Err(err) => {
                shared.borrow_mut(py).unreserve(slot);
                return Err(err);
            }
        };
        shared
            .borrow_mut(py)
            .register(slot, Arc::new(HttpHandle(conn.clone().unbind())));
        // Logged before the connection starts (its lines follow this one),
        // but a failing log call does not keep it from starting.
        let logged = if shared.borrow(py).debug_on() {
            let line = format!("{} - Connection accepted", conn.borrow().peer_text());
            ServerShared::log_debug(shared.bind(py), &line)
        } else {
            Ok(())
        };
        if let Err(err) = HttpConnection::start(&conn) {
            HttpConnection::lose(&conn)?;
            return Err(err);
        }
        logged
    }

    fn log_refused(slf: &Bound<'_, Self>, err: &loop_tls::SessionError) -> PyResult<()> {
        let shared = slf.borrow().shared.clone_ref(slf.py());
        if !shared.borrow(slf.py()).debug_on() {
            return Ok(());
        }
        let line = format!("TLS session not started: {err}");
        ServerShared::log_debug(shared.bind(slf.py()), &line)
    }

    /// Out of fds: stop accepting for a while (the backlog keeps the
    /// clients) instead of spinning on a listener that stays readable.
    fn back_off(slf: &Bound<'_, Self>, fd: RawFd, err: &loop_transports::Error) -> PyResult<()> {
        let py = slf.py();
        let event_loop = slf.borrow().event_loop.clone_ref(py);
        Loop::remove_fd_callback(event_loop.bind(py), PyInt::new(py, fd).as_any(), false)?;
        let warn = !std::mem::replace(&mut slf.borrow_mut().warned_fds, true);
        if warn {
            let shared = slf.borrow().shared.clone_ref(py);
            ServerShared::log_warning(
                shared.bind(py),
                &format!(
                    "accept failed ({err}); pausing new connections for {ACCEPT_BACKOFF:.0} s"
                ),
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
            let shared = slf.borrow().shared.clone_ref(py);
            let s = shared.borrow(py).settings.clone();
            let mut shortest = s.timeout_request_head.min(s.timeout_keep_alive).min(
                if s.min_body_rate.is_some() {
                    s.body_rate_grace
                } else {
                    f64::INFINITY
                },
            );
            if s.tls.is_some() {
                shortest = shortest.min(s.tls_handshake_timeout);
            }
            // WebSocket pings and their timeouts are the sweep's too.
            if let Some(ws) = &s.ws {
                for t in [ws.ping_interval, ws.ping_timeout, Some(ws.close_timeout)]
                    .into_iter()
                    .flatten()
                {
                    shortest = shortest.min(t);
                }
            }
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
        let conn_config = connection_config(&settings);
        let logs = Logs::new(py, error_log, access_log, settings.access_log)?;
        let shared = ServerShared::new(
            event_loop.clone().unbind(),
            app,
            settings,
            conn_config,
            logs,
            done_future.unbind(),
        );
        Ok(HttpServer {
            shared: Py::new(py, shared)?,
            event_loop: event_loop.clone().unbind(),
            listeners: Vec::new(),
            sweep: None,
            warned_fds: false,
        })
    }

    /// The `Config` attributes the server reads (`Settings::READS`).
    #[classattr]
    #[pyo3(name = "SETTINGS")]
    fn settings_read() -> Vec<&'static str> {
        Settings::READS.to_vec()
    }

    /// The lifespan state copied into every request scope.
    fn set_state(&self, py: Python<'_>, state: Option<Py<PyDict>>) {
        self.shared.borrow_mut(py).state = state;
    }

    /// Start accepting on a bound, listening, non-blocking socket's fd
    /// (the caller keeps the socket object and closes it). `shared`: other
    /// processes accept from the same listener (workers): one connection
    /// per wake-up, so a burst spreads over them.
    #[pyo3(signature = (fd, tcp, shared = false))]
    fn listen(slf: &Bound<'_, Self>, fd: RawFd, tcp: bool, shared: bool) -> PyResult<()> {
        // SAFETY: the Python server keeps the socket object open until
        // after `stop_accepting`, which forgets the fd here.
        let borrowed = unsafe { IoFd::borrow_raw(fd) };
        let batch = if shared {
            SHARED_ACCEPT_BATCH
        } else {
            ACCEPT_BATCH
        };
        let core = ListenerCore::new(borrowed, batch).map_err(|e| os_error(&e.into()))?;
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
    /// `keep_idle` (a worker handing over to its replacement): idle
    /// keep-alive connections answer one more request, with `connection:
    /// close`, instead of being closed under a client that may be sending.
    #[pyo3(signature = (keep_idle = false))]
    fn drain(slf: &Bound<'_, Self>, keep_idle: bool) -> PyResult<()> {
        let py = slf.py();
        let shared = slf.borrow().shared.clone_ref(py);
        shared.borrow_mut(py).draining = true;
        ServerShared::for_each(shared.bind(py), |conn| conn.drain(py, keep_idle))
    }

    /// Close every connection (the grace period is over), and stop the
    /// sweep.
    fn close_all(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let shared = slf.borrow().shared.clone_ref(py);
        ServerShared::for_each(shared.bind(py), |conn| {
            let task = conn.running_task(py);
            conn.abort(py)?;
            if let Some(task) = task {
                task.call_method0(py, intern!(py, "cancel"))?;
            }
            Ok(())
        })?;
        if let Some(handle) = slf.borrow_mut().sweep.take() {
            handle.call_method0(py, intern!(py, "cancel"))?;
        }
        Ok(())
    }

    /// Call `callback()` (from the loop) once `limit` requests have arrived
    /// (`limit_max_requests`).
    fn on_request_limit(&self, py: Python<'_>, limit: u64, callback: Py<PyAny>) {
        self.shared
            .borrow_mut(py)
            .set_request_limit(limit, callback);
    }

    /// Re-read the TLS files (`Settings.tls`) for new handshakes; live
    /// connections keep their sessions. A file that does not load keeps
    /// the old certificates and logs a warning naming why. False when
    /// nothing was reloaded (that, or TLS is off).
    fn reload_tls(&self, py: Python<'_>) -> PyResult<bool> {
        let shared = self.shared.bind(py);
        let (current, settings, stats) = {
            let sh = shared.borrow();
            (sh.tls.clone(), sh.settings.tls.clone(), sh.counters.clone())
        };
        let (Some(current), Some(settings)) = (current, settings) else {
            return Ok(false);
        };
        // File reads and key parsing: no Python runs, the GIL is kept
        // (a reload is rare and short).
        match current.reload(&settings) {
            Ok(config) => {
                shared.borrow_mut().tls = Some(config);
                stats.tls.reloads.bump();
                ServerShared::log_info(shared, "TLS certificates reloaded")?;
                Ok(true)
            }
            Err(err) => {
                stats.tls.reload_errors.bump();
                let line = format!("TLS reload failed, keeping the current certificates: {err}");
                ServerShared::log_warning(shared, &line)?;
                Ok(false)
            }
        }
    }

    /// Whether the listeners speak TLS.
    #[getter]
    fn tls(&self, py: Python<'_>) -> bool {
        self.shared.borrow(py).tls.is_some()
    }

    /// The TLS handshake counters (all zero without TLS).
    fn tls_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let counters = self.shared.borrow(py).counters.clone();
        counters.tls_dict(py)
    }

    /// Every counter (`Server.stats()`), a fresh dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let shared = self.shared.bind(py);
        let mut bytes = loop_transports::StreamStats::default();
        ServerShared::for_each(shared, |conn| {
            let (read, written) = conn.wire_bytes(py);
            bytes.bytes_read += read;
            bytes.bytes_written += written;
            Ok(())
        })?;
        let (counters, live) = {
            let sh = shared.borrow();
            let live = Live {
                open: sh.live_connections(),
                in_flight: sh.tasks,
                bytes,
                tls: sh.tls.is_some(),
            };
            (sh.counters.clone(), live)
        };
        counters.to_dict(py, &live)
    }

    /// Requests whose head arrived so far.
    #[getter]
    fn request_count(&self, py: Python<'_>) -> u64 {
        self.shared.borrow(py).counters.requests.get()
    }

    #[getter]
    fn connection_count(&self, py: Python<'_>) -> usize {
        self.shared.borrow(py).live_connections()
    }

    #[getter]
    fn task_count(&self, py: Python<'_>) -> usize {
        self.shared.borrow(py).tasks
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
        let shared = slf.borrow().shared.clone_ref(py);
        let shared = shared.bind(py);
        ServerShared::refresh_logs(shared, now)?;
        ServerShared::for_each(shared, |conn: &dyn ConnHandle| {
            if let Err(err) = conn.check_timers(py, now) {
                // One connection's failure must not stop every timeout.
                ServerShared::log_app_error(shared, &err)?;
                let _ = conn.abort(py);
            }
            Ok(())
        })
    }
}
