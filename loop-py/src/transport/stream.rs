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

use super::bytes::{ByteView, Bytes, UninitBytes};
use super::protocol::{self, Failed};
use crate::errors::os_error;
use crate::event_loop::{Loop, Readiness};
use crate::gil_cell::GilCell;
use crate::pyapi;
use loop_core::Interest;
use loop_transports::read_buf::{self, ReadSizer};
use loop_transports::{
    Error, IoFd, Op, ReadInto, StreamConfig, StreamCore, StreamEvent, StreamKind, Write,
};
use pyo3::exceptions::{PyConnectionError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
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
    /// What the reactor watches for; `None` until registered.
    watching: Option<Interest>,
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
    fd: RawFd,
    kind: StreamKind,
    event_loop: Py<Loop>,
    /// The context the protocol's callbacks run in (CPython 3.15: each
    /// connection's copy of its server's or creator's); `None` before 3.15,
    /// where they run in the loop's.
    context: Option<Py<PyAny>>,
    inner: GilCell<Inner>,
}

/// One read's outcome, taken out of the core before Python runs.
enum Got<'py> {
    Data(Bound<'py, PyBytes>),
    Eof,
    Nothing,
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
    fn dispatch(target: &Bound<'_, PyAny>, ready: Readiness) -> PyResult<()> {
        // SAFETY: ports of this dispatch are registered with a
        // `StreamTransport` as target (`sync_interest`).
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
        let (wanted, watching) = me.with(py, |st| {
            let mut wanted = if st.lost == Lost::No {
                st.core.interest()
            } else {
                Interest::NONE
            };
            wanted.readable &= st.reading;
            (wanted, st.watching)
        });
        if watching == Some(wanted) || (watching.is_none() && wanted.is_empty()) {
            return Ok(());
        }
        let event_loop = me.event_loop.bind(py);
        match watching {
            None => Loop::io_register(event_loop, me.fd, slf.as_any(), Self::dispatch, wanted)?,
            Some(_) => Loop::io_set_interest(event_loop, me.fd, wanted)?,
        }
        me.with(py, |st| st.watching = Some(wanted));
        Ok(())
    }

    // ---- reading ---------------------------------------------------------

    fn on_readable(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let (lost, buffered) = me.with(py, |st| {
            st.core.begin_read_event();
            (st.lost != Lost::No || st.core.conn_lost() > 0, st.buffered)
        });
        if lost {
            return Ok(());
        }
        if me.kind == StreamKind::WritePipe {
            // Readable: the reader went away (asyncio's `_read_ready`).
            me.with(py, |st| {
                st.core.read();
            });
            if protocol::is_debug(me.loop_any(py))? {
                let transport = me.transport(py);
                pyapi::asyncio_logger(py)?
                    .call_method1("info", ("%r was closed by peer", transport))?;
            }
            return Self::take_events(slf, Via::Hangup);
        }
        if buffered {
            Self::read_into_protocol(slf)?;
        } else {
            Self::read_data(slf)?;
        }
        Self::take_events(slf, Via::Read)
    }

    /// One read for a plain `Protocol`, handed to `data_received`.
    fn read_data(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let got = me.with(py, |st| read_once(py, st))?;
        match got {
            Got::Nothing => Ok(()),
            Got::Eof => Self::on_eof(slf),
            Got::Data(data) => {
                // Bound (not Py) clones: dropping them needs no check of
                // whether the GIL is held.
                let (callback, protocol) = me.with(py, |st| {
                    (
                        st.data_received.as_ref().map(|c| c.bind(py).clone()),
                        st.protocol.as_ref().map(|p| p.bind(py).clone()),
                    )
                });
                let result = match (callback, protocol) {
                    (Some(callback), _) => callback.call1((data,)),
                    (None, Some(protocol)) => {
                        protocol.call_method1(intern!(py, "data_received"), (data,))
                    }
                    (None, None) => return Ok(()),
                };
                match result {
                    Ok(_) => Ok(()),
                    // A read pipe's protocol errors are the loop's to report,
                    // as asyncio's pipe reader lets them out.
                    Err(err) if me.kind == StreamKind::ReadPipe => Err(err),
                    Err(err) => Self::protocol_failed(
                        slf,
                        err,
                        "Fatal error: protocol.data_received() call failed.",
                    ),
                }
            }
        }
    }

    /// One read for a `BufferedProtocol`, into its `get_buffer()`.
    fn read_into_protocol(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        if !me.with(py, |st| st.core.wants_read()) {
            return Ok(());
        }
        let Some(protocol) = me.protocol(py) else {
            return Ok(());
        };
        const GET_BUFFER: &str = "Fatal error: protocol.get_buffer() call failed.";
        let buffer = match protocol.call_method1(intern!(py, "get_buffer"), (-1,)) {
            Ok(buffer) => buffer,
            Err(err) => return Self::protocol_failed(slf, err, GET_BUFFER),
        };
        let mut view = match ByteView::get(&buffer, true) {
            Ok(view) => view,
            Err(err) => return Self::protocol_failed(slf, err, GET_BUFFER),
        };
        if view.len() == 0 {
            let err = PyRuntimeError::new_err("get_buffer() returned an empty buffer");
            return Self::protocol_failed(slf, err, GET_BUFFER);
        }
        // No Python runs while the export is written to.
        let read = me.with(py, |st| st.core.read_into(view.as_mut_slice()));
        drop(view);
        match read {
            Ok(ReadInto::Data(n)) => {
                if let Err(err) = protocol.call_method1(intern!(py, "buffer_updated"), (n,)) {
                    return Self::protocol_failed(
                        slf,
                        err,
                        "Fatal error: protocol.buffer_updated() call failed.",
                    );
                }
                Ok(())
            }
            Ok(ReadInto::Eof) => Self::on_eof(slf),
            Ok(ReadInto::Done) | Err(_) => Ok(()),
        }
    }

    /// The peer's EOF. A socket asks `eof_received()` whether to stay
    /// half-open; a read pipe schedules it, then the loss (the core has
    /// closed it already).
    fn on_eof(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let event_loop = me.loop_any(py);
        let Some(protocol) = me.protocol(py) else {
            return Ok(());
        };
        if me.kind == StreamKind::ReadPipe {
            if protocol::is_debug(event_loop)? {
                pyapi::asyncio_logger(py)?
                    .call_method1("info", ("%r was closed by peer", me.transport(py)))?;
            }
            let eof_received = protocol.getattr(intern!(py, "eof_received"))?;
            me.call_soon(py, PyTuple::new(py, [eof_received])?)?;
            return Ok(());
        }
        protocol::debug_log(event_loop, &me.transport(py), "received EOF")?;
        match protocol.call_method0(intern!(py, "eof_received")) {
            Ok(keep_open) => {
                if !keep_open.is_truthy()? {
                    Self::close(slf)?;
                }
                // Half-closed otherwise: the core reads no more.
                Ok(())
            }
            Err(err) => Self::protocol_failed(
                slf,
                err,
                "Fatal error: protocol.eof_received() call failed.",
            ),
        }
    }

    // ---- writing ---------------------------------------------------------

    fn on_writable(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        me.with(py, |st| {
            if st.lost == Lost::No {
                st.core.on_writable();
            }
        });
        Self::take_events(slf, Via::Flush)?;
        Self::settle_empty_waiter(slf)
    }

    /// A `sendfile()` waiting for the buffer to drain learns it did.
    fn settle_empty_waiter(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let waiter = slf.get().with(py, |st| {
            if st.core.get_write_buffer_size() == 0 {
                st.empty_waiter.as_ref().map(|w| w.clone_ref(py))
            } else {
                None
            }
        });
        if let Some(waiter) = waiter {
            let waiter = waiter.bind(py);
            if !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
                waiter.call_method1(intern!(py, "set_result"), (py.None(),))?;
            }
        }
        Ok(())
    }

    /// A write's outcome: a warning for writes to a lost connection, the
    /// error for a bad call, and the events it caused.
    fn wrote(slf: &Bound<'_, Self>, outcome: Result<Write, Error>) -> PyResult<()> {
        let py = slf.py();
        match outcome {
            Ok(Write::Accepted) => {}
            Ok(Write::Ignored { warn, .. }) => {
                if warn {
                    pyapi::asyncio_logger(py)?
                        .call_method1("warning", (wording(slf.get().kind).lost_write,))?;
                }
                return Ok(());
            }
            Err(Error::WriteAfterEof) => {
                return Err(PyRuntimeError::new_err(
                    "Cannot call write() after write_eof()",
                ))
            }
            Err(err) => return Err(transport_error(&err)),
        }
        Self::take_events(slf, Via::Write)?;
        Self::sync_interest(slf)
    }

    // ---- events and the end of the connection ----------------------------

    /// Deliver the core's events: flow control, and the connection lost.
    /// Most calls find none (a read or write that changed nothing): that
    /// check stays inline, the delivery does not.
    #[inline]
    fn take_events(slf: &Bound<'_, Self>, via: Via) -> PyResult<()> {
        if slf.get().with(slf.py(), |st| st.core.has_events()) {
            Self::deliver_events(slf, via)
        } else {
            Ok(())
        }
    }

    #[inline(never)]
    fn deliver_events(slf: &Bound<'_, Self>, via: Via) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        loop {
            let Some(event) = me.with(py, |st| st.core.next_event()) else {
                return Ok(());
            };
            match event {
                StreamEvent::PauseWriting | StreamEvent::ResumeWriting => {
                    let method = if matches!(event, StreamEvent::PauseWriting) {
                        "pause_writing"
                    } else {
                        "resume_writing"
                    };
                    if let Some(protocol) = me.protocol(py) {
                        protocol::flow_callback(
                            me.loop_any(py),
                            &me.transport(py),
                            &protocol,
                            method,
                        )?;
                    }
                }
                StreamEvent::Closed(err) => Self::closed(slf, err, via)?,
                // Transports are made of connected sockets.
                StreamEvent::Connected | StreamEvent::ConnectFailed(_) => {}
            }
        }
    }

    /// The core lost the connection: report an I/O error as asyncio's
    /// `_fatal_error`, stop watching the fd, and call `connection_lost` —
    /// at once when a drained buffer finished a close (as asyncio's
    /// `_write_ready`), else from the loop.
    fn closed(slf: &Bound<'_, Self>, err: Option<Error>, via: Via) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let failure = me.with(py, |st| {
            st.lost = Lost::Scheduled;
            st.failure.take()
        });
        let exc = match (failure, err) {
            (Some(failure), _) => Some(failure.into_value(py).into_any()),
            (None, Some(err)) => {
                let exc = transport_error(&err).into_value(py).into_any();
                // A write pipe whose reader left is closed quietly.
                if via != Via::Hangup {
                    let message = match err.op() {
                        Some(Op::Read) => wording(me.kind).read_error,
                        _ => wording(me.kind).write_error,
                    };
                    Self::report(slf, exc.bind(py), message)?;
                }
                Some(exc)
            }
            (None, None) => None,
        };
        Self::sync_interest(slf)?;
        if via == Via::Flush {
            let Some(exc) = &exc else {
                return Self::connection_lost(slf, None);
            };
            // A `sendfile()` waiting for the buffer gets the write error.
            let waiter = me.with(py, |st| st.empty_waiter.as_ref().map(|w| w.clone_ref(py)));
            if let Some(waiter) = waiter {
                let waiter = waiter.bind(py);
                if !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
                    waiter.call_method1(intern!(py, "set_exception"), (exc,))?;
                }
            }
        }
        let lost = slf.getattr(intern!(py, "_call_connection_lost"))?;
        me.call_soon(py, (lost, exc).into_pyobject(py)?)?;
        Ok(())
    }

    /// asyncio's `_fatal_error` report, with the pipe rule: a read pipe
    /// keeps quiet about EIO only (a pty's other side closing).
    fn report(slf: &Bound<'_, Self>, exc: &Bound<'_, PyAny>, message: &str) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let event_loop = me.loop_any(py);
        let transport = me.transport(py);
        let protocol = me.protocol(py);
        if me.kind == StreamKind::ReadPipe {
            let eio = exc
                .getattr(intern!(py, "errno"))
                .and_then(|e| e.extract::<i32>())
                .is_ok_and(|e| e == libc::EIO);
            if !eio {
                return protocol::report_to_handler(
                    event_loop,
                    &transport,
                    protocol.as_ref(),
                    exc,
                    message,
                );
            }
        }
        protocol::report_fatal(event_loop, &transport, protocol.as_ref(), exc, message)
    }

    /// A protocol callback raised: asyncio's `_fatal_error` with its
    /// exception (an exit exception leaves the callback).
    fn protocol_failed(slf: &Bound<'_, Self>, err: PyErr, message: &str) -> PyResult<()> {
        let py = slf.py();
        match Failed::of(py, err) {
            Failed::Exit(err) => Err(err),
            Failed::With(err) => {
                let exc = err.into_value(py).into_any();
                Self::report(slf, exc.bind(py), message)?;
                Self::force_close(slf, Some(PyErr::from_value(exc.into_bound(py))))
            }
        }
    }

    /// asyncio's `_force_close`: drop the buffer and lose the connection
    /// with `exc` (unless lost already).
    fn force_close(slf: &Bound<'_, Self>, exc: Option<PyErr>) -> PyResult<()> {
        let py = slf.py();
        let dropped = slf.get().with(py, |st| {
            if st.core.is_closed() {
                return exc;
            }
            st.failure = exc;
            st.core.abort();
            None
        });
        drop(dropped);
        Self::take_events(slf, Via::Call)
    }

    /// `connection_lost(exc)` once, then the fd closed and the references
    /// that make cycles dropped.
    fn connection_lost(slf: &Bound<'_, Self>, exc: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let taken = me.with(py, |st| {
            if st.lost == Lost::Done {
                return None;
            }
            st.lost = Lost::Done;
            let protocol = st.protocol.as_ref().map(|p| p.clone_ref(py));
            Some((protocol, st.transport.as_ref().map(|t| t.clone_ref(py))))
        });
        let Some((protocol, transport)) = taken else {
            return Ok(());
        };
        let result = match &protocol {
            Some(protocol) => protocol
                .bind(py)
                .call_method1(intern!(py, "connection_lost"), (exc,))
                .map(drop),
            None => Ok(()),
        };
        // asyncio's `finally`: whatever the protocol did.
        let finished = Self::finish(slf, transport);
        result.and(finished)
    }

    /// After `connection_lost`: the fd closed (deregistered first), the
    /// transport's own clean-up (its server), a waiting `sendfile()`
    /// failed, and every reference that could keep a cycle alive dropped.
    fn finish(slf: &Bound<'_, Self>, transport: Option<Py<PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let watched = me.with(py, |st| st.watching.take().is_some());
        if watched {
            Loop::io_deregister(me.event_loop.bind(py), me.fd)?;
        }
        let (owner, protocol, callback, waiter, kept) = me.with(py, |st| {
            st.core.close_fd();
            (
                st.owner.take(),
                st.protocol.take(),
                st.data_received.take(),
                st.empty_waiter.take(),
                st.transport.take(),
            )
        });
        let closed = match &owner {
            Some(owner) => owner.bind(py).call_method0(intern!(py, "close")).map(drop),
            None => Ok(()),
        };
        let after = match &transport {
            Some(t) => t
                .bind(py)
                .call_method0(intern!(py, "_after_connection_lost"))
                .map(drop),
            None => Ok(()),
        };
        if let Some(waiter) = &waiter {
            let waiter = waiter.bind(py);
            if !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
                let exc = PyConnectionError::new_err("Connection is closed by peer");
                waiter.call_method1(intern!(py, "set_exception"), (exc.into_value(py),))?;
            }
        }
        drop((owner, protocol, callback, waiter, kept));
        closed.and(after)
    }
}

