//! `Listener`: the accept loop of a listening socket that asyncio's
//! `Server` serves (`loop._start_serving`), on a [`ListenerCore`].
//!
//! One readable report accepts up to the server's backlog of connections
//! (asyncio's batch). Each becomes a Python `socket` handed to the loop's
//! `_accept_connection` (the protocol factory, TLS, the transport: the
//! asyncio API's long tail, in Python), in the context the server was
//! started in. Running out of fds or memory reports
//! `socket.accept() out of system resource` to the exception handler and
//! stops accepting for `loop_transports`' `ACCEPT_RETRY_DELAY` (the core's
//! back-off, which the server's driver uses too), as asyncio does; other
//! accept errors leave the callback, as asyncio's do.

use super::watch::Watch;
use crate::errors::os_error;
use crate::event_loop::{Loop, Readiness};
use crate::gil_cell::GilCell;
use crate::pyapi;
use loop_core::Interest;
use loop_transports::{AcceptStop, Accepted, IoFd, ListenerCore};
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::PyTraverseError;
use std::os::fd::{IntoRawFd, RawFd};

struct Inner {
    core: ListenerCore,
    /// The listening socket (closed by the loop's `_stop_serving`).
    sock: Option<Py<PyAny>>,
    /// `(family, type, proto)` of the accepted sockets.
    socket_args: (i32, i32, i32),
    /// What `_accept_connection` gets after the socket:
    /// `(protocol_factory, sslcontext, server, ssl_handshake_timeout,
    /// ssl_shutdown_timeout)`.
    serve_args: Option<Py<PyAny>>,
    /// The context connections are set up in (3.15's `context=`, else a
    /// copy of the one `_start_serving` ran in).
    context: Option<Py<PyAny>>,
    /// 3.15: each connection is set up, and its protocol runs, in a copy of
    /// `context` of its own.
    per_connection: bool,
    /// The timer that resumes accepting after a resource limit.
    retry: Option<Py<PyAny>>,
    stopped: bool,
    accepted: Vec<Accepted>,
}

#[pyclass(frozen, module = "ferroloop._native")]
pub(crate) struct Listener {
    watch: Watch,
    backlog: usize,
    event_loop: Py<Loop>,
    inner: GilCell<Inner>,
}

impl Listener {
    fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut Inner) -> R) -> R {
        self.inner.with(py, f)
    }

    fn dispatch(target: &Bound<'_, PyAny>, _token: usize, ready: Readiness) -> PyResult<()> {
        // SAFETY: ports of this dispatch are registered with a `Listener`
        // as target (`new`'s `Watch`).
        let slf = unsafe { target.cast_unchecked::<Listener>() };
        if ready.readable {
            Self::accept_ready(slf)?;
        }
        Ok(())
    }

    /// Watch for connections while accepting (not paused after a
    /// resource limit, not stopped).
    fn sync_interest(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let accepting = me.with(py, |st| !st.stopped && st.core.interest().readable);
        let wanted = if accepting {
            Interest::READABLE
        } else {
            Interest::NONE
        };
        me.watch.set(me.event_loop.bind(py), slf.as_any(), wanted)
    }

    fn accept_ready(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let (mut batch, stop) = me.with(py, |st| {
            if st.stopped {
                return (Vec::new(), AcceptStop::Drained);
            }
            let mut out = std::mem::take(&mut st.accepted);
            let stop = st.core.accept_batch(&mut out);
            (out, stop)
        });
        let mut result = Ok(());
        for conn in batch.drain(..) {
            if let Err(err) = Self::hand_over(slf, conn) {
                result = Err(err);
                break;
            }
        }
        // What was not handed over (after an exit exception) is closed.
        batch.clear();
        me.with(py, |st| st.accepted = batch);
        match stop {
            AcceptStop::Drained | AcceptStop::BatchFull => {}
            AcceptStop::ResourceLimit(err) => Self::out_of_resources(slf, &err)?,
            AcceptStop::Failed(err) => return Err(socket_error(&err)),
        }
        result
    }

    /// One accepted connection to the loop's `_accept_connection`, as a
    /// Python socket, in the server's context (3.15: in a copy of its own,
    /// which the connection's transport keeps).
    fn hand_over(slf: &Bound<'_, Self>, conn: Accepted) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let (args, context, (family, kind, proto), per_connection) = me.with(py, |st| {
            (
                st.serve_args.as_ref().map(|a| a.clone_ref(py)),
                st.context.as_ref().map(|c| c.clone_ref(py)),
                st.socket_args,
                st.per_connection,
            )
        });
        let (Some(args), Some(context)) = (args, context) else {
            return Ok(());
        };
        let fd = conn.fd.into_raw_fd();
        let socket = match socket_type(py)?.call1((family, kind, proto, fd)) {
            Ok(socket) => socket,
            Err(err) => {
                // SAFETY: `fd` was just accepted and no socket object took
                // it; closing it here is its only close.
                drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
                return Err(err);
            }
        };
        let event_loop = me.event_loop.bind(py);
        let accept = event_loop.getattr(intern!(py, "_accept_connection"))?;
        let args = args.bind(py);
        if per_connection {
            let own = context.bind(py).call_method0(intern!(py, "copy"))?;
            return pyapi::with_context(&own, || accept.call1((socket, args, &own)).map(drop));
        }
        pyapi::with_context(context.bind(py), || {
            accept.call1((socket, args, py.None())).map(drop)
        })
    }

    /// `socket.accept() out of system resource`: report, stop accepting,
    /// try again in a second.
    fn out_of_resources(slf: &Bound<'_, Self>, err: &loop_transports::Error) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let now = loop_core::clock::monotonic();
        let (sock, resume_at) = me.with(py, |st| {
            let at = st.core.back_off(now);
            (st.sock.as_ref().map(|s| s.clone_ref(py)), at)
        });
        Self::sync_interest(slf)?;
        let event_loop = me.event_loop.bind(py);
        let context = PyDict::new(py);
        context.set_item("message", "socket.accept() out of system resource")?;
        context.set_item("exception", socket_error(err).into_value(py))?;
        if let Some(sock) = sock {
            let wrapped = py
                .import("asyncio.trsock")?
                .getattr("TransportSocket")?
                .call1((sock,))?;
            context.set_item("socket", wrapped)?;
        }
        event_loop.call_method1(intern!(py, "call_exception_handler"), (context,))?;
        let resume = slf.getattr(intern!(py, "_resume"))?;
        let timer =
            event_loop.call_method1(intern!(py, "call_later"), (resume_at - now, resume))?;
        let old = me.with(py, |st| st.retry.replace(timer.unbind()));
        drop(old);
        Ok(())
    }
}

