//! `Channel`: multiloop's channel, safe across loops and threads.
//!
//! One FIFO buffer (`maxsize=0`: unbounded) shared by tasks on any loops
//! and by plain threads: `send`/`recv` are native awaitables
//! ([`WaitOp`]), `send_sync`/`recv_sync` block a thread with the
//! interpreter detached, `try_send`/`try_recv` never wait. Waiters are
//! served in order, through the two-phase hand-off of [`state`]; a waiter on
//! another loop or thread is woken as [`waiter`](crate::toolkit::waiter)
//! says. `recv_op()`/`send_op(x)` describe operations for
//! [`select`](ops) (Go's select; multiloop's `select_channel`).
//!
//! - [`state`]: the buffer, the waiting lists and the hand-off, no Python.
//! - [`ops`]: operations and selects as a [`WaitBody`](crate::toolkit::wait::WaitBody).

mod ops;
mod state;

use crate::pyapi;
use crate::toolkit::wait::{wait_blocking, WaitOp};
use crate::toolkit::waiter::wake_all;
use ops::{ChanOp, ChannelWait, Kind, Mode, Ops};
use pyo3::exceptions::PyValueError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::PyTraverseError;
use state::{ChannelState, Closed, Woken};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

const CLOSED_MESSAGE: &str = "Channel is closed";

/// The channel behind a `Channel` object and its operations.
pub struct Shared {
    state: Mutex<ChannelState<Py<PyAny>>>,
    maxsize: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ChannelState<Py<PyAny>>> {
        // No code runs under the lock that could leave it half-changed.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn closed_error(py: Python<'_>) -> PyResult<PyErr> {
    Ok(PyErr::from_type(
        pyapi::toolkit_channel_closed(py)?.cast::<PyType>()?.clone(),
        CLOSED_MESSAGE,
    ))
}

/// The native half of `ferroloop.toolkit.Channel`.
#[pyclass(module = "ferroloop._native", subclass, frozen)]
pub struct ChannelCore {
    shared: Arc<Shared>,
}

impl ChannelCore {
    fn single(
        slf: &Bound<'_, Self>,
        kind: Kind,
        iterating: bool,
        what: &'static str,
    ) -> ChannelWait {
        ChannelWait {
            ops: Ops::One(ChanOp {
                chan: Arc::clone(&slf.get().shared),
                kind,
                label: None,
            }),
            mode: Mode::Single,
            default: None,
            iterating,
            what,
        }
    }

    /// `op` as an awaitable, within `timeout` seconds when one is given.
    fn awaitable<'py>(
        py: Python<'py>,
        op: WaitOp,
        timeout: Option<f64>,
        timed_out: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let op = Bound::new(py, op)?.into_any();
        match timeout {
            None => Ok(op),
            Some(t) => pyapi::toolkit_within(py)?.call1((op, t, timed_out)),
        }
    }
}

#[pymethods]
impl ChannelCore {
    /// Arguments are `__init__`'s: `maxsize` (0, the default: unbounded).
    #[new]
    #[pyo3(signature = (maxsize = None, *_args, **_kwargs))]
    fn new(
        maxsize: Option<&Bound<'_, PyAny>>,
        _args: &Bound<'_, PyTuple>,
        _kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let maxsize: i64 = match maxsize {
            Some(m) => m
                .extract()
                .map_err(|_| PyValueError::new_err("maxsize must be an integer"))?,
            None => 0,
        };
        let maxsize = usize::try_from(maxsize.max(0))
            .map_err(|_| PyValueError::new_err("maxsize is too large"))?;
        Ok(ChannelCore {
            shared: Arc::new(Shared {
                state: Mutex::new(ChannelState::new(maxsize)),
                maxsize,
            }),
        })
    }

    /// Close the channel: sends fail with ChannelClosedError; receives
    /// drain what is buffered, then fail. Waiting senders and receivers
    /// wake to see it. Idempotent.
    fn close(&self, py: Python<'_>) {
        let mut woken = Woken::new();
        self.shared.lock().close(&mut woken);
        wake_all(py, woken);
    }

    #[getter]
    fn is_closed(&self) -> bool {
        self.shared.lock().is_closed()
    }

