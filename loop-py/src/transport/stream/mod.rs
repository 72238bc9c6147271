//! `StreamTransport`: asyncio's stream transport contract over a
//! [`StreamCore`], for stream sockets (asyncio's `_SelectorSocketTransport`)
//! and the two pipe directions (`_UnixReadPipeTransport`,
//! `_UnixWritePipeTransport`), step for step as asyncio orders them.
//!
//! The Python object users see (`ferroloop/_transports.py`) owns one of
//! these and puts its hot methods (`write`, `writelines`) on itself, so a
//! write is one native call. Readiness arrives through the loop's
//! [`IoPort`](crate::event_loop::IoPort): a read, the protocol's
//! `data_received` (or `get_buffer`/`buffer_updated`), then the core's
//! events (pause/resume writing, the connection lost), with the core never
//! borrowed while the protocol runs.
//!
//! Reads go into the thread's shared read buffer
//! ([`loop_transports::read_buf`]) and only what arrived is copied into the
//! `bytes` the protocol gets; while large messages arrive, reads go straight
//! into the `bytes` (sized by the stream's `ReadSizer`) and it is shrunk in
//! place to what arrived.
//!
//! - this file: the type, its construction and asyncio's API (`#[pymethods]`);
//! - [`read`]: readable readiness, into `data_received` or a
//!   `BufferedProtocol`'s buffer, and the peer's EOF;
//! - [`write`]: writes, their outcome, and flushing on writability;
//! - [`lifecycle`]: the core's events (flow control, the loss), failures,
//!   closing, `connection_lost` and the fd's release.

mod lifecycle;
mod read;
mod write;

use super::protocol;
use super::watch::Watch;
use crate::errors::transport_error;
use crate::event_loop::{Loop, Readiness};
use crate::gil_cell::GilCell;
use crate::pyapi;
use lifecycle::Via;
use loop_core::Interest;
use loop_transports::read_buf::ReadSizer;
use loop_transports::{IoFd, StreamConfig, StreamCore, StreamKind};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::PyTraverseError;
use std::os::fd::RawFd;

/// What each kind calls its failures (asyncio's wording).
struct Wording {
    read_error: &'static str,
    write_error: &'static str,
    /// Logged for each write after the connection was lost, past
    /// asyncio's threshold.
    lost_write: &'static str,
}

fn wording(kind: StreamKind) -> &'static Wording {
    match kind {
        StreamKind::Socket => &Wording {
            read_error: "Fatal read error on socket transport",
            write_error: "Fatal write error on socket transport",
            lost_write: "socket.send() raised exception.",
        },
        StreamKind::ReadPipe | StreamKind::WritePipe => &Wording {
            read_error: "Fatal read error on pipe transport",
            write_error: "Fatal write error on pipe transport",
            lost_write: "pipe closed by peer or os.write(pipe, data) raised exception.",
        },
    }
}

/// Where the connection's end stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lost {
    /// Open (or closing, with data still to write).
    No,
    /// `connection_lost` is scheduled.
    Scheduled,
    /// `connection_lost` ran; the fd is closed.
    Done,
}

struct Inner {
    core: StreamCore,
    /// The asyncio-facing transport (`_transports.py`), until the
    /// connection is lost.
    transport: Option<Py<PyAny>>,
    protocol: Option<Py<PyAny>>,
    /// `protocol.data_received`, looked up once per protocol (`None` for a
    /// `BufferedProtocol`, or a protocol without one: looked up per read,
    /// to fail as asyncio does).
    data_received: Option<Py<PyAny>>,
    buffered: bool,
    /// The object whose `close()` closes the fd (the socket or the pipe
    /// file), called once the protocol heard of the loss.
    owner: Option<Py<PyAny>>,
    empty_waiter: Option<Py<PyAny>>,
    /// Reading started (asyncio's `_add_reader`, scheduled after
    /// `connection_made`).
    reading: bool,
    /// The protocol's exception that ends the connection, for
    /// `connection_lost`.
    failure: Option<PyErr>,
    lost: Lost,
    /// Where the next read goes (see the module docs).
    reads: ReadSizer,
}

/// The native stream transport (see the module docs).
#[pyclass(frozen, module = "ferroloop._native")]
pub(crate) struct StreamTransport {
    watch: Watch,
    kind: StreamKind,
    event_loop: Py<Loop>,
    /// The context the protocol's callbacks run in (CPython 3.15: each
    /// connection's copy of its server's or creator's); `None` before 3.15,
    /// where they run in the loop's.
    context: Option<Py<PyAny>>,
    inner: GilCell<Inner>,
}

