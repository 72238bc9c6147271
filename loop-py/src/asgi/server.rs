//! The native half of `ferroloop.Server`: its Python API (listening,
//! drain and shutdown, stats, TLS reloads, the timeout sweep's timer) and
//! the driver's events handed to the application (HTTP requests to
//! `asgi::http`, WebSocket sessions to `asgi::ws`). Binding sockets,
//! lifespan and signals are Python (`ferroloop/server/`).

use super::bridge::{self, conn_of, with_driver, Bridge, HttpServer};
use super::logs::Logs;
use super::{http, settings, stats, ws};
use crate::event_loop::Loop;
use loop_server::{Driver, Event, Monotonic};
use loop_transports::IoFd;
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::os::fd::RawFd;
use std::sync::Arc;

/// One driver event for the application.
fn handle(server: &Bound<'_, HttpServer>, event: Event<Bridge>, in_io: bool) -> PyResult<()> {
    let is_ws = |conn, ex| {
        with_driver(server, |d| {
            d.exchange_app(conn, ex).is_some_and(|x| x.ws.is_some())
        })
    };
    match event {
        Event::Request { conn, head, ws } => {
            bridge::count_request(server)?;
            if http::over_limit(&server.borrow()) {
                with_driver(server, |d| d.reject(conn, head, 503));
                return Ok(());
            }
            match ws {
                Some(subprotocols) => ws::request(server, conn, head, subprotocols),
                None => http::request(server, conn, head),
            }
        }
        Event::Body { conn, ex } => http::deliver(server, conn, ex),
        Event::Ended {
            conn,
            ex,
            disconnected,
        } => {
            if is_ws(conn, ex) {
                ws::ended(server, conn, ex, in_io)
            } else {
                http::ended(server, conn, ex, disconnected)
            }
        }
        Event::Writable { conn, ex } => http::writable(server, conn, ex),
        Event::WsInput { conn, ex } => match ws::WsRef::of(server, conn, ex) {
            Some(r) => ws::wake_receiver(server, &r, in_io),
            None => Ok(()),
        },
        Event::Pipelined { conn } => {
            // From the loop, not from here: this may run inside the app's
            // step, and a task cannot start inside another.
            let py = server.py();
            let token = loop_server::Token::Conn(conn).to_usize();
            let again = server.getattr(intern!(py, "_resume"))?;
            let event_loop = server.borrow().event_loop.clone_ref(py);
            event_loop
                .bind(py)
                .call_method1(intern!(py, "call_soon"), (again, token))?;
            Ok(())
        }
        Event::Wakeup { at } => {
            let py = server.py();
            let resume = server.getattr(intern!(py, "_resume_listeners"))?;
            let event_loop = server.borrow().event_loop.clone_ref(py);
            let delay = (at - loop_core::clock::monotonic()).max(0.0);
            event_loop
                .bind(py)
                .call_method1(intern!(py, "call_later"), (delay, resume))?;
            Ok(())
        }
        // The Python state of a closed connection, dropped unborrowed.
        Event::Closed { app, exchanges, .. } => {
            drop(app);
            drop(exchanges);
            Ok(())
        }
        Event::Log(line) => bridge::log_line(server, line),
    }
}

impl HttpServer {
    fn schedule_sweep(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let (interval, event_loop) = {
            let me = slf.borrow();
            (
                me.driver.settings().sweep_interval(),
                me.event_loop.clone_ref(py),
            )
        };
        let callback = slf.getattr(intern!(py, "_sweep"))?;
        let handle = event_loop
            .bind(py)
            .call_method1(intern!(py, "call_later"), (interval, callback))?;
        let old = slf.borrow_mut().sweep.replace(handle.unbind());
        drop(old);
        Ok(())
    }
}

