//! Channel operations as a [`WaitBody`]: one `send`/`recv`, or a `select`
//! over several (Go's, and multiloop's `select_channel`).
//!
//! A `select` probes its operations in a random order (a fresh shuffle per
//! try, so every ready operation is equally likely to be picked), completes
//! the first that can, and otherwise registers one waiter on every channel
//! involved. The first channel to grant it wins; the others find it no
//! longer pending and drop its entry, with no effect on them. An operation
//! found ready while registering the rest is completed only after the
//! waiter withdraws itself from the channels already registered with (a
//! compare-and-swap that fails if one of them granted it first).

use super::state::{Closed, Entry, Woken};
use super::Shared;
use crate::toolkit::wait::{Attempt, WaitBody};
use crate::toolkit::waiter::{wake_all, Outcome, Waiter};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::PyTraverseError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// What an operation does.
pub enum Kind {
    Recv,
    /// The item, until it is in the channel.
    Send(Mutex<Option<Py<PyAny>>>),
}

/// One operation on one channel.
pub struct ChanOp {
    pub chan: Arc<Shared>,
    pub kind: Kind,
    /// What a `select` returns for it (the op object, or the channel).
    pub label: Option<Py<PyAny>>,
}

impl ChanOp {
    fn take_item(&self) -> Option<Py<PyAny>> {
        match &self.kind {
            Kind::Send(item) => item.lock().unwrap_or_else(PoisonError::into_inner).take(),
            Kind::Recv => None,
        }
    }

    fn put_back(&self, item: Py<PyAny>) {
        if let Kind::Send(slot) = &self.kind {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(item);
        }
    }
}

/// How a wait treats its operations and what it returns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One operation: its value.
    Single,
    /// Go's select: `(label, value)`; an op on a closed channel completes
    /// by raising `ChannelClosedError`.
    Select,
    /// multiloop's `select_channel`: receives only, `(label, value)`;
    /// closed and drained channels are skipped until all of them are.
    SelectChannel,
}

/// A wait's operations: usually one (`send`, `recv`), kept without a
/// separate allocation.
pub enum Ops {
    One(ChanOp),
    Many(Vec<ChanOp>),
}

pub struct ChannelWait {
    pub ops: Ops,
    pub mode: Mode,
    /// `select(..., default=x)`: x when nothing is ready.
    pub default: Option<Py<PyAny>>,
    /// `async for`'s step: a closed, drained channel ends the iteration.
    pub iterating: bool,
    pub what: &'static str,
}

