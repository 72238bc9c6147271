//! The fd a core works on, and who closes it.
//!
//! Ownership rule: an [`IoFd`] made with [`IoFd::owned`] closes its fd when
//! dropped (or when the core's `close_fd` is called). One made with
//! [`IoFd::borrow_raw`] never closes it: the fd belongs to someone else
//! (Python's `socket` object passed as `sock=`, which asyncio closes itself
//! after `connection_lost`), who promises to keep it open while the core
//! lives. Closing a number the core still uses would let it read or write
//! whatever file reuses that number, hence the `unsafe` constructor.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

/// A file descriptor a core operates on, owned or borrowed.
#[derive(Debug)]
pub struct IoFd {
    raw: RawFd,
    owned: bool,
}

impl IoFd {
    /// Take ownership: the fd is closed when this value is dropped.
    pub fn owned(fd: OwnedFd) -> IoFd {
        IoFd {
            raw: fd.into_raw_fd(),
            owned: true,
        }
    }

    /// Use an fd someone else owns and will close.
    ///
    /// # Safety
    /// `fd` must be an open file descriptor, and must stay open (not closed,
    /// not replaced with `dup2`) until this `IoFd` is dropped. The `IoFd`
    /// never closes it.
    pub unsafe fn borrow_raw(fd: RawFd) -> IoFd {
        IoFd {
            raw: fd,
            owned: false,
        }
    }

    /// The fd number, for reactor registration.
    pub fn raw(&self) -> RawFd {
        self.raw
    }

    /// Whether dropping this value closes the fd.
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    /// Give the fd back as an `OwnedFd` if it was owned; a borrowed fd is
    /// simply forgotten and `None` returned.
    pub fn into_owned(self) -> Option<OwnedFd> {
        let this = std::mem::ManuallyDrop::new(self);
        if this.owned {
            // SAFETY: we owned this fd and `ManuallyDrop` keeps our `Drop`
            // from closing it, so ownership moves to the `OwnedFd`.
            Some(unsafe { OwnedFd::from_raw_fd(this.raw) })
        } else {
            None
        }
    }
}

impl Drop for IoFd {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: we own the fd and close it exactly once, here.
            drop(unsafe { OwnedFd::from_raw_fd(self.raw) });
        }
    }
}

impl From<OwnedFd> for IoFd {
    fn from(fd: OwnedFd) -> IoFd {
        IoFd::owned(fd)
    }
}

impl AsRawFd for IoFd {
    fn as_raw_fd(&self) -> RawFd {
        self.raw
    }
}

impl AsFd for IoFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: an owned fd is open until we drop it; a borrowed one is
        // kept open for our lifetime by the contract of `borrow_raw`.
        unsafe { BorrowedFd::borrow_raw(self.raw) }
    }
}
