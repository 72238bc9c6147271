//! `DatagramTransport`: asyncio's `_SelectorDatagramTransport` over a
//! [`DatagramCore`], for UDP and Unix datagram sockets, connected or not.
//!
//! A datagram is sent at once when nothing is queued; on `EAGAIN` it is
//! queued whole (counted with asyncio's per-datagram header from 3.13) and
//! sent on writability. Send and receive errors (an ICMP port unreachable
//! surfacing as `ECONNREFUSED`) go to the protocol's `error_received` and
//! the endpoint stays open. Addresses are Python's (`addr`), converted to
//! the kernel's form natively; a host name is resolved as `socket.sendto`
//! would.

use super::addr;
use super::bytes::Bytes;
use super::protocol;
use super::watch::Watch;
use crate::errors::transport_error;
use crate::event_loop::{Loop, Readiness};
use crate::gil_cell::GilCell;
use crate::pyapi;
use loop_core::Interest;
use loop_transports::read_buf;
use loop_transports::{DatagramConfig, DatagramCore, DatagramEvent, IoFd, Recv, Send};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::PyTraverseError;
use socket2::SockAddr;
use std::os::fd::RawFd;

struct Inner {
    core: DatagramCore,
    transport: Option<Py<PyAny>>,
    protocol: Option<Py<PyAny>>,
    /// The socket, closed once the protocol heard of the loss.
    owner: Option<Py<PyAny>>,
    /// The remote address given at creation (asyncio's `_address`).
    address: Option<Py<PyAny>>,
    reading: bool,
    paused: bool,
    failure: Option<PyErr>,
    /// `connection_lost` is scheduled (or ran: `finished`).
    lost: bool,
    finished: bool,
}

#[pyclass(frozen, module = "ferroloop._native")]
pub(crate) struct DatagramTransport {
    watch: Watch,
    family: i32,
    /// Sends of empty datagrams are dropped (asyncio before 3.13).
    drop_empty: bool,
    event_loop: Py<Loop>,
    inner: GilCell<Inner>,
}

