//! The server object and its driver: `HttpServer` holds a
//! `loop_server::Driver` (every connection, in Rust) with the Python state
//! it keeps per connection and exchange, and is the host the driver needs:
//! readiness reaches it through the loop's [`IoPort`]s (no Python call),
//! the driver's reactor updates become the loop's registrations, its end-
//! of-tick flush a [`TickEnd`] hook, its events the application's (handed
//! to the layer above: `asgi::http` and `asgi::ws` through the server's
//! [`Handle`]), its log lines the Python loggers'.
//!
//! Borrow rule: the server (its driver) is borrowed only for one driver
//! call at a time and never while Python runs (an app, a future's
//! callbacks, logging, a destructor); Python objects taken out of the
//! driver's state are dropped after the borrow ends.

use super::logs::Logs;
use crate::event_loop::{Loop, Readiness, TickEnd};
use crate::gil_cell::GilCell;
use loop_server::{App, ConnId, Driver, Event, IoUpdate, Log, Token};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PySystemExit};
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use pyo3::PyTraverseError;

/// What the driver keeps of Python per connection.
#[derive(Default)]
pub(super) struct ConnPy {
    /// The template every request's scope is copied from, made at the
    /// connection's first request.
    pub scope_base: Option<Py<PyDict>>,
    /// `scope["extensions"]["tls"]`, made at the first request.
    pub tls_extension: Option<Py<PyDict>>,
}

/// A WebSocket session's ASGI stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// HTTP owns the connection: `websocket.connect` is due, the app
    /// accepts, closes (a `403`) or denies with a response.
    Connecting,
    /// The app's denial response is being sent.
    Denying,
    /// After the `101`: messages both ways.
    Open,
    Done,
}

/// The ASGI side of a WebSocket session. It lives in a [`WsCell`] its
/// callables share with the exchange, so it outlives the connection: a
/// `receive()` after the client left still gets its one
/// `websocket.disconnect`.
pub(super) struct WsState {
    pub stage: Stage,
    pub connect_delivered: bool,
    pub disconnect_delivered: bool,
    /// The message that ended the app's side (`websocket.close`, a
    /// denial's last body): a `send()` after it is an error.
    pub finished_by: Option<&'static str>,
    /// How it ended for the app before (or without) a session: 1006.
    pub ended: bool,
}

/// A session's [`WsState`], shared by its callables and its exchange.
#[pyclass(frozen, module = "ferroloop._native")]
pub(super) struct WsCell(GilCell<WsState>);

impl WsCell {
    pub fn new(state: WsState) -> Self {
        WsCell(GilCell::new(state))
    }

    /// The state, changed by `f` (which runs no Python).
    pub fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut WsState) -> R) -> R {
        self.0.with(py, f)
    }
}

/// What the driver keeps of Python per exchange: what its app waits on and
/// its task.
#[derive(Default)]
pub(super) struct ExchangePy {
    pub receive: Option<Py<PyAny>>,
    pub send: Option<Py<PyAny>>,
    pub task: Option<Py<PyAny>>,
    /// A `send()` is decoding its message (which can run Python code, a
    /// body's buffer export): a `send()` from inside it is refused.
    pub sending: bool,
    /// The exchange is a WebSocket session's.
    pub ws: Option<Py<WsCell>>,
}

impl ExchangePy {
    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        for waiter in [&self.receive, &self.send, &self.task]
            .into_iter()
            .flatten()
        {
            visit.call(waiter)?;
        }
        if let Some(ws) = &self.ws {
            visit.call(ws)?;
        }
        Ok(())
    }
}

/// The driver's host types.
pub(super) struct Bridge;

impl App for Bridge {
    type Conn = ConnPy;
    type Exchange = ExchangePy;
}

/// Acts on one driver event: the layer above's (`asgi::server`). `in_io`:
/// called from a readiness report, where no task runs (a waiting task may
/// be resumed at once).
pub(super) type Handle = fn(&Bound<'_, HttpServer>, Event<Bridge>, bool) -> PyResult<()>;

#[pyclass(module = "ferroloop._native")]
pub struct HttpServer {
    pub(super) driver: Driver<Bridge>,
    pub(super) event_loop: Py<Loop>,
    pub(super) app: Py<PyAny>,
    /// The lifespan state copied into every request scope.
    pub(super) state: Option<Py<PyDict>>,
    pub(super) logs: Logs,
    /// One finished future: what `send()` returns when it need not wait.
    pub(super) done_future: Py<PyAny>,
    /// App tasks running.
    pub(super) tasks: usize,
    /// Called (soon, from the loop) once the requests reach the count.
    pub(super) request_limit: Option<(u64, Py<PyAny>)>,
    /// The timeout sweep's timer.
    pub(super) sweep: Option<Py<PyAny>>,
    pub(super) handle: Handle,
    io: Vec<IoUpdate>,
}

impl HttpServer {
    pub(super) fn with_driver(
        driver: Driver<Bridge>,
        event_loop: Py<Loop>,
        app: Py<PyAny>,
        logs: Logs,
        done_future: Py<PyAny>,
        handle: Handle,
    ) -> Self {
        HttpServer {
            driver,
            event_loop,
            app,
            state: None,
            logs,
            done_future,
            tasks: 0,
            request_limit: None,
            sweep: None,
            handle,
            io: Vec::new(),
        }
    }

    pub(super) fn traverse_all(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.event_loop)?;
        visit.call(&self.app)?;
        visit.call(&self.done_future)?;
        if let Some(state) = &self.state {
            visit.call(state)?;
        }
        if let Some((_, callback)) = &self.request_limit {
            visit.call(callback)?;
        }
        if let Some(sweep) = &self.sweep {
            visit.call(sweep)?;
        }
        self.logs.traverse(visit)?;
        for ex in self.driver.exchange_apps() {
            ex.traverse(visit)?;
        }
        Ok(())
    }
}