impl StreamTransport {
    fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut Inner) -> R) -> R {
        self.inner.with(py, f)
    }

    fn loop_any<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        self.event_loop.bind(py).as_any()
    }

    /// The asyncio-facing transport, for reports and the protocol.
    fn transport<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.with(py, |st| st.transport.as_ref().map(|t| t.clone_ref(py)))
            .map_or_else(|| py.None().into_bound(py), |t| t.into_bound(py))
    }

    /// `loop.call_soon(*args)`, in the connection's context if it has one.
    fn call_soon<'py>(&self, py: Python<'py>, args: Bound<'py, PyTuple>) -> PyResult<()> {
        let event_loop = self.loop_any(py);
        let kwargs = match &self.context {
            Some(context) => {
                let kwargs = PyDict::new(py);
                kwargs.set_item(intern!(py, "context"), context.bind(py))?;
                Some(kwargs)
            }
            None => None,
        };
        event_loop.call_method(intern!(py, "call_soon"), args, kwargs.as_ref())?;
        Ok(())
    }

    fn protocol<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.with(py, |st| st.protocol.as_ref().map(|p| p.clone_ref(py)))
            .map(|p| p.into_bound(py))
    }

    /// The readiness `IoPort` dispatches, in the connection's context if it
    /// has one.
    fn dispatch(target: &Bound<'_, PyAny>, _token: usize, ready: Readiness) -> PyResult<()> {
        // SAFETY: ports of this dispatch are registered with a
        // `StreamTransport` as target (`new`'s `Watch`).
        let slf = unsafe { target.cast_unchecked::<StreamTransport>() };
        match &slf.get().context {
            Some(context) => {
                pyapi::with_context(context.bind(slf.py()), || Self::ready(slf, ready))
            }
            None => Self::ready(slf, ready),
        }
    }

    fn ready(slf: &Bound<'_, Self>, ready: Readiness) -> PyResult<()> {
        if ready.readable {
            Self::on_readable(slf)?;
        }
        if ready.writable {
            Self::on_writable(slf)?;
        }
        Self::sync_interest(slf)
    }

    /// Make the reactor watch what the core needs now (reading only once
    /// started); no syscall when that did not change.
    fn sync_interest(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let wanted = me.with(py, |st| {
            let mut wanted = if st.lost == Lost::No {
                st.core.interest()
            } else {
                Interest::NONE
            };
            wanted.readable &= st.reading;
            wanted
        });
        me.watch.set(me.event_loop.bind(py), slf.as_any(), wanted)
    }
}

#[pymethods]
impl StreamTransport {
    /// `StreamTransport(loop, transport, owner, fd, protocol, kind)`:
    /// `owner` is the socket or pipe file whose `close()` closes `fd` once
    /// the protocol heard of the loss; `kind` is `"socket"`, `"read_pipe"`
    /// or `"write_pipe"`. Nothing is scheduled: the Python transport
    /// schedules `connection_made` and then `_start()`. `context`: the
    /// context the protocol's callbacks run in (3.15's per connection).
    #[new]
    #[pyo3(signature = (event_loop, transport, owner, fd, protocol, kind, context = None))]
    #[allow(clippy::too_many_arguments)] // asyncio's transport constructor, as Python passes it
    fn new(
        py: Python<'_>,
        event_loop: Bound<'_, Loop>,
        transport: Bound<'_, PyAny>,
        owner: Bound<'_, PyAny>,
        fd: RawFd,
        protocol: Bound<'_, PyAny>,
        kind: &str,
        context: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let config = StreamConfig {
            // asyncio reads once per readiness event.
            reads_per_event: 1,
            ..StreamConfig::default()
        };
        // SAFETY: `owner` (kept in the transport) owns the fd and closes it
        // only in `finish`, after the core let go of it (`close_fd`).
        let io = unsafe { IoFd::borrow_raw(fd) };
        let (kind, core) = match kind {
            "socket" => (StreamKind::Socket, StreamCore::socket(io, &config)),
            "read_pipe" => (StreamKind::ReadPipe, StreamCore::read_pipe(io, &config)),
            "write_pipe" => (StreamKind::WritePipe, StreamCore::write_pipe(io, &config)),
            other => return Err(PyValueError::new_err(format!("unknown kind {other:?}"))),
        };
        let core = core.map_err(|e| transport_error(&e))?;
        let (buffered, data_received) = protocol_parts(py, &protocol)?;
        Ok(StreamTransport {
            watch: Watch::new(fd, Self::dispatch),
            kind,
            event_loop: event_loop.unbind(),
            context: context.filter(|c| !c.is_none()).map(Bound::unbind),
            inner: GilCell::new(Inner {
                core,
                transport: Some(transport.unbind()),
                protocol: Some(protocol.unbind()),
                data_received,
                buffered,
                owner: Some(owner.unbind()),
                empty_waiter: None,
                reading: false,
                failure: None,
                lost: Lost::No,
                reads: ReadSizer::default(),
            }),
        })
    }

