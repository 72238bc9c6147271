//! The wake-up eventfd shared by the Linux backends (epoll and io_uring).
//!
//! One eventfd per poller, owned by an `Arc` the notifiers share: a poller
//! that falls back from io_uring to epoll mid-run keeps it, so notifiers
//! handed out before the switch still wake the loop.

use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, PoisonError, RwLock};

/// The eventfd. Writers hold the read lock while they write, and the fd is
/// only closed or replaced under the write lock, so a late `notify` can
/// never write into an fd number reused by someone else.
#[derive(Debug)]
pub(super) struct WakeFd {
    /// -1 once closed.
    fd: RwLock<RawFd>,
}

pub(super) fn new_eventfd() -> io::Result<RawFd> {
    // SAFETY: plain syscall with valid flags; the result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd)
    }
}

impl WakeFd {
    pub(super) fn new() -> io::Result<Arc<WakeFd>> {
        Ok(Arc::new(WakeFd {
            fd: RwLock::new(new_eventfd()?),
        }))
    }

    /// The current fd (-1: closed). Only the poller's thread replaces it,
    /// so the poller may use the number it reads without holding the lock.
    pub(super) fn raw(&self) -> RawFd {
        *self.fd.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Put `new` in place of the current fd (-1: none) and close the old one.
    pub(super) fn replace(&self, new: RawFd) {
        let mut fd = self.fd.write().unwrap_or_else(PoisonError::into_inner);
        let old = std::mem::replace(&mut *fd, new);
        if old >= 0 {
            // SAFETY: the old eventfd is owned here; no writer holds it (we
            // hold the write lock).
            unsafe { libc::close(old) };
        }
    }

    /// Add one to the counter: wakes whatever waits on the fd.
    pub(super) fn notify(&self) -> io::Result<()> {
        let one: u64 = 1;
        let fd = self.fd.read().unwrap_or_else(PoisonError::into_inner);
        if *fd < 0 {
            return Ok(()); // the poller was closed: nobody to wake
        }
        // SAFETY: writes 8 bytes from a live u64 to the eventfd, which stays
        // open while we hold the read lock.
        let rc = unsafe { libc::write(*fd, (&one as *const u64).cast(), 8) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            // EAGAIN: the counter is saturated, so a wake-up is pending anyway.
            if err.kind() != io::ErrorKind::WouldBlock {
                return Err(err);
            }
        }
        Ok(())
    }

    /// Reset the counter to zero (level-triggered waiters stop firing).
    pub(super) fn drain(&self) {
        let mut value: u64 = 0;
        let fd = self.fd.read().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: reads 8 bytes into a live u64 from our non-blocking eventfd
        // (kept open by the read lock); EAGAIN (already drained) and EBADF
        // (closed) are harmless and ignored.
        unsafe { libc::read(*fd, (&mut value as *mut u64).cast(), 8) };
    }
}

impl Drop for WakeFd {
    fn drop(&mut self) {
        self.replace(-1);
    }
}
