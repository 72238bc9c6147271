//! The end of a [`StreamTransport`]'s connection, and the core's events
//! that lead there: flow control delivered to the protocol, a lost
//! connection reported as asyncio's `_fatal_error` and a protocol's failure
//! closing it, then `connection_lost` once and the fd released.

use super::{wording, Lost, StreamTransport};
use crate::errors::transport_error;
use crate::transport::protocol::{self, Failed};
use loop_transports::{Error, Op, StreamEvent, StreamKind};
use pyo3::exceptions::PyConnectionError;
use pyo3::intern;
use pyo3::prelude::*;

impl StreamTransport {
    /// Deliver the core's events: flow control, and the connection lost.
    /// Most calls find none (a read or write that changed nothing): that
    /// check stays inline, the delivery does not.
    #[inline]
    pub(super) fn take_events(slf: &Bound<'_, Self>, via: Via) -> PyResult<()> {
        if slf.get().with(slf.py(), |st| st.core.has_events()) {
            Self::deliver_events(slf, via)
        } else {
            Ok(())
        }
    }

    #[inline(never)]
    pub(super) fn deliver_events(slf: &Bound<'_, Self>, via: Via) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        loop {
            let Some(event) = me.with(py, |st| st.core.next_event()) else {
                return Ok(());
            };
            match event {
                StreamEvent::PauseWriting | StreamEvent::ResumeWriting => {
                    let pause = matches!(event, StreamEvent::PauseWriting);
                    if let Some(protocol) = me.protocol(py) {
                        let transport = me.transport(py);
                        protocol::flow_callback(me.loop_any(py), &transport, &protocol, pause)?;
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
    pub(super) fn closed(slf: &Bound<'_, Self>, err: Option<Error>, via: Via) -> PyResult<()> {
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
    pub(super) fn report(
        slf: &Bound<'_, Self>,
        exc: &Bound<'_, PyAny>,
        message: &str,
    ) -> PyResult<()> {
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
    pub(super) fn protocol_failed(
        slf: &Bound<'_, Self>,
        err: PyErr,
        message: &str,
    ) -> PyResult<()> {
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
    pub(super) fn force_close(slf: &Bound<'_, Self>, exc: Option<PyErr>) -> PyResult<()> {
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
    pub(super) fn connection_lost(
        slf: &Bound<'_, Self>,
        exc: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
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
    pub(super) fn finish(slf: &Bound<'_, Self>, transport: Option<Py<PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        me.watch.stop(me.event_loop.bind(py))?;
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
        let released = crate::transport::release(py, owner.as_ref(), transport.as_ref());
        if let Some(waiter) = &waiter {
            let waiter = waiter.bind(py);
            if !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
                let exc = PyConnectionError::new_err("Connection is closed by peer");
                waiter.call_method1(intern!(py, "set_exception"), (exc.into_value(py),))?;
            }
        }
        drop((owner, protocol, callback, waiter, kept));
        released
    }
}

/// What a batch of core events came from: it decides whether a loss is
/// reported and when `connection_lost` runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Via {
    Read,
    /// A write pipe's reader went away.
    Hangup,
    /// Flushing the buffer on writability.
    Flush,
    Write,
    /// `close`, `abort`, a protocol failure.
    Call,
}
