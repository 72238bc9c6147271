//! [`ListenerCore`]: accepting connections in batches.
//!
//! One readable report accepts up to `batch` connections with
//! `accept4(SOCK_NONBLOCK | SOCK_CLOEXEC)`, so a flood of connects cannot
//! keep the loop in one listener, and each accepted fd is ready for a
//! transport without more syscalls. Connections that died in the backlog
//! (`ECONNABORTED`, `EPROTO`) are skipped. Running out of fds or memory
//! (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`) is reported as
//! [`AcceptStop::ResourceLimit`]; the caller then [`back_off`](ListenerCore::back_off)s:
//! the listener stops accepting for [`ACCEPT_RETRY_DELAY`] (the backlog keeps
//! the clients) instead of spinning on a socket that stays readable, as
//! asyncio does. asyncio's `Server` (loop-py's `Listener`) and the server's
//! driver (loop-server) both accept through this one core.

use crate::error::{Error, Op};
use crate::fd::IoFd;
use crate::socket;
use crate::sys;
use loop_core::Interest;
use socket2::SockAddr;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Connections accepted per readable report by default.
pub const DEFAULT_ACCEPT_BATCH: usize = 128;

/// Seconds accepting pauses after the process ran out of fds or memory
/// (asyncio's `constants.ACCEPT_RETRY_DELAY`).
pub const ACCEPT_RETRY_DELAY: f64 = 1.0;

/// An accepted connection: non-blocking, close-on-exec, owned.
#[derive(Debug)]
pub struct Accepted {
    pub fd: OwnedFd,
    pub peer: SockAddr,
}

/// Why an accept batch stopped.
#[derive(Debug)]
pub enum AcceptStop {
    /// No more pending connections.
    Drained,
    /// The batch size was reached; more may be pending.
    BatchFull,
    /// Out of fds or memory: pause, retry later. Connections accepted before
    /// this in the same batch are in the output.
    ResourceLimit(Error),
    /// Any other error (asyncio logs it and keeps listening).
    Failed(Error),
}

/// A listening socket.
#[derive(Debug)]
pub struct ListenerCore {
    fd: Option<IoFd>,
    raw: RawFd,
    batch: usize,
    paused: bool,
    /// When a back-off ends (seconds on the caller's clock).
    resume_at: Option<f64>,
    accepted: u64,
}

impl ListenerCore {
    /// Wrap a listening socket (made non-blocking here, in case it was
    /// adopted). `batch` is clamped to at least 1.
    pub fn new(fd: IoFd, batch: usize) -> Result<ListenerCore, Error> {
        socket::set_nonblocking(&fd)?;
        Ok(ListenerCore {
            raw: fd.raw(),
            fd: Some(fd),
            batch: batch.max(1),
            paused: false,
            resume_at: None,
            accepted: 0,
        })
    }

    pub fn fd(&self) -> RawFd {
        self.raw
    }

    /// Readable unless paused or closed.
    pub fn interest(&self) -> Interest {
        if self.paused || self.fd.is_none() {
            Interest::NONE
        } else {
            Interest::READABLE
        }
    }

    /// Stop accepting (after `ResourceLimit`, or asyncio's `Server.close`
    /// path before the fd is closed).
    pub fn pause(&mut self) {
        self.paused = true;
    }

    pub fn resume(&mut self) {
        self.paused = false;
        self.resume_at = None;
    }

    /// After [`AcceptStop::ResourceLimit`] at `now`: stop accepting for
    /// [`ACCEPT_RETRY_DELAY`]. Returns when to call
    /// [`resume_due`](Self::resume_due).
    pub fn back_off(&mut self, now: f64) -> f64 {
        let at = now + ACCEPT_RETRY_DELAY;
        self.paused = true;
        self.resume_at = Some(at);
        at
    }

    /// When a back-off ends, if one is running.
    pub fn resume_at(&self) -> Option<f64> {
        self.resume_at
    }

    /// Resume accepting if a back-off ended by `now`; true when it did.
    pub fn resume_due(&mut self, now: f64) -> bool {
        match self.resume_at {
            Some(at) if now >= at => {
                self.resume();
                true
            }
            _ => false,
        }
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Connections accepted so far.
    pub fn accepted_count(&self) -> u64 {
        self.accepted
    }

    /// Accept up to the batch size into `out`.
    pub fn accept_batch(&mut self, out: &mut Vec<Accepted>) -> AcceptStop {
        if self.paused || self.fd.is_none() {
            return AcceptStop::Drained;
        }
        let mut taken = 0;
        while taken < self.batch {
            match accept4(self.raw) {
                Ok(accepted) => {
                    out.push(accepted);
                    taken += 1;
                    self.accepted += 1;
                }
                Err(e) if sys::is_would_block(&e) => return AcceptStop::Drained,
                Err(e) if is_skippable(&e) => continue,
                Err(e) => {
                    let err = Error::os(Op::Accept, e);
                    return if err.is_resource_limit() {
                        AcceptStop::ResourceLimit(err)
                    } else {
                        AcceptStop::Failed(err)
                    };
                }
            }
        }
        AcceptStop::BatchFull
    }

    pub fn local_addr(&self) -> Result<SockAddr, Error> {
        match self.fd.as_ref() {
            Some(fd) => socket::local_addr(fd),
            None => Err(Error::os(
                Op::Address,
                io::Error::from_raw_os_error(libc::EBADF),
            )),
        }
    }

    /// Close the fd now if owned (forget it if borrowed). Deregister it from
    /// the reactor first.
    pub fn close_fd(&mut self) {
        self.fd = None;
    }
}

/// Errors that concern only the connection being accepted, not the listener:
/// it was reset while in the backlog, or (Linux) a pending network error
/// surfaced through accept.
fn is_skippable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNABORTED | libc::EPROTO | libc::EINTR)
    )
}

fn accept4(listener: RawFd) -> io::Result<Accepted> {
    // SAFETY: the closure hands accept4 socket2's zeroed storage and its
    // length, exactly what accept4 expects; its result is checked.
    let (fd, peer) = unsafe {
        SockAddr::try_init(|storage, len| {
            let fd = libc::accept4(
                listener,
                storage.cast(),
                len,
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            );
            if fd < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(fd)
            }
        })
    }?;
    // SAFETY: accept4 returned a new fd that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok(Accepted { fd, peer })
}