#[pymethods]
impl HttpServer {
    /// `HttpServer(loop, app, config, *, error_log, access_log)`: `config`
    /// is the `ferroloop.Config` (its native settings, `SETTINGS`); the
    /// loggers are `logging.Logger`s.
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
            PyRuntimeError::new_err(
                "ferroloop's HTTP server runs on a ferroloop loop: use ferroloop.run() or ferroloop.serve()",
            )
        })?;
        let server_settings = settings::from_config(config)?;
        let access = server_settings.access_log;
        let driver = Driver::new(server_settings, Arc::new(Monotonic))
            .map_err(|e| settings::tls_error(&e))?;
        let done_future = Loop::create_future(event_loop)?;
        done_future.call_method1(intern!(py, "set_result"), (py.None(),))?;
        let logs = Logs::new(py, error_log, access_log, access)?;
        let mut server = HttpServer::with_driver(
            driver,
            event_loop.clone().unbind(),
            app,
            logs,
            done_future.unbind(),
            handle,
        );
        let (access_on, debug_on) = (server.logs.access_on, server.logs.debug_on);
        server.driver.set_log_levels(debug_on, access_on);
        Ok(server)
    }

    /// The `Config` attributes the server reads (the settings table's
    /// native rows).
    #[classattr]
    #[pyo3(name = "SETTINGS")]
    fn settings_read() -> Vec<&'static str> {
        settings::native_names()
    }

    /// The lifespan state copied into every request scope.
    fn set_state(&mut self, state: Option<Py<PyDict>>) {
        self.state = state;
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
        with_driver(slf, |d| d.listen(borrowed, tcp, shared)).map_err(bridge::os_error)?;
        bridge::pump(slf, false)?;
        if slf.borrow().sweep.is_none() {
            Self::schedule_sweep(slf)?;
        }
        Ok(())
    }

    /// Stop accepting on every listener (graceful shutdown's first step).
    fn stop_accepting(slf: &Bound<'_, Self>) -> PyResult<()> {
        with_driver(slf, |d| d.stop_listening());
        bridge::pump(slf, false)
    }

    /// Close idle connections now; busy ones close after their response.
    /// `keep_idle` (a worker handing over to its replacement): idle
    /// keep-alive connections answer one more request, with `connection:
    /// close`, instead of being closed under a client that may be sending.
    #[pyo3(signature = (keep_idle = false))]
    fn drain(slf: &Bound<'_, Self>, keep_idle: bool) -> PyResult<()> {
        with_driver(slf, |d| d.drain(keep_idle));
        bridge::pump(slf, false)
    }

    /// Close every connection (the grace period is over), cancel the app
    /// tasks still running, and stop the sweep.
    fn close_all(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let tasks: Vec<Py<PyAny>> = slf
            .borrow()
            .driver
            .exchange_apps()
            .filter_map(|x| x.task.as_ref().map(|t| t.clone_ref(py)))
            .collect();
        with_driver(slf, |d| d.abort_all());
        let pumped = bridge::pump(slf, false);
        for task in tasks {
            task.call_method0(py, intern!(py, "cancel"))?;
        }
        let sweep = slf.borrow_mut().sweep.take();
        if let Some(handle) = sweep {
            handle.call_method0(py, intern!(py, "cancel"))?;
        }
        pumped
    }

    /// Call `callback()` (from the loop) once `limit` requests have arrived
    /// (`limit_max_requests`).
    fn on_request_limit(&mut self, limit: u64, callback: Py<PyAny>) {
        self.request_limit = Some((limit, callback));
    }

    /// Re-read the TLS files for new handshakes; live connections keep
    /// their sessions. A file that does not load keeps the old
    /// certificates and logs a warning naming why. False when nothing was
    /// reloaded (that, or TLS is off).
    fn reload_tls(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let reloaded = with_driver(slf, |d| d.reload_tls());
        bridge::pump(slf, false)?;
        Ok(reloaded)
    }

    /// Whether the listeners speak TLS.
    #[getter]
    fn tls(&self) -> bool {
        self.driver.tls_enabled()
    }

    /// The TLS handshake counters (all zero without TLS).
    fn tls_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats::to_dict(py, &self.driver.counters().tls_report())
    }

    /// Every counter (`Server.stats()`), a fresh dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats::to_dict(py, &self.driver.report(self.tasks))
    }

    /// Requests whose head arrived so far.
    #[getter]
    fn request_count(&self) -> u64 {
        self.driver.counters().requests.get()
    }

    #[getter]
    fn connection_count(&self) -> usize {
        self.driver.open_connections()
    }

    #[getter]
    fn task_count(&self) -> usize {
        self.tasks
    }

    /// Continue with a connection's pipelined input (from the loop).
    fn _resume(slf: &Bound<'_, Self>, token: usize) -> PyResult<()> {
        if let Some(conn) = conn_of(token) {
            with_driver(slf, |d| d.resume(conn));
        }
        bridge::pump(slf, true)
    }

    /// Accept again after a listener's back-off.
    fn _resume_listeners(slf: &Bound<'_, Self>) -> PyResult<()> {
        with_driver(slf, |d| d.resume_listeners());
        bridge::pump(slf, true)
    }

    /// The periodic check: deadlines, logger levels, suppressed warnings.
    fn _sweep(slf: &Bound<'_, Self>) -> PyResult<()> {
        let old = slf.borrow_mut().sweep.take();
        drop(old);
        Self::schedule_sweep(slf)?;
        bridge::refresh_logs(slf)?;
        with_driver(slf, |d| d.sweep());
        bridge::pump(slf, true)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        self.traverse_all(&visit)
    }

    fn __repr__(&self) -> String {
        format!(
            "<HttpServer connections={} tasks={}>",
            self.driver.open_connections(),
            self.tasks
        )
    }
}