    /// Start reading (asyncio's `_add_reader` after `connection_made`),
    /// unless paused or closing by then; a write pipe starts watching for
    /// its reader going away.
    fn _start(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        slf.get().with(py, |st| st.reading = true);
        Self::sync_interest(slf)
    }

    fn write(slf: &Bound<'_, Self>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::write_data(slf, data)
    }

    /// `writelines(list_of_data)`: one vectored write of them all.
    fn writelines(slf: &Bound<'_, Self>, list_of_data: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::write_lines(slf, list_of_data)
    }

    fn can_write_eof(&self) -> bool {
        self.kind != StreamKind::ReadPipe
    }

    fn write_eof(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let outcome = slf.get().with(py, |st| st.core.write_eof());
        outcome.map_err(|e| transport_error(&e))?;
        Self::take_events(slf, Via::Call)?;
        Self::sync_interest(slf)
    }

    /// Close after the buffer drains; the protocol hears of it from the
    /// loop.
    fn close(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        slf.get().with(py, |st| st.core.close());
        Self::take_events(slf, Via::Call)?;
        Self::sync_interest(slf)
    }

    /// Close now, dropping what is buffered.
    fn abort(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::force_close(slf, None)?;
        Self::sync_interest(slf)
    }

    #[pyo3(name = "_force_close")]
    fn force_close_py(slf: &Bound<'_, Self>, exc: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let exc = exc.filter(|e| !e.is_none()).map(PyErr::from_value);
        Self::force_close(slf, exc)?;
        Self::sync_interest(slf)
    }

    /// asyncio's `_fatal_error(exc, message)`.
    #[pyo3(signature = (exc, message = "Fatal error on transport"))]
    fn _fatal_error(slf: &Bound<'_, Self>, exc: Bound<'_, PyAny>, message: &str) -> PyResult<()> {
        Self::report(slf, &exc, message)?;
        Self::force_close(slf, Some(PyErr::from_value(exc)))?;
        Self::sync_interest(slf)
    }

    fn is_closing(&self, py: Python<'_>) -> bool {
        self.with(py, |st| st.core.is_closing())
    }

    fn is_reading(&self, py: Python<'_>) -> bool {
        self.with(py, |st| st.core.is_reading())
    }

    fn pause_reading(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let changed = me.with(py, |st| {
            let was = st.core.is_reading();
            st.core.pause_reading();
            was
        });
        if changed {
            Self::sync_interest(slf)?;
            protocol::debug_log(me.loop_any(py), &me.transport(py), "pauses reading")?;
        }
        Ok(())
    }

    fn resume_reading(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let changed = me.with(py, |st| {
            let was = st.core.is_reading();
            st.core.resume_reading();
            !was && st.core.is_reading()
        });
        if changed {
            Self::sync_interest(slf)?;
            protocol::debug_log(me.loop_any(py), &me.transport(py), "resumes reading")?;
        }
        Ok(())
    }

    fn get_write_buffer_size(&self, py: Python<'_>) -> usize {
        self.with(py, |st| st.core.get_write_buffer_size())
    }

    fn get_write_buffer_limits(&self, py: Python<'_>) -> (usize, usize) {
        self.with(py, |st| st.core.get_write_buffer_limits())
    }

    #[pyo3(signature = (high = None, low = None))]
    fn set_write_buffer_limits(
        slf: &Bound<'_, Self>,
        high: Option<i64>,
        low: Option<i64>,
    ) -> PyResult<()> {
        let py = slf.py();
        let outcome = slf
            .get()
            .with(py, |st| st.core.set_write_buffer_limits(high, low));
        outcome.map_err(|e| transport_error(&e))?;
        Self::take_events(slf, Via::Call)
    }