/// A shuffled order of `n` operations (splitmix64 over a shared counter:
/// no lock, different on every call).
fn shuffled(n: usize) -> Vec<usize> {
    static SEED: AtomicU64 = AtomicU64::new(0x853c_49e6_748f_ea9b);
    let mut x = SEED.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    let mut next = || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// What trying one operation found.
enum Probe {
    Done(Option<Py<PyAny>>),
    Closed,
    /// Not ready (registered when a waiter was given).
    Wait,
    /// Skipped: closed and drained, in `select_channel`.
    Skip,
    /// The waiter was granted elsewhere while registering here.
    GrantedElsewhere(u32),
}

impl ChannelWait {
    fn ops(&self) -> &[ChanOp] {
        match &self.ops {
            Ops::One(op) => std::slice::from_ref(op),
            Ops::Many(ops) => ops,
        }
    }

    fn result(&self, py: Python<'_>, op: usize, value: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        let value = value.unwrap_or_else(|| py.None());
        if self.mode == Mode::Single {
            return Ok(value);
        }
        let label = match &self.ops()[op].label {
            Some(label) => label.clone_ref(py),
            None => py.None(),
        };
        Ok(PyTuple::new(py, [label, value])?.into_any().unbind())
    }

    /// Try op `k`; register `waiter` for it when it cannot complete.
    fn probe(&self, k: usize, waiter: Option<&Arc<Waiter>>, woken: &mut Woken) -> Probe {
        let op = &self.ops()[k];
        let mut st = op.chan.lock();
        // Completing needs the waiter withdrawn from wherever it registered.
        let claim_self = || match waiter.map(|w| w.withdraw()) {
            None | Some(Ok(())) => Ok(()),
            Some(Err(Outcome::Granted(j))) => Err(Probe::GrantedElsewhere(j)),
            Some(Err(_)) => Err(Probe::Wait),
        };
        let entry = |w: &Arc<Waiter>| Entry {
            waiter: Arc::clone(w),
            op: k as u32,
            select: self.mode != Mode::Single,
        };
        match &op.kind {
            Kind::Recv => {
                if st.can_recv() {
                    if let Err(p) = claim_self() {
                        return p;
                    }
                    return Probe::Done(st.take(woken));
                }
                if st.is_closed() {
                    if self.mode == Mode::SelectChannel {
                        return Probe::Skip;
                    }
                    return match claim_self() {
                        Ok(()) => Probe::Closed,
                        Err(p) => p,
                    };
                }
                if let Some(w) = waiter {
                    st.wait_recv(entry(w));
                }
                Probe::Wait
            }
            Kind::Send(_) => {
                if st.is_closed() {
                    return match claim_self() {
                        Ok(()) => Probe::Closed,
                        Err(p) => p,
                    };
                }
                if st.can_send() {
                    if let Err(p) = claim_self() {
                        return p;
                    }
                    if let Some(item) = op.take_item() {
                        st.put(item, woken);
                    }
                    return Probe::Done(None);
                }
                if let Some(w) = waiter {
                    st.wait_send(entry(w));
                }
                Probe::Wait
            }
        }
    }

    /// Drop `waiter`'s entries on every channel of ops `ks`.
    fn forget(&self, waiter: &Arc<Waiter>, ks: impl Iterator<Item = usize>) {
        for k in ks {
            self.ops()[k].chan.lock().forget(waiter);
        }
    }
}

impl WaitBody for ChannelWait {
    fn what(&self) -> &'static str {
        self.what
    }

    fn attempt(&self, py: Python<'_>, waiter: Option<&Arc<Waiter>>) -> PyResult<Attempt> {
        let shuffled_order;
        let order: &[usize] = match self.ops().len() {
            1 => &[0],
            n => {
                shuffled_order = shuffled(n);
                &shuffled_order
            }
        };
        let mut registered: Vec<usize> = Vec::new();
        let mut woken = Woken::new();
        let mut skipped = 0;
        for &k in order {
            let probe = self.probe(k, waiter, &mut woken);
            wake_all(py, std::mem::take(&mut woken));
            match probe {
                // One op has nothing to withdraw from when it completes.
                Probe::Wait => {
                    if waiter.is_some() && order.len() > 1 {
                        registered.push(k);
                    }
                }
                Probe::Skip => skipped += 1,
                Probe::Done(value) => {
                    if let Some(w) = waiter {
                        self.forget(w, registered.into_iter());
                    }
                    return Ok(Attempt::Done(self.result(py, k, value)?));
                }
                Probe::Closed => {
                    if let Some(w) = waiter {
                        self.forget(w, registered.into_iter());
                    }
                    if self.iterating {
                        return Err(pyo3::exceptions::PyStopAsyncIteration::new_err(()));
                    }
                    return Err(super::closed_error(py)?);
                }
                Probe::GrantedElsewhere(j) => return Ok(Attempt::Granted(j)),
            }
        }
        if skipped == self.ops().len() {
            // select_channel over channels that are all closed and drained.
            return Err(super::closed_error(py)?);
        }
        Ok(if waiter.is_some() {
            Attempt::Registered
        } else {
            Attempt::NotYet
        })
    }

    fn finish(&self, py: Python<'_>, waiter: &Arc<Waiter>, op: u32) -> PyResult<Py<PyAny>> {
        let k = op as usize;
        if self.ops().len() > 1 {
            self.forget(waiter, (0..self.ops().len()).filter(|&i| i != k));
        }
        let chan_op = &self.ops()[k];
        let mut woken = Woken::new();
        let outcome = {
            let mut st = chan_op.chan.lock();
            match &chan_op.kind {
                Kind::Recv => Ok(st.claim_recv(&mut woken)),
                Kind::Send(_) => match chan_op.take_item() {
                    Some(item) => match st.claim_send(item, &mut woken) {
                        Ok(()) => Ok(None),
                        Err((item, Closed)) => {
                            chan_op.put_back(item);
                            Err(Closed)
                        }
                    },
                    None => {
                        st.release_send(&mut woken);
                        Ok(None)
                    }
                },
            }
        };
        wake_all(py, woken);
        match outcome {
            Ok(value) => self.result(py, k, value),
            Err(Closed) => Err(super::closed_error(py)?),
        }
    }

    fn leave(&self, py: Python<'_>, waiter: &Arc<Waiter>, granted: Option<u32>) {
        self.forget(waiter, 0..self.ops().len());
        if let Some(k) = granted {
            let chan_op = &self.ops()[k as usize];
            let mut woken = Woken::new();
            {
                let mut st = chan_op.chan.lock();
                match chan_op.kind {
                    Kind::Recv => st.release_recv(&mut woken),
                    Kind::Send(_) => st.release_send(&mut woken),
                }
            }
            wake_all(py, woken);
        }
    }

    fn fallback(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.default.as_ref().map(|d| d.clone_ref(py))
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        for op in self.ops() {
            visit.call(&op.label)?;
            if let Kind::Send(item) = &op.kind {
                if let Ok(item) = item.try_lock() {
                    visit.call(&*item)?;
                }
            }
        }
        visit.call(&self.default)
    }
}
