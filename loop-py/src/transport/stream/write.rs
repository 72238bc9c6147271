//! The write side of [`StreamTransport`]: `write`/`writelines` (written
//! now as far as the fd takes it, the rest buffered by the core), a write's
//! outcome, and flushing the buffer on writability.

use super::lifecycle::Via;
use super::{wording, Lost, StreamTransport};
use crate::errors::transport_error;
use crate::pyapi;
use crate::transport::bytes::Bytes;
use loop_transports::{Error, StreamKind, Write};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;

impl StreamTransport {
    /// `write(data)`: written now as far as the socket takes it, the rest
    /// buffered.
    #[inline]
    pub(super) fn write_data(slf: &Bound<'_, Self>, data: &Bound<'_, PyAny>) -> PyResult<()> {
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
    pub(super) fn write_lines(
        slf: &Bound<'_, Self>,
        list_of_data: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
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

    pub(super) fn on_writable(slf: &Bound<'_, Self>) -> PyResult<()> {
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
