//! The read side of [`StreamTransport`]: one read per readable report
//! (asyncio's), handed to `data_received` or read into a
//! `BufferedProtocol`'s own buffer, and the peer's EOF.

use super::lifecycle::Via;
use super::{Inner, Lost, StreamTransport};
use crate::pyapi;
use crate::transport::bytes::{ByteView, UninitBytes};
use crate::transport::protocol;
use loop_transports::read_buf;
use loop_transports::{ReadInto, StreamKind};
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

/// One read's outcome, taken out of the core before Python runs.
enum Got<'py> {
    Data(Bound<'py, PyBytes>),
    Eof,
    Nothing,
}

impl StreamTransport {
    pub(super) fn on_readable(slf: &Bound<'_, Self>) -> PyResult<()> {
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