impl DatagramTransport {
    fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut Inner) -> R) -> R {
        self.inner.with(py, f)
    }

    fn loop_any<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        self.event_loop.bind(py).as_any()
    }

    fn transport<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.with(py, |st| st.transport.as_ref().map(|t| t.clone_ref(py)))
            .map_or_else(|| py.None().into_bound(py), |t| t.into_bound(py))
    }

    fn protocol<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.with(py, |st| st.protocol.as_ref().map(|p| p.clone_ref(py)))
            .map(|p| p.into_bound(py))
    }

    fn dispatch(target: &Bound<'_, PyAny>, _token: usize, ready: Readiness) -> PyResult<()> {
        // SAFETY: ports of this dispatch are registered with a
        // `DatagramTransport` as target (`new`'s `Watch`).
        let slf = unsafe { target.cast_unchecked::<DatagramTransport>() };
        if ready.readable {
            Self::on_readable(slf)?;
        }
        if ready.writable {
            slf.get().with(slf.py(), |st| st.core.on_writable());
            Self::take_events(slf, true)?;
        }
        Self::sync_interest(slf)
    }

    fn sync_interest(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let wanted = me.with(py, |st| {
            let mut wanted = if st.lost {
                Interest::NONE
            } else {
                st.core.interest()
            };
            wanted.readable &= st.reading && !st.paused;
            wanted
        });
        me.watch.set(me.event_loop.bind(py), slf.as_any(), wanted)
    }

    /// One receive (asyncio's one `recvfrom` per readiness event).
    fn on_readable(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let got = me.with(py, |st| {
            if st.lost || st.core.conn_lost() > 0 {
                return Ok(None);
            }
            st.core.begin_read_event();
            read_buf::with_read_buffer(|buf| match st.core.recv_into(buf) {
                Recv::Datagram(n, from) => Ok(Some(Ok((PyBytes::new(py, &buf[..n]), from)))),
                Recv::Error(err) => Ok(Some(Err(err))),
                Recv::Done => Ok::<_, PyErr>(None),
            })
        })?;
        let Some(protocol) = me.protocol(py) else {
            return Ok(());
        };
        match got {
            None => Ok(()),
            Some(Ok((data, from))) => {
                let from = addr::to_python(py, &from)?;
                protocol
                    .call_method1(intern!(py, "datagram_received"), (data, from))
                    .map(drop)
            }
            Some(Err(err)) => {
                let exc = transport_error(&err).into_value(py);
                protocol
                    .call_method1(intern!(py, "error_received"), (exc,))
                    .map(drop)
            }
        }
    }

    /// The core's events: send errors, flow control, the loss (`flushed`:
    /// the queue drained on writability, which ends a pending close at
    /// once, as asyncio's `_sendto_ready`).
    fn take_events(slf: &Bound<'_, Self>, flushed: bool) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        loop {
            let Some(event) = me.with(py, |st| st.core.next_event()) else {
                return Ok(());
            };
            match event {
                DatagramEvent::ErrorReceived(err) => {
                    if let Some(protocol) = me.protocol(py) {
                        let exc = transport_error(&err).into_value(py);
                        protocol.call_method1(intern!(py, "error_received"), (exc,))?;
                    }
                }
                DatagramEvent::PauseWriting | DatagramEvent::ResumeWriting => {
                    let pause = matches!(event, DatagramEvent::PauseWriting);
                    if let Some(protocol) = me.protocol(py) {
                        let transport = me.transport(py);
                        protocol::flow_callback(me.loop_any(py), &transport, &protocol, pause)?;
                    }
                }
                DatagramEvent::Closed(err) => {
                    let failure = me.with(py, |st| {
                        st.lost = true;
                        st.failure.take()
                    });
                    let exc = match (failure, err) {
                        (Some(failure), _) => Some(failure.into_value(py).into_any()),
                        (None, Some(err)) => Some(transport_error(&err).into_value(py).into_any()),
                        (None, None) => None,
                    };
                    Self::sync_interest(slf)?;
                    if flushed && exc.is_none() {
                        Self::connection_lost(slf, None)?;
                    } else {
                        let lost = slf.getattr(intern!(py, "_call_connection_lost"))?;
                        me.loop_any(py)
                            .call_method1(intern!(py, "call_soon"), (lost, exc))?;
                    }
                }
            }
        }
    }

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
        Self::take_events(slf, false)?;
        Self::sync_interest(slf)
    }

    fn connection_lost(slf: &Bound<'_, Self>, exc: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let protocol = me.with(py, |st| {
            if st.finished {
                return None;
            }
            st.finished = true;
            Some(st.protocol.as_ref().map(|p| p.clone_ref(py)))
        });
        let Some(protocol) = protocol else {
            return Ok(());
        };
        let result = match &protocol {
            Some(p) => p
                .bind(py)
                .call_method1(intern!(py, "connection_lost"), (exc,))
                .map(drop),
            None => Ok(()),
        };
        me.watch.stop(me.event_loop.bind(py))?;
        let taken = me.with(py, |st| {
            st.core.close_fd();
            (st.owner.take(), st.protocol.take(), st.transport.take())
        });
        let released = super::release(py, taken.0.as_ref(), taken.2.as_ref());
        drop((taken, protocol));
        result.and(released)
    }

    /// The destination of a `sendto`, checked against the connected
    /// address as asyncio checks it.
    fn destination(
        slf: &Bound<'_, Self>,
        to: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Option<SockAddr>> {
        let py = slf.py();
        let me = slf.get();
        let address = me.with(py, |st| st.address.as_ref().map(|a| a.clone_ref(py)));
        let to = match (address, to) {
            (Some(address), to) => {
                let address = address.into_bound(py);
                if let Some(to) = to {
                    if !to.eq(&address)? {
                        return Err(PyValueError::new_err(format!(
                            "Invalid address: must be None or {}",
                            address.str()?
                        )));
                    }
                }
                // Sent with send() when connected (the core ignores the
                // address then); else to the given remote address.
                Some(address)
            }
            (None, to) => to,
        };
        let Some(to) = to else {
            return Ok(None);
        };
        if let Some(native) = addr::from_python(me.family, &to)? {
            return Ok(Some(native));
        }
        // A host name: resolved as socket.sendto resolves it.
        let resolved = py.import(intern!(py, "socket"))?.call_method1(
            intern!(py, "getaddrinfo"),
            (
                to.get_item(0)?,
                to.get_item(1)?,
                me.family,
                libc::SOCK_DGRAM,
            ),
        )?;
        let first = resolved.get_item(0)?.get_item(4)?;
        addr::from_python(me.family, &first)?
            .map(Some)
            .ok_or_else(|| PyValueError::new_err("getaddrinfo() returned a name"))
    }
}