/// A listening socket's error as the `OSError` asyncio's `accept()` raises.
fn socket_error(err: &loop_transports::Error) -> PyErr {
    match err.io_error() {
        Some(io) => os_error(io),
        None => pyo3::exceptions::PyOSError::new_err(err.to_string()),
    }
}

fn socket_type(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    use pyo3::sync::PyOnceLock;
    static CELL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    CELL.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("socket")?.getattr("socket")?.unbind())
    })
    .map(|t| t.bind(py))
}

#[pymethods]
impl Listener {
    /// `Listener(loop, sock, backlog, serve_args, context)`: accept on
    /// `sock` (a listening socket the caller keeps open until `_stop`),
    /// `backlog` connections per readable report, handing each to
    /// `loop._accept_connection(conn, serve_args, conn_context)`
    /// (`conn_context`: a copy of `context` when one is given, else None).
    #[new]
    #[pyo3(signature = (event_loop, sock, backlog, serve_args, context = None))]
    fn new(
        py: Python<'_>,
        event_loop: Bound<'_, Loop>,
        sock: Bound<'_, PyAny>,
        backlog: usize,
        serve_args: Bound<'_, PyAny>,
        context: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let fd: RawFd = sock.call_method0(intern!(py, "fileno"))?.extract()?;
        let family: i32 = sock.getattr(intern!(py, "family"))?.extract()?;
        let kind: i32 = sock.getattr(intern!(py, "type"))?.extract()?;
        let proto: i32 = sock.getattr(intern!(py, "proto"))?.extract()?;
        // SAFETY: the socket object keeps the fd open until `_stop`, which
        // deregisters and drops the core before the loop closes it.
        let io = unsafe { IoFd::borrow_raw(fd) };
        let core = ListenerCore::new(io, backlog.max(1)).map_err(|e| socket_error(&e))?;
        let given = context.filter(|c| !c.is_none());
        let per_connection = given.is_some();
        let context = match given {
            Some(context) => context,
            None => pyapi::copy_current_context(py)?,
        };
        Ok(Listener {
            watch: Watch::new(fd, Self::dispatch),
            backlog: backlog.max(1),
            event_loop: event_loop.unbind(),
            inner: GilCell::new(Inner {
                core,
                sock: Some(sock.unbind()),
                socket_args: (family, kind, proto),
                serve_args: Some(serve_args.unbind()),
                context: Some(context.unbind()),
                per_connection,
                retry: None,
                stopped: false,
                accepted: Vec::with_capacity(backlog.clamp(1, 128)),
            }),
        })
    }

    /// Start (or go on) accepting.
    fn _start(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::sync_interest(slf)
    }

    /// Accept again after the resource-limit pause.
    fn _resume(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let timer = slf.get().with(py, |st| {
            st.core.resume();
            st.retry.take()
        });
        drop(timer);
        Self::sync_interest(slf)
    }

    /// Stop accepting for good (before the socket is closed).
    fn _stop(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let timer = me.with(py, |st| {
            st.stopped = true;
            st.retry.take()
        });
        if let Some(timer) = &timer {
            timer.bind(py).call_method0(intern!(py, "cancel"))?;
        }
        me.watch.stop(me.event_loop.bind(py))?;
        let taken = me.with(py, |st| {
            st.core.close_fd();
            (st.sock.take(), st.serve_args.take(), st.context.take())
        });
        drop((timer, taken));
        Ok(())
    }

    #[getter]
    fn backlog(&self) -> usize {
        self.backlog
    }

    fn fileno(&self) -> RawFd {
        self.watch.fd()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.event_loop)?;
        // SAFETY: called from `__traverse__`; the closure only visits.
        let visited = unsafe {
            self.inner.with_in_gc(|st| {
                visit.call(&st.sock)?;
                visit.call(&st.serve_args)?;
                visit.call(&st.context)?;
                visit.call(&st.retry)
            })
        };
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited
    }

    fn __clear__(&self) {
        // SAFETY: called from `__clear__`; dropped after the closure.
        let taken = unsafe {
            self.inner
                .with_in_gc(|st| (st.serve_args.take(), st.context.take(), st.retry.take()))
        };
        drop(taken);
    }

    fn __repr__(&self) -> String {
        format!("<Listener fd={}>", self.watch.fd())
    }
}