/// What a batch of core events came from: it decides whether a loss is
/// reported and when `connection_lost` runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    Read,
    /// A write pipe's reader went away.
    Hangup,
    /// Flushing the buffer on writability.
    Flush,
    Write,
    /// `close`, `abort`, a protocol failure.
    Call,
}

/// One read from the core into the thread's buffer, or straight into a new
/// `bytes` when the stream's read sizer says large messages are arriving,
/// as the `bytes` to deliver.
fn read_once<'py>(py: Python<'py>, st: &mut Inner) -> PyResult<Got<'py>> {
    if !st.core.wants_read() {
        return Ok(Got::Nothing);
    }
    if let Some(size) = st.reads.direct() {
        return read_direct(py, st, size);
    }
    let reads = &mut st.reads;
    let core = &mut st.core;
    read_buf::with_read_buffer(|buf| match core.read_into(buf) {
        Ok(ReadInto::Data(n)) => {
            reads.record(n, buf.len());
            Ok(Got::Data(PyBytes::new(py, &buf[..n])))
        }
        Ok(ReadInto::Eof) => Ok(Got::Eof),
        Ok(ReadInto::Done) | Err(_) => Ok(Got::Nothing),
    })
}

/// Read straight into a new `bytes` of `size` bytes (no copy), shrunk in
/// place to what arrived.
fn read_direct<'py>(py: Python<'py>, st: &mut Inner, size: usize) -> PyResult<Got<'py>> {
    let mut fresh = UninitBytes::new(py, size)?;
    let read = st.core.read_into(fresh.as_mut_slice());
    Ok(match read {
        Ok(ReadInto::Data(n)) => {
            st.reads.record(n, size);
            Got::Data(fresh.finish(n)?)
        }
        Ok(ReadInto::Eof) => {
            st.reads.record(0, size);
            Got::Eof
        }
        Ok(ReadInto::Done) | Err(_) => Got::Nothing,
    })
}