    fn set_protocol(slf: &Bound<'_, Self>, protocol: Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let (buffered, data_received) = protocol_parts(py, &protocol)?;
        let old = slf.get().with(py, |st| {
            st.buffered = buffered;
            (
                st.protocol.replace(protocol.unbind()),
                std::mem::replace(&mut st.data_received, data_received),
            )
        });
        drop(old);
        Ok(())
    }

    fn get_protocol(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.with(py, |st| st.protocol.as_ref().map(|p| p.clone_ref(py)))
    }

    /// For `sendfile`: a future done once the write buffer has drained.
    fn _make_empty_waiter(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let me = slf.get();
        if me.with(py, |st| st.empty_waiter.is_some()) {
            return Err(PyRuntimeError::new_err("Empty waiter is already set"));
        }
        let waiter = me
            .event_loop
            .bind(py)
            .call_method0(intern!(py, "create_future"))?;
        let empty = me.with(py, |st| {
            st.empty_waiter = Some(waiter.clone().unbind());
            st.core.get_write_buffer_size() == 0
        });
        if empty {
            waiter.call_method1(intern!(py, "set_result"), (py.None(),))?;
        }
        Ok(waiter.unbind())
    }

    fn _reset_empty_waiter(&self, py: Python<'_>) {
        let old = self.with(py, |st| st.empty_waiter.take());
        drop(old);
    }

    fn _call_connection_lost(slf: &Bound<'_, Self>, exc: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        Self::connection_lost(slf, exc.filter(|e| !e.is_none()))
    }

    /// asyncio's `_conn_lost` counter.
    #[getter]
    fn _conn_lost(&self, py: Python<'_>) -> u32 {
        self.with(py, |st| st.core.conn_lost())
    }

    /// `write_eof()` was called (asyncio's `_eof`).
    #[getter]
    fn _eof(&self, py: Python<'_>) -> bool {
        self.with(py, |st| st.core.eof_requested())
    }

    /// `connection_lost` ran and the fd is closed.
    #[getter]
    fn _finished(&self, py: Python<'_>) -> bool {
        self.with(py, |st| st.lost == Lost::Done)
    }

    /// Reading or writing is being watched for: `(reading, writing)`.
    #[getter]
    fn _polling(&self, py: Python<'_>) -> (bool, bool) {
        self.watch.polling(py)
    }

    fn fileno(&self) -> RawFd {
        self.watch.fd()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.event_loop)?;
        visit.call(&self.context)?;
        // SAFETY: called from `__traverse__`; the closure only visits.
        let visited = unsafe {
            self.inner.with_in_gc(|st| {
                visit.call(&st.transport)?;
                visit.call(&st.protocol)?;
                visit.call(&st.data_received)?;
                visit.call(&st.owner)?;
                visit.call(&st.empty_waiter)
            })
        };
        #[cfg(Py_GIL_DISABLED)]
        let visited = visited.unwrap_or(Ok(()));
        visited
    }

    fn __clear__(&self) {
        // SAFETY: called from `__clear__`; the references are dropped after
        // the closure returns.
        let taken = unsafe {
            self.inner.with_in_gc(|st| {
                (
                    st.transport.take(),
                    st.protocol.take(),
                    st.data_received.take(),
                    st.empty_waiter.take(),
                )
            })
        };
        drop(taken);
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<StreamTransport fd={} {:?}>",
            self.watch.fd(),
            self.with(py, |st| st.lost == Lost::Done)
        )
    }
}

/// A protocol's read path: buffered (`get_buffer`/`buffer_updated`), or
/// `data_received` looked up now (`None` if it has none: asyncio fails at
/// the first read).
fn protocol_parts(
    py: Python<'_>,
    protocol: &Bound<'_, PyAny>,
) -> PyResult<(bool, Option<Py<PyAny>>)> {
    let buffered = protocol.is_instance(buffered_protocol(py)?)?;
    if buffered {
        return Ok((true, None));
    }
    Ok((
        false,
        protocol
            .getattr(intern!(py, "data_received"))
            .ok()
            .map(Bound::unbind),
    ))
}

fn buffered_protocol(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    use pyo3::sync::PyOnceLock;
    static CELL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    CELL.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("asyncio")?.getattr("BufferedProtocol")?.unbind())
    })
    .map(|t| t.bind(py))
}
