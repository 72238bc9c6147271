//! Native readiness: an fd owned by a native component (a transport, a
//! listener, a server connection) is registered with the reactor through an
//! [`IoPort`], and its readiness reaches the component's Rust code with no
//! Python call in between.
//!
//! The tick queues the port in the ready queue, in the place asyncio puts a
//! transport's `_read_ready`/`_write_ready` handles: a port's events run
//! after the callbacks queued before the poll and before the due timers,
//! exactly as selector transports' do. A port is queued once per tick with
//! the union of what was reported (readable first, then writable, as the
//! selector loop queues a reader before a writer). Its code runs in the
//! `contextvars` context current when it was registered (a copy, as an fd
//! handle's), and re-checks its own state: a port whose owner stopped
//! reading after it was queued simply finds nothing to do.

use super::Loop;
use crate::errors::to_pyerr;
use crate::pyapi;
use loop_core::Interest;
use pyo3::exceptions::{PyKeyboardInterrupt, PySystemExit};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::PyTraverseError;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// What the poller reported for a port's fd.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Readiness {
    pub readable: bool,
    pub writable: bool,
}

const READABLE: u8 = 1;
const WRITABLE: u8 = 2;

impl Readiness {
    fn bits(self) -> u8 {
        (u8::from(self.readable) * READABLE) | (u8::from(self.writable) * WRITABLE)
    }

    fn from_bits(bits: u8) -> Self {
        Readiness {
            readable: bits & READABLE != 0,
            writable: bits & WRITABLE != 0,
        }
    }
}

/// The owner's code for its fd's readiness. `target` is the owner object
/// the port was registered with, and the `usize` the token it gave (one
/// owner may hold many fds: the server's connections). Errors other than
/// `KeyboardInterrupt` and `SystemExit` are the owner's to report; one
/// that escapes is reported by the loop as an exception in a callback.
pub(crate) type Dispatch = fn(&Bound<'_, PyAny>, usize, Readiness) -> PyResult<()>;

/// One native registration: the owner, its code, its context.
#[pyclass(frozen, module = "ferroloop._native")]
pub(crate) struct IoPort {
    target: Py<PyAny>,
    token: usize,
    dispatch: Dispatch,
    context: Py<PyAny>,
    /// Reported and not yet run.
    pending: AtomicU8,
    /// In the ready queue now (a second report only adds to `pending`).
    queued: AtomicBool,
}

impl IoPort {
    /// Note a report; true when the port must be queued (it was not).
    pub(super) fn report(&self, ready: Readiness) -> bool {
        self.pending.fetch_or(ready.bits(), Ordering::Relaxed);
        !self.queued.swap(true, Ordering::Relaxed)
    }

    /// Run the owner's code for what was reported since it was queued, on
    /// `event_loop` (whose exception handler hears of an escaped error).
    pub(crate) fn run(slf: &Bound<'_, Self>, event_loop: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        me.queued.store(false, Ordering::Relaxed);
        let ready = Readiness::from_bits(me.pending.swap(0, Ordering::Relaxed));
        if ready == Readiness::default() {
            return Ok(());
        }
        let target = me.target.bind(py);
        let outcome = pyapi::with_context(me.context.bind(py), || {
            (me.dispatch)(target, me.token, ready)
        });
        match outcome {
            Ok(()) => Ok(()),
            Err(err)
                if err.is_instance_of::<PyKeyboardInterrupt>(py)
                    || err.is_instance_of::<PySystemExit>(py) =>
            {
                Err(err)
            }
            Err(err) => report_escaped(event_loop, target, err),
        }
    }
}

/// An error the owner did not handle: the loop's exception handler hears of
/// it, as of an exception in a callback.
#[cold]
fn report_escaped(
    event_loop: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    err: PyErr,
) -> PyResult<()> {
    let py = target.py();
    let context = PyDict::new(py);
    context.set_item(
        "message",
        format!("Exception in I/O callback of {}", target.repr()?),
    )?;
    context.set_item("exception", err.into_value(py))?;
    event_loop.call_method1("call_exception_handler", (context,))?;
    Ok(())
}

#[pymethods]
impl IoPort {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.target)?;
        visit.call(&self.context)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let target = self
            .target
            .bind(py)
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_default();
        format!("<IoPort of {target}>")
    }
}

impl Loop {
    /// Register `fd` for a native owner: `dispatch(target, token,
    /// readiness)` runs when it is ready for `interest` (replacing an
    /// earlier native registration of the fd; fd callbacks of
    /// `add_reader`/`add_writer` stay).
    pub(crate) fn io_register(
        slf: &Bound<'_, Self>,
        fd: RawFd,
        target: &Bound<'_, PyAny>,
        token: usize,
        dispatch: Dispatch,
        interest: Interest,
    ) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        this.check_closed()?;
        let port = Py::new(
            py,
            IoPort {
                target: target.clone().unbind(),
                token,
                dispatch,
                context: pyapi::copy_current_context(py)?.unbind(),
                pending: AtomicU8::new(0),
                queued: AtomicBool::new(false),
            },
        )?;
        let replaced = {
            let mut st = this.state()?;
            match st.reactor.get_mut(fd) {
                Some(source) => {
                    let old = source.data.native.replace((port, interest));
                    let all = source.data.interest();
                    st.reactor.set_interest(fd, all).map_err(to_pyerr)?;
                    old
                }
                None => {
                    let callbacks = super::fd_callbacks::FdCallbacks {
                        native: Some((port, interest)),
                        ..Default::default()
                    };
                    st.reactor
                        .register(fd, interest, callbacks)
                        .map_err(to_pyerr)?;
                    None
                }
            }
        };
        drop(replaced);
        Ok(())
    }

    /// What a native owner of `fd` waits for now. Unchanged interest costs
    /// no syscall.
    pub(crate) fn io_set_interest(
        slf: &Bound<'_, Self>,
        fd: RawFd,
        interest: Interest,
    ) -> PyResult<()> {
        let this = slf.get();
        let mut st = this.state()?;
        let Some(source) = st.reactor.get_mut(fd) else {
            return Ok(());
        };
        let Some((_, wanted)) = source.data.native.as_mut() else {
            return Ok(());
        };
        if *wanted == interest {
            return Ok(());
        }
        *wanted = interest;
        let all = source.data.interest();
        // The fd may be closed already; the kernel forgot it then.
        let _ = st.reactor.set_interest(fd, all);
        Ok(())
    }

    /// The native owner lets go of `fd` (before closing it). fd callbacks
    /// of `add_reader`/`add_writer`, if any, stay.
    pub(crate) fn io_deregister(slf: &Bound<'_, Self>, fd: RawFd) -> PyResult<()> {
        let this = slf.get();
        if this.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        let (port, emptied) = {
            let mut st = this.state()?;
            let Some(source) = st.reactor.get_mut(fd) else {
                return Ok(());
            };
            let port = source.data.native.take();
            let interest = source.data.interest();
            let emptied = if interest.is_empty() {
                st.reactor.deregister(fd)
            } else {
                let _ = st.reactor.set_interest(fd, interest);
                None
            };
            (port, emptied)
        };
        // Dropped with no loop state borrowed: the owner may go with them.
        drop(port);
        drop(emptied);
        Ok(())
    }
}
