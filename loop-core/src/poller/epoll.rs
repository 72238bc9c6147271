//! Direct epoll backend: one `epoll_wait` per tick, the wake-up eventfd
//! registered once (level-triggered) and read only when it fires.

use super::wake::WakeFd;
use super::{Event, Interest, Wait};
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Key reserved for the wake-up eventfd; registration keys never use it
/// because the reactor's keys keep the fd in the low 32 bits.
const WAKE_KEY: u64 = u64::MAX;

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn epoll_flags(interest: Interest) -> u32 {
    let mut flags = 0;
    if interest.readable {
        flags |= libc::EPOLLIN as u32;
    }
    if interest.writable {
        flags |= libc::EPOLLOUT as u32;
    }
    flags
}

/// The epoll instance and the kernel event buffer. The wake-up eventfd is
/// the caller's ([`super::Poller`] owns it), registered under [`WAKE_KEY`].
#[derive(Debug)]
pub(super) struct Poller {
    epfd: RawFd,
    wake: Arc<WakeFd>,
    buf: Vec<libc::epoll_event>,
}

/// A new epoll instance watching `wake` (level-triggered).
fn new_epoll(wake: RawFd) -> io::Result<RawFd> {
    // SAFETY: plain syscall with valid flags; the result is checked.
    let epfd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: WAKE_KEY,
    };
    // SAFETY: both fds are valid (the eventfd is kept open by the caller);
    // `ev` outlives the call.
    if let Err(e) = cvt(unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, wake, &mut ev) }) {
        // SAFETY: epfd was created above and is owned here.
        unsafe { libc::close(epfd) };
        return Err(e);
    }
    Ok(epfd)
}

impl Poller {
    pub(super) fn new(wake: &Arc<WakeFd>) -> io::Result<Poller> {
        Ok(Poller {
            epfd: new_epoll(wake.raw())?,
            wake: Arc::clone(wake),
            buf: Vec::with_capacity(256),
        })
    }

    /// Start watching `fd`.
    ///
    /// # Safety
    /// `fd` must be deleted with [`Poller::delete`] before it is closed, or
    /// the caller must tolerate a stale registration (epoll drops it when the
    /// last descriptor of the file closes; the reactor's generation keys drop
    /// any event it still reports).
    pub(super) unsafe fn add(&self, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, key, interest)
    }

    pub(super) fn modify(&self, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, key, interest)
    }

    pub(super) fn delete(&self, fd: RawFd) -> io::Result<()> {
        // EPOLL_CTL_DEL ignores the event on kernels ≥ 2.6.9 but older ones
        // reject a null pointer, so pass a valid one.
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: epfd is our epoll instance and `ev` is valid for the call;
        // a bad `fd` is reported by the kernel as an error.
        cvt(unsafe { libc::epoll_ctl(self.epfd, libc::EPOLL_CTL_DEL, fd, &mut ev) }).map(drop)
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: epoll_flags(interest),
            u64: key,
        };
        // SAFETY: epfd is our epoll instance; `ev` is valid for the call; a
        // bad `fd` makes the kernel return EBADF, which is reported.
        cvt(unsafe { libc::epoll_ctl(self.epfd, op, fd, &mut ev) }).map(drop)
    }

    /// Wait up to `timeout_ms` (-1: forever) and append events to `out`.
    pub(super) fn wait(&mut self, out: &mut Vec<Event>, timeout_ms: i32) -> io::Result<Wait> {
        let cap = self.buf.capacity();
        // SAFETY: the kernel writes at most `cap` entries into the buffer's
        // spare capacity; we set the length to what it reports below.
        let n = unsafe {
            libc::epoll_wait(
                self.epfd,
                self.buf.as_mut_ptr(),
                cap as libc::c_int,
                timeout_ms,
            )
        };
        let n = cvt(n)? as usize;
        // SAFETY: epoll_wait initialised the first `n` ≤ cap entries.
        unsafe { self.buf.set_len(n) };
        let mut wait = Wait::default();
        for ev in self.buf.drain(..) {
            let key = ev.u64;
            if key == WAKE_KEY {
                wait.woken = true;
                continue;
            }
            let bits = ev.events;
            let failed = bits & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
            out.push(Event {
                key,
                readable: failed || bits & (libc::EPOLLIN | libc::EPOLLRDHUP) as u32 != 0,
                writable: failed || bits & libc::EPOLLOUT as u32 != 0,
            });
        }
        if wait.woken {
            self.wake.drain();
        }
        // A full buffer means more may be pending: grow for the next tick.
        if n == cap {
            self.buf.reserve(cap);
        }
        Ok(wait)
    }

    /// After `fork()`, in the child, once the caller replaced the wake-up
    /// eventfd: replace the epoll instance shared with the parent by a
    /// fresh one. Registrations must be re-added.
    pub(super) fn reinit(&mut self) -> io::Result<()> {
        let epfd = new_epoll(self.wake.raw())?;
        let old_ep = std::mem::replace(&mut self.epfd, epfd);
        if old_ep >= 0 {
            // SAFETY: the old epoll fd is this process's copy; closing it does
            // not affect the parent's, and nothing else uses it any more.
            unsafe { libc::close(old_ep) };
        }
        Ok(())
    }

    /// Release the epoll instance now (a closed loop). Waits after this
    /// fail with `EBADF`.
    pub(super) fn close(&mut self) {
        if self.epfd >= 0 {
            // SAFETY: the epoll fd is owned by this poller and closed once.
            unsafe { libc::close(self.epfd) };
            self.epfd = -1;
        }
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        if self.epfd >= 0 {
            // SAFETY: the epoll fd is owned by this poller and closed once.
            unsafe { libc::close(self.epfd) };
        }
    }
}