#[pymethods]
impl DatagramTransport {
    /// `DatagramTransport(loop, transport, sock, protocol, address,
    /// header_size, drop_empty)`.
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        event_loop: Bound<'_, Loop>,
        transport: Bound<'_, PyAny>,
        sock: Bound<'_, PyAny>,
        protocol: Bound<'_, PyAny>,
        address: Option<Bound<'_, PyAny>>,
        header_size: usize,
        drop_empty: bool,
    ) -> PyResult<Self> {
        let fd: RawFd = sock.call_method0(intern!(py, "fileno"))?.extract()?;
        let family: i32 = sock.getattr(intern!(py, "family"))?.extract()?;
        if !addr::supported(family) {
            return Err(PyValueError::new_err(format!(
                "datagram endpoints on address family {family} are not supported by ferroloop \
                 (AF_INET, AF_INET6 and AF_UNIX are)"
            )));
        }
        let config = DatagramConfig {
            // asyncio receives once per readiness event.
            recvs_per_event: 1,
            header_size,
            ..DatagramConfig::default()
        };
        // SAFETY: the socket object (kept as `owner`) closes the fd only in
        // `connection_lost`, after the core let go of it (`close_fd`).
        let io = unsafe { IoFd::borrow_raw(fd) };
        let core = DatagramCore::new(io, &config).map_err(|e| transport_error(&e))?;
        Ok(DatagramTransport {
            watch: Watch::new(fd, Self::dispatch),
            family,
            drop_empty,
            event_loop: event_loop.unbind(),
            inner: GilCell::new(Inner {
                core,
                transport: Some(transport.unbind()),
                protocol: Some(protocol.unbind()),
                owner: Some(sock.unbind()),
                address: address.filter(|a| !a.is_none()).map(Bound::unbind),
                reading: false,
                paused: false,
                failure: None,
                lost: false,
                finished: false,
            }),
        })
    }

    fn _start(slf: &Bound<'_, Self>) -> PyResult<()> {
        slf.get().with(slf.py(), |st| st.reading = true);
        Self::sync_interest(slf)
    }

    #[pyo3(signature = (data, addr = None))]
    fn sendto(
        slf: &Bound<'_, Self>,
        data: &Bound<'_, PyAny>,
        addr: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let Some(bytes) = Bytes::of(data) else {
            let name = data.get_type().name()?;
            return Err(PyTypeError::new_err(format!(
                "data argument must be a bytes-like object, not '{name}'"
            )));
        };
        if me.drop_empty && bytes.as_slice().is_empty() {
            return Ok(());
        }
        let to = match Self::destination(slf, addr.filter(|a| !a.is_none())) {
            Ok(to) => to,
            // An address that does not resolve is the send's error, as
            // asyncio's sock.sendto raising gaierror.
            Err(err) if err.is_instance_of::<pyo3::exceptions::PyOSError>(py) => {
                if let Some(protocol) = me.protocol(py) {
                    protocol.call_method1(intern!(py, "error_received"), (err.into_value(py),))?;
                }
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        let outcome = me.with(py, |st| st.core.send_to(bytes.as_slice(), to.as_ref()));
        drop(bytes);
        match outcome.map_err(|e| transport_error(&e))? {
            Send::Accepted => {}
            Send::Ignored { warn, .. } => {
                if warn {
                    pyapi::asyncio_logger(py)?
                        .call_method1("warning", ("socket.send() raised exception.",))?;
                }
                return Ok(());
            }
        }
        Self::take_events(slf, false)?;
        Self::sync_interest(slf)
    }

    fn close(slf: &Bound<'_, Self>) -> PyResult<()> {
        slf.get().with(slf.py(), |st| st.core.close());
        Self::take_events(slf, false)?;
        Self::sync_interest(slf)
    }

    fn abort(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::force_close(slf, None)
    }

    #[pyo3(name = "_force_close")]
    fn force_close_py(slf: &Bound<'_, Self>, exc: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let exc = exc.filter(|e| !e.is_none()).map(PyErr::from_value);
        Self::force_close(slf, exc)
    }

    #[pyo3(signature = (exc, message = "Fatal error on transport"))]
    fn _fatal_error(slf: &Bound<'_, Self>, exc: Bound<'_, PyAny>, message: &str) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let protocol = me.protocol(py);
        protocol::report_fatal(
            me.loop_any(py),
            &me.transport(py),
            protocol.as_ref(),
            &exc,
            message,
        )?;
        Self::force_close(slf, Some(PyErr::from_value(exc)))
    }

    fn is_closing(&self, py: Python<'_>) -> bool {
        self.with(py, |st| st.core.is_closing())
    }

    fn is_reading(&self, py: Python<'_>) -> bool {
        self.with(py, |st| !st.paused && !st.core.is_closing())
    }

    fn pause_reading(slf: &Bound<'_, Self>) -> PyResult<()> {
        let changed = slf.get().with(slf.py(), |st| {
            let was = !st.paused && !st.core.is_closing();
            st.paused |= was;
            was
        });
        if changed {
            Self::sync_interest(slf)?;
        }
        Ok(())
    }

    fn resume_reading(slf: &Bound<'_, Self>) -> PyResult<()> {
        let changed = slf.get().with(slf.py(), |st| {
            let resume = st.paused && !st.core.is_closing();
            st.paused &= !resume;
            resume
        });
        if changed {
            Self::sync_interest(slf)?;
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
        let outcome = slf
            .get()
            .with(slf.py(), |st| st.core.set_write_buffer_limits(high, low));
        outcome.map_err(|e| transport_error(&e))?;
        Self::take_events(slf, false)
    }

    fn set_protocol(&self, py: Python<'_>, protocol: Bound<'_, PyAny>) {
        let old = self.with(py, |st| st.protocol.replace(protocol.unbind()));
        drop(old);
    }

    fn get_protocol(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.with(py, |st| st.protocol.as_ref().map(|p| p.clone_ref(py)))
    }

    fn _call_connection_lost(slf: &Bound<'_, Self>, exc: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        Self::connection_lost(slf, exc.filter(|e| !e.is_none()))
    }

    #[getter]
    fn _conn_lost(&self, py: Python<'_>) -> u32 {
        self.with(py, |st| st.core.conn_lost())
    }

    #[getter]
    fn _finished(&self, py: Python<'_>) -> bool {
        self.with(py, |st| st.finished)
    }

    /// `(reading, writing)` watched for now.
    #[getter]
    fn _polling(&self, py: Python<'_>) -> (bool, bool) {
        self.watch.polling(py)
    }

    fn fileno(&self) -> RawFd {
        self.watch.fd()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.event_loop)?;
        // SAFETY: called from `__traverse__`; the closure only visits.
        let visited = unsafe {
            self.inner.with_in_gc(|st| {
                visit.call(&st.transport)?;
                visit.call(&st.protocol)?;
                visit.call(&st.owner)?;
                visit.call(&st.address)
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
                .with_in_gc(|st| (st.transport.take(), st.protocol.take(), st.address.take()))
        };
        drop(taken);
    }
}
