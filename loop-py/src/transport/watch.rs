//! What the loop's reactor watches a native transport's fd for.
//!
//! Every transport (stream, datagram, listener) registers its fd with an
//! [`IoPort`](crate::event_loop::IoPort) the first time it wants anything,
//! changes the interest as its core's needs change, and deregisters before
//! the fd is closed. [`Watch`] keeps what is watched now, so that an
//! unchanged interest costs no call into the loop.

use crate::event_loop::{Dispatch, Loop};
use crate::gil_cell::GilCell;
use loop_core::Interest;
use pyo3::prelude::*;
use std::os::fd::RawFd;

/// A transport's fd with the reactor (see the module docs).
pub(super) struct Watch {
    fd: RawFd,
    /// The transport's readiness code, registered with the transport as
    /// its target.
    dispatch: Dispatch,
    /// What the reactor watches for; `None` while not registered.
    watching: GilCell<Option<Interest>>,
}

impl Watch {
    pub(super) fn new(fd: RawFd, dispatch: Dispatch) -> Self {
        Watch {
            fd,
            dispatch,
            watching: GilCell::new(None),
        }
    }

    pub(super) fn fd(&self) -> RawFd {
        self.fd
    }

    /// Make the reactor watch for `wanted`: the fd is registered (with
    /// `target`, the transport) the first time anything is wanted, and only
    /// its interest changes after. No call when nothing changed. The cell
    /// is not held across the loop's call.
    pub(super) fn set(
        &self,
        event_loop: &Bound<'_, Loop>,
        target: &Bound<'_, PyAny>,
        wanted: Interest,
    ) -> PyResult<()> {
        let py = event_loop.py();
        let watching = self.watching.with(py, |w| *w);
        if watching == Some(wanted) || (watching.is_none() && wanted.is_empty()) {
            return Ok(());
        }
        match watching {
            None => Loop::io_register(event_loop, self.fd, target, 0, self.dispatch, wanted)?,
            Some(_) => Loop::io_set_interest(event_loop, self.fd, wanted)?,
        }
        self.watching.with(py, |w| *w = Some(wanted));
        Ok(())
    }

    /// Stop watching, before the fd is closed.
    pub(super) fn stop(&self, event_loop: &Bound<'_, Loop>) -> PyResult<()> {
        let watched = self.watching.with(event_loop.py(), Option::take);
        if watched.is_some() {
            Loop::io_deregister(event_loop, self.fd)?;
        }
        Ok(())
    }

    /// `(reading, writing)` watched for now.
    pub(super) fn polling(&self, py: Python<'_>) -> (bool, bool) {
        let watching = self.watching.with(py, |w| w.unwrap_or(Interest::NONE));
        (watching.readable, watching.writable)
    }
}