    /// The capacity (0: unbounded).
    #[getter]
    fn maxsize(&self) -> usize {
        self.shared.maxsize
    }

    /// Items buffered (including those promised to woken receivers).
    fn qsize(&self) -> usize {
        self.shared.lock().len()
    }

    fn empty(&self) -> bool {
        self.shared.lock().len() == 0
    }

    fn full(&self) -> bool {
        self.shared.lock().is_full()
    }

    /// Send without waiting: True if sent, False if there is no room (or
    /// a sender waits before it). ChannelClosedError once closed.
    fn try_send(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<bool> {
        let mut woken = Woken::new();
        let sent = self.shared.lock().try_send(item, &mut woken);
        wake_all(py, woken);
        match sent {
            Ok(Ok(())) => Ok(true),
            // Dropped here, after the lock.
            Ok(Err(_item)) => Ok(false),
            Err(Closed) => Err(closed_error(py)?),
        }
    }

    /// Receive without waiting: the item, WouldBlock if none is free,
    /// ChannelClosedError once closed and drained.
    fn try_recv(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let mut woken = Woken::new();
        let got = self.shared.lock().try_recv(&mut woken);
        wake_all(py, woken);
        match got {
            Ok(Some(item)) => Ok(item),
            Ok(None) => Err(PyErr::from_type(
                pyapi::toolkit_would_block(py)?.cast::<PyType>()?.clone(),
                "Channel is empty",
            )),
            Err(Closed) => Err(closed_error(py)?),
        }
    }

    /// Send, waiting for room (at most `timeout` seconds: TimeoutError).
    #[pyo3(signature = (item, timeout = None))]
    fn send<'py>(
        slf: &Bound<'py, Self>,
        item: Py<PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = Self::single(
            slf,
            Kind::Send(Mutex::new(Some(item))),
            false,
            "Channel.send",
        );
        Self::awaitable(slf.py(), WaitOp::new(wait), timeout, "send timed out")
    }

    /// Receive, waiting for an item (at most `timeout` seconds).
    #[pyo3(signature = (timeout = None))]
    fn recv<'py>(slf: &Bound<'py, Self>, timeout: Option<f64>) -> PyResult<Bound<'py, PyAny>> {
        let wait = Self::single(slf, Kind::Recv, false, "Channel.recv");
        Self::awaitable(slf.py(), WaitOp::new(wait), timeout, "recv timed out")
    }

    /// Send from a plain thread, blocking (interpreter detached).
    #[pyo3(signature = (item, timeout = None))]
    fn send_sync(slf: &Bound<'_, Self>, item: Py<PyAny>, timeout: Option<f64>) -> PyResult<()> {
        let wait = Self::single(
            slf,
            Kind::Send(Mutex::new(Some(item))),
            false,
            "Channel.send_sync",
        );
        wait_blocking(slf.py(), &wait, timeout, "send_sync timed out").map(drop)
    }

    /// Receive on a plain thread, blocking (interpreter detached).
    #[pyo3(signature = (timeout = None))]
    fn recv_sync(slf: &Bound<'_, Self>, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        let wait = Self::single(slf, Kind::Recv, false, "Channel.recv_sync");
        wait_blocking(slf.py(), &wait, timeout, "recv_sync timed out")
    }

    /// A receive, for `ferroloop.select`.
    fn recv_op(slf: &Bound<'_, Self>) -> ChannelOp {
        ChannelOp {
            shared: Arc::clone(&slf.get().shared),
            channel: slf.clone().into_any().unbind(),
            item: None,
        }
    }

    /// A send of `item`, for `ferroloop.select`.
    fn send_op(slf: &Bound<'_, Self>, item: Py<PyAny>) -> ChannelOp {
        ChannelOp {
            shared: Arc::clone(&slf.get().shared),
            channel: slf.clone().into_any().unbind(),
            item: Some(item),
        }
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next item; the iteration ends once closed and drained.
    fn __anext__(slf: &Bound<'_, Self>) -> PyResult<WaitOp> {
        Ok(WaitOp::new(Self::single(
            slf,
            Kind::Recv,
            true,
            "Channel.__anext__",
        )))
    }

    /// `(receivers, senders, select entries)` waiting now.
    fn _waiting(&self) -> (usize, usize, usize) {
        self.shared.lock().waiting()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        let Ok(st) = self.shared.state.try_lock() else {
            return Ok(());
        };
        // Only the items: a registered waiter is visited by its one
        // owning awaitable (see `Waiter::traverse`).
        for item in st.items() {
            visit.call(item)?;
        }
        Ok(())
    }
}

