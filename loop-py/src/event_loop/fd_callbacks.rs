//! fd callbacks: `add_reader`/`add_writer` and their removal, on the
//! reactor's generation-keyed registrations.

use super::io_port::IoPort;
use super::Loop;
use crate::call_args::CallArgs;
use crate::errors::to_pyerr;
use crate::handle::{cancel_handle, Handle, NewHandle};
use loop_core::Interest;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

/// Reader and writer callbacks of one fd (asyncio keeps the same pair),
/// and its native owner's port with what it waits for (`io_port`).
#[derive(Default)]
pub(super) struct FdCallbacks {
    pub(super) reader: Option<Py<Handle>>,
    pub(super) writer: Option<Py<Handle>>,
    pub(super) native: Option<(Py<IoPort>, Interest)>,
}

impl FdCallbacks {
    pub(super) fn interest(&self) -> Interest {
        let native = self.native.as_ref().map_or(Interest::NONE, |(_, i)| *i);
        Interest {
            readable: self.reader.is_some() || native.readable,
            writable: self.writer.is_some() || native.writable,
        }
    }
}

/// `selectors._fileobj_to_fd`: an int, or an object with `fileno()`.
pub(super) fn fileobj_to_fd(obj: &Bound<'_, PyAny>) -> PyResult<RawFd> {
    let fd: i64 = match obj.extract::<i64>() {
        Ok(fd) => fd,
        Err(_) => obj
            .call_method0("fileno")
            .and_then(|f| f.extract::<i64>())
            .map_err(|_| {
                let repr = obj.repr().map(|r| r.to_string()).unwrap_or_default();
                PyValueError::new_err(format!("Invalid file object: {repr}"))
            })?,
    };
    if fd < 0 || fd > i64::from(i32::MAX) {
        return Err(PyValueError::new_err(format!(
            "Invalid file descriptor: {fd}"
        )));
    }
    Ok(fd as RawFd)
}

impl Loop {
    /// Set or replace the reader (or writer) of `fd`.
    pub(crate) fn add_fd_callback(
        slf: &Bound<'_, Self>,
        fd: &Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
        write: bool,
    ) -> PyResult<Py<Handle>> {
        Self::add_fd_callback_in(slf, fd, callback, args, write, None)
    }

    /// `add_fd_callback` with the callback run in `context` (by default a
    /// copy of the current one, as asyncio does).
    pub(crate) fn add_fd_callback_in(
        slf: &Bound<'_, Self>,
        fd: &Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
        write: bool,
        context: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<Handle>> {
        let this = slf.get();
        this.check_closed()?;
        let fd = fileobj_to_fd(fd)?;
        let handle = NewHandle {
            callback,
            args: CallArgs::from_tuple(args),
            context,
            event_loop: slf.as_any(),
            debug: this.is_debug(),
            sharing: None,
        }
        .build()?;
        let registered = handle.clone_ref(slf.py());
        let replaced = {
            let mut st = this.state()?;
            match st.reactor.get_mut(fd) {
                Some(source) => {
                    let slot = if write {
                        &mut source.data.writer
                    } else {
                        &mut source.data.reader
                    };
                    let old = slot.replace(handle);
                    let interest = source.data.interest();
                    st.reactor.set_interest(fd, interest).map_err(to_pyerr)?;
                    old
                }
                None => {
                    let callbacks = if write {
                        FdCallbacks {
                            writer: Some(handle),
                            ..Default::default()
                        }
                    } else {
                        FdCallbacks {
                            reader: Some(handle),
                            ..Default::default()
                        }
                    };
                    let interest = callbacks.interest();
                    st.reactor
                        .register(fd, interest, callbacks)
                        .map_err(to_pyerr)?;
                    None
                }
            }
        };
        if let Some(old) = replaced {
            cancel_handle(old.bind(slf.py()))?;
        }
        Ok(registered)
    }

    pub(crate) fn remove_fd_callback(
        slf: &Bound<'_, Self>,
        fd: &Bound<'_, PyAny>,
        write: bool,
    ) -> PyResult<bool> {
        let this = slf.get();
        if this.closed.load(Ordering::Acquire) {
            return Ok(false);
        }
        let fd = fileobj_to_fd(fd)?;
        let (removed, emptied) = {
            let mut st = this.state()?;
            let Some(source) = st.reactor.get_mut(fd) else {
                return Ok(false);
            };
            let removed = if write {
                source.data.writer.take()
            } else {
                source.data.reader.take()
            };
            let interest = source.data.interest();
            // A native owner keeps its registration even while it waits
            // for nothing (a transport lending its socket to sock_sendfile).
            let emptied = if interest.is_empty() && source.data.native.is_none() {
                st.reactor.deregister(fd)
            } else {
                // The fd may be closed already; the kernel forgot it then.
                let _ = st.reactor.set_interest(fd, interest);
                None
            };
            (removed, emptied)
        };
        drop(emptied);
        match removed {
            Some(handle) => {
                cancel_handle(handle.bind(slf.py()))?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
