//! Direct epoll backend: one `epoll_wait` per tick, a wake-up eventfd
//! registered once (level-triggered) and read only when it fires.

use super::{Event, Interest, Wait};
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, PoisonError, RwLock};

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

/// Wakes a poller from any thread.
#[derive(Clone, Debug)]
pub struct Notifier {
    wake: Arc<WakeFd>,
}

/// The wake-up eventfd. Writers hold the read lock while they write, and
/// the fd is only closed or replaced under the write lock, so a late
/// `notify` can never write into an fd number reused by someone else.
#[derive(Debug)]
struct WakeFd {
    /// -1 once closed.
    fd: RwLock<RawFd>,
}

impl WakeFd {
    /// Put `new` in place of the current fd (-1: none) and close the old one.
    fn replace(&self, new: RawFd) {
        let mut fd = self.fd.write().unwrap_or_else(PoisonError::into_inner);
        let old = std::mem::replace(&mut *fd, new);
        if old >= 0 {
            // SAFETY: the old eventfd is owned here; no writer holds it (we
            // hold the write lock).
            unsafe { libc::close(old) };
        }
    }
}

impl Drop for WakeFd {
    fn drop(&mut self) {
        self.replace(-1);
    }
}

impl Notifier {
    /// Make the current or next [`Poller::wait`] return with `woken` set.
    pub fn notify(&self) -> io::Result<()> {
        let one: u64 = 1;
        let fd = self.wake.fd.read().unwrap_or_else(PoisonError::into_inner);
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
}

/// The epoll instance, its wake-up eventfd and the kernel event buffer.
#[derive(Debug)]
pub struct Poller {
    epfd: RawFd,
    wake: Arc<WakeFd>,
    buf: Vec<libc::epoll_event>,
}

fn new_epoll_and_eventfd() -> io::Result<(RawFd, RawFd)> {
    // SAFETY: plain syscalls with valid flags; results are checked.
    let epfd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: as above.
    let evfd = match cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) }) {
        Ok(fd) => fd,
        Err(e) => {
            // SAFETY: epfd was just created and is owned here.
            unsafe { libc::close(epfd) };
            return Err(e);
        }
    };
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: WAKE_KEY,
    };
    // SAFETY: both fds are valid and owned; `ev` outlives the call.
    if let Err(e) = cvt(unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, evfd, &mut ev) }) {
        // SAFETY: both fds were created above and are owned here.
        unsafe {
            libc::close(evfd);
            libc::close(epfd);
        }
        return Err(e);
    }
    Ok((epfd, evfd))
}

impl Poller {
    pub fn new() -> io::Result<Poller> {
        let (epfd, evfd) = new_epoll_and_eventfd()?;
        Ok(Poller {
            epfd,
            wake: Arc::new(WakeFd {
                fd: RwLock::new(evfd),
            }),
            buf: Vec::with_capacity(256),
        })
    }

    pub fn notifier(&self) -> Notifier {
        Notifier {
            wake: Arc::clone(&self.wake),
        }
    }

    /// Start watching `fd`.
    ///
    /// # Safety
    /// `fd` must be deleted with [`Poller::delete`] before it is closed, or
    /// the caller must tolerate a stale registration (epoll drops it when the
    /// last descriptor of the file closes; the reactor's generation keys drop
    /// any event it still reports).
    pub unsafe fn add(&self, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, key, interest)
    }

    pub fn modify(&self, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, key, interest)
    }

    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
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
    pub fn wait(&mut self, out: &mut Vec<Event>, timeout_ms: i32) -> io::Result<Wait> {
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
            self.drain_wake();
        }
        // A full buffer means more may be pending: grow for the next tick.
        if n == cap {
            self.buf.reserve(cap);
        }
        Ok(wait)
    }

    fn drain_wake(&self) {
        let mut value: u64 = 0;
        let fd = self.wake.fd.read().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: reads 8 bytes into a live u64 from our non-blocking eventfd
        // (kept open by the read lock); EAGAIN (already drained) and EBADF
        // (closed) are harmless and ignored.
        unsafe { libc::read(*fd, (&mut value as *mut u64).cast(), 8) };
    }

    /// After `fork()`, in the child: replace the epoll instance and eventfd
    /// shared with the parent by fresh ones. Registrations must be re-added.
    pub fn reinit(&mut self) -> io::Result<()> {
        let (epfd, evfd) = new_epoll_and_eventfd()?;
        let old_ep = std::mem::replace(&mut self.epfd, epfd);
        if old_ep >= 0 {
            // SAFETY: the old epoll fd is this process's copy; closing it does
            // not affect the parent's, and nothing else uses it any more.
            unsafe { libc::close(old_ep) };
        }
        self.wake.replace(evfd);
        Ok(())
    }

    /// Release the epoll instance and the eventfd now (a closed loop), not
    /// when the last notifier goes. Waits after this fail with `EBADF`.
    pub fn close(&mut self) {
        if self.epfd >= 0 {
            // SAFETY: the epoll fd is owned by this poller and closed once.
            unsafe { libc::close(self.epfd) };
            self.epfd = -1;
        }
        self.wake.replace(-1);
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        if self.epfd >= 0 {
            // SAFETY: the epoll fd is owned by this poller and closed once;
            // the eventfd closes with the last `Arc<WakeFd>`.
            unsafe { libc::close(self.epfd) };
        }
    }
}