/// `ch.recv_op()` / `ch.send_op(x)`: an operation for `select`.
#[pyclass(module = "ferroloop._native", frozen)]
pub struct ChannelOp {
    shared: Arc<Shared>,
    channel: Py<PyAny>,
    item: Option<Py<PyAny>>,
}

#[pymethods]
impl ChannelOp {
    /// The channel it operates on.
    #[getter]
    fn channel(&self, py: Python<'_>) -> Py<PyAny> {
        self.channel.clone_ref(py)
    }

    /// True for `send_op`.
    #[getter]
    fn is_send(&self) -> bool {
        self.item.is_some()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(match &self.item {
            Some(item) => format!("<send_op({})>", item.bind(py).repr()?),
            None => "<recv_op()>".to_owned(),
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.channel)?;
        visit.call(&self.item)
    }
}

/// `await select(*ops, default=...)`: Go's select (see [`ops`]). Returns
/// `(op, value)` (value None for a send), or `default` when given and no
/// operation is ready.
#[pyfunction]
#[pyo3(signature = (*ops, **kwargs))]
pub fn select<'py>(
    ops: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<WaitOp> {
    let py = ops.py();
    let mut default = None;
    if let Some(kw) = kwargs {
        for (key, value) in kw.iter() {
            if key.extract::<&str>()? == "default" {
                default = Some(value.unbind());
            } else {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "select() got an unexpected keyword argument {}",
                    key.repr()?
                )));
            }
        }
    }
    if ops.is_empty() {
        return Err(PyValueError::new_err(
            "select() needs at least one operation",
        ));
    }
    let mut chan_ops = Vec::with_capacity(ops.len());
    for op in ops.iter() {
        let desc = op.cast::<ChannelOp>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(
                "select() takes channel operations: ch.recv_op() or ch.send_op(item)",
            )
        })?;
        let d = desc.get();
        chan_ops.push(ChanOp {
            chan: Arc::clone(&d.shared),
            kind: match &d.item {
                Some(item) => Kind::Send(Mutex::new(Some(item.clone_ref(py)))),
                None => Kind::Recv,
            },
            label: Some(op.clone().unbind()),
        });
    }
    Ok(WaitOp::new(ChannelWait {
        ops: Ops::Many(chan_ops),
        mode: Mode::Select,
        default,
        iterating: false,
        what: "select",
    }))
}

/// multiloop's `select_channel` without its timeout (added in Python):
/// receive from the first ready channel, `(channel, value)`; `default`
/// (at most one, any value) when none is ready.
#[pyfunction]
#[pyo3(signature = (channels, *default))]
pub fn _select_recv(
    channels: &Bound<'_, PyTuple>,
    default: &Bound<'_, PyTuple>,
) -> PyResult<WaitOp> {
    let default = match default.len() {
        0 => None,
        1 => Some(default.get_item(0)?.unbind()),
        _ => {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "one default at most",
            ))
        }
    };
    let mut ops = Vec::with_capacity(channels.len());
    for ch in channels.iter() {
        let core = ch.cast::<ChannelCore>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("select_channel() takes Channel objects")
        })?;
        ops.push(ChanOp {
            chan: Arc::clone(&core.get().shared),
            kind: Kind::Recv,
            label: Some(ch.clone().unbind()),
        });
    }
    if ops.is_empty() {
        return Err(PyValueError::new_err(
            "select_channel requires at least one channel",
        ));
    }
    Ok(WaitOp::new(ChannelWait {
        ops: Ops::Many(ops),
        mode: Mode::SelectChannel,
        default,
        iterating: false,
        what: "select_channel",
    }))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChannelCore>()?;
    m.add_class::<ChannelOp>()?;
    m.add_function(wrap_pyfunction!(select, m)?)?;
    m.add_function(wrap_pyfunction!(_select_recv, m)?)?;
    Ok(())
}