/// A `receive()`/`send()` made while the server is in use further up the
/// stack (from a `__del__` or a buffer export that runs inside it).
pub(super) fn reentered<E>(_: E) -> PyErr {
    PyRuntimeError::new_err("ASGI receive()/send() called re-entrantly, from inside the server")
}

/// Run `f` on the driver (borrowed for the call only; `f` runs no Python
/// and drops no Python object).
pub(super) fn with_driver<R>(
    slf: &Bound<'_, HttpServer>,
    f: impl FnOnce(&mut Driver<Bridge>) -> R,
) -> R {
    f(&mut slf.borrow_mut().driver)
}

/// Hand the driver's reactor updates to the loop and its events to the
/// application, until there are none; then ask for the end-of-tick flush
/// if the driver corked output. An error handling one event does not keep
/// the others waiting (the first is returned), but `KeyboardInterrupt` and
/// `SystemExit` go up at once.
pub(super) fn pump(slf: &Bound<'_, HttpServer>, in_io: bool) -> PyResult<()> {
    let py = slf.py();
    let mut result = Ok(());
    loop {
        let (mut io, event, handle) = {
            let mut me = slf.borrow_mut();
            let mut io = std::mem::take(&mut me.io);
            me.driver.take_io(&mut io);
            (io, me.driver.next_event(), me.handle)
        };
        if !io.is_empty() {
            apply_io(slf, &mut io)?;
            slf.borrow_mut().io = io;
        }
        let Some(event) = event else {
            break;
        };
        if let Err(err) = handle(slf, event, in_io) {
            if err.is_instance_of::<PyKeyboardInterrupt>(py)
                || err.is_instance_of::<PySystemExit>(py)
            {
                return Err(err);
            }
            if result.is_ok() {
                result = Err(err);
            }
        }
    }
    let wanted = slf.borrow_mut().driver.take_flush_request();
    if wanted {
        let hook = Box::new(FlushCorked(slf.clone().unbind()));
        let event_loop = slf.borrow().event_loop.clone_ref(py);
        if event_loop.get().at_tick_end(hook).is_err() {
            // Refused (the loop is closing): write at once.
            slf.borrow_mut().driver.flush_corked();
            return pump(slf, in_io).and(result);
        }
    }
    result
}

/// The loop's registrations, in the driver's order: a connection's fd is
/// deregistered before its stream (and fd) is dropped, so a reused fd
/// number never inherits it.
fn apply_io(slf: &Bound<'_, HttpServer>, io: &mut Vec<IoUpdate>) -> PyResult<()> {
    let py = slf.py();
    let event_loop = slf.borrow().event_loop.clone_ref(py);
    let event_loop = event_loop.bind(py);
    for update in io.drain(..) {
        match update {
            IoUpdate::Register {
                fd,
                token,
                interest,
            } => {
                let registered = Loop::io_register(
                    event_loop,
                    fd,
                    slf.as_any(),
                    token.to_usize(),
                    dispatch,
                    interest,
                );
                if let (Err(err), Token::Conn(id)) = (registered, token) {
                    // It cannot be served: it closes (the listener's error
                    // is the caller's).
                    with_driver(slf, |d| d.abort(id));
                    log_app_error(slf, &err)?;
                }
            }
            IoUpdate::Interest { fd, interest } => {
                Loop::io_set_interest(event_loop, fd, interest)?;
            }
            IoUpdate::Deregister { fd } => Loop::io_deregister(event_loop, fd)?,
            IoUpdate::Close { fd, stream } => {
                Loop::io_deregister(event_loop, fd)?;
                drop(stream);
            }
        }
    }
    Ok(())
}

/// Readiness of one of the server's fds, from the loop's ready queue.
fn dispatch(target: &Bound<'_, PyAny>, token: usize, ready: Readiness) -> PyResult<()> {
    let slf = target.cast::<HttpServer>()?;
    slf.borrow_mut()
        .driver
        .ready(token, ready.readable, ready.writable);
    pump(slf, true)
}

/// The end-of-tick flush of the server's corked connections.
struct FlushCorked(Py<HttpServer>);