/// A transport error as the exception asyncio raises.
fn transport_error(err: &Error) -> PyErr {
    match err {
        Error::InvalidWaterMarks { .. } => PyValueError::new_err(err.to_string()),
        Error::WriteAfterEof | Error::NotWritable => PyRuntimeError::new_err(err.to_string()),
        other => match other.io_error() {
            Some(io) => os_error(io),
            None => PyRuntimeError::new_err(other.to_string()),
        },
    }
}

/// `data argument must be a bytes-like object, not 'str'`.
/// `write()`'s refusal, as asyncio words it for this kind on this version.
fn not_bytes(data: &Bound<'_, PyAny>, kind: StreamKind) -> PyErr {
    let name = data
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    let accepted = if kind == StreamKind::Socket && data.py().version_info() >= (3, 14) {
        "a bytes, bytearray, or memoryview object"
    } else {
        "a bytes-like object"
    };
    PyTypeError::new_err(format!("data argument must be {accepted}, not '{name}'"))
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
            fd,
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
                watching: None,
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
        let py = slf.py();
        let me = slf.get();
        let Some(bytes) = Bytes::of(data) else {
            return Err(not_bytes(data, slf.get().kind));
        };
        if me.kind == StreamKind::Socket {
            let waiting = me.with(py, |st| st.empty_waiter.is_some());
            if waiting {
                return Err(PyRuntimeError::new_err(
                    "unable to write; sendfile is in progress",
                ));
            }
        }
        let slice = bytes.as_slice();
        if slice.is_empty() {
            return Ok(());
        }
        let outcome = me.with(py, |st| st.core.write(slice));
        drop(bytes);
        Self::wrote(slf, outcome)
    }

    /// `writelines(list_of_data)`: one vectored write of them all.
    fn writelines(slf: &Bound<'_, Self>, list_of_data: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let items: Vec<Bound<'_, PyAny>> = list_of_data.try_iter()?.collect::<PyResult<_>>()?;
        let (eof, waiting) = me.with(py, |st| {
            (st.core.eof_requested(), st.empty_waiter.is_some())
        });
        if eof {
            return Err(PyRuntimeError::new_err(
                "Cannot call writelines() after write_eof()",
            ));
        }
        if waiting {
            return Err(PyRuntimeError::new_err(
                "unable to writelines; sendfile is in progress",
            ));
        }
        if items.is_empty() {
            return Ok(());
        }
        let mut views = Vec::with_capacity(items.len());
        for item in &items {
            match Bytes::of(item) {
                Some(bytes) => views.push(bytes),
                None => return Err(not_bytes(item, slf.get().kind)),
            }
        }
        let slices: Vec<&[u8]> = views.iter().map(Bytes::as_slice).collect();
        let outcome = me.with(py, |st| {
            if slices.len() <= loop_transports::write_buf::MAX_IOV {
                st.core.write_vectored(&slices)
            } else {
                st.core.write(&slices.concat())
            }
        });
        drop(slices);
        drop(views);
        Self::wrote(slf, outcome)
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
        self.with(py, |st| {
            let watching = st.watching.unwrap_or(Interest::NONE);
            (watching.readable, watching.writable)
        })
    }

    fn fileno(&self) -> RawFd {
        self.fd
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
            self.fd,
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