impl TickEnd for FlushCorked {
    fn run(self: Box<Self>, py: Python<'_>) {
        let server = self.0.bind(py);
        server.borrow_mut().driver.flush_corked();
        if let Err(err) = pump(server, true) {
            let _ = log_app_error(server, &err);
        }
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.0)
    }
}

/// The connection of a token (a pipelined request's resume).
pub(super) fn conn_of(token: usize) -> Option<ConnId> {
    match Token::from_usize(token) {
        Token::Conn(id) => Some(id),
        Token::Listener(_) => None,
    }
}

// ---- logging ----------------------------------------------------------------

/// A driver's line on its logger.
pub(super) fn log_line(slf: &Bound<'_, HttpServer>, line: Log) -> PyResult<()> {
    let py = slf.py();
    match line {
        Log::Debug(text) => log(slf, intern!(py, "debug"), &text),
        Log::Info(text) => log(slf, intern!(py, "info"), &text),
        Log::Warning(text) => log(slf, intern!(py, "warning"), &text),
        Log::Access(text) => log_access(slf, text),
    }
}

pub(super) fn log_error(slf: &Bound<'_, HttpServer>, message: &str) -> PyResult<()> {
    log(slf, intern!(slf.py(), "error"), message)
}

/// `message` on the error logger through its method `level` (the logger is
/// cloned out first: logging runs Python).
fn log(slf: &Bound<'_, HttpServer>, level: &Bound<'_, PyString>, message: &str) -> PyResult<()> {
    let py = slf.py();
    let logger = slf.borrow().logs.error.clone_ref(py);
    logger.call_method1(py, level, (message,))?;
    Ok(())
}

/// An access-log line. The record is made and handed to the logger's
/// handlers directly: `Logger.info` would first walk the Python stack for
/// a caller (there is none, the caller is Rust), which costs more than the
/// rest of the line.
fn log_access(slf: &Bound<'_, HttpServer>, line: String) -> PyResult<()> {
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

/// The app's call ended with `exc`: a client disconnect when the server
/// had seen the client go (`client_gone`) or the error is, or was raised
/// while handling, the server's own `ClientDisconnected` (Starlette turns
/// it into its `ClientDisconnect`, chained); then one DEBUG line without a
/// traceback, counted as `client_disconnects`. Anything else is an app
/// error: ERROR with the traceback.
pub(super) fn app_stopped(
    slf: &Bound<'_, HttpServer>,
    exc: &Bound<'_, PyAny>,
    client_gone: bool,
) -> PyResult<()> {
    if !(client_gone || caused_by_disconnect(exc)) {
        return log_app_exception(slf, exc);
    }
    let debug = {
        let me = slf.borrow();
        me.driver.counters().client_disconnects.bump();
        me.logs.debug_on
    };
    if !debug {
        return Ok(());
    }
    let name = exc.get_type().qualname()?;
    let line = format!("ASGI application stopped after its client disconnected ({name}: {exc})");
    log(slf, intern!(slf.py(), "debug"), &line)
}

/// "Exception in ASGI application", with the traceback (each one is
/// counted: `app_exceptions`).
fn log_app_exception(slf: &Bound<'_, HttpServer>, exc: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = slf.py();
    let logger = {
        let me = slf.borrow();
        me.driver.counters().app_exceptions.bump();
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

pub(super) fn log_app_error(slf: &Bound<'_, HttpServer>, err: &PyErr) -> PyResult<()> {
    log_app_exception(slf, err.value(slf.py()).as_any())
}

/// Refresh the logger levels the driver makes lines for (the sweep calls
/// this; logging's `isEnabledFor` is Python).
pub(super) fn refresh_logs(slf: &Bound<'_, HttpServer>) -> PyResult<()> {
    let probe = slf.borrow().logs.probe(slf.py());
    let levels = probe.levels(slf.py())?;
    let mut me = slf.borrow_mut();
    me.logs.set_levels(levels);
    let (access, debug) = levels;
    me.driver.set_log_levels(debug, access);
    Ok(())
}

/// One more request (with `method`) arrived; at the limit, its callback is
/// scheduled (once, from the loop).
pub(super) fn count_request(slf: &Bound<'_, HttpServer>) -> PyResult<()> {
    let py = slf.py();
    let (due, event_loop) = {
        let mut me = slf.borrow_mut();
        let requests = me.driver.counters().requests.get();
        let due = match &me.request_limit {
            Some((limit, _)) if requests >= *limit => me.request_limit.take(),
            _ => None,
        };
        (due, me.event_loop.clone_ref(py))
    };
    if let Some((_, callback)) = due {
        event_loop
            .bind(py)
            .call_method1(intern!(py, "call_soon"), (callback,))?;
    }
    Ok(())
}

/// A transport error (a listener that cannot be used), as `OSError`.
pub(super) fn os_error(err: loop_transports::Error) -> PyErr {
    crate::errors::os_error(&err.into())
}
