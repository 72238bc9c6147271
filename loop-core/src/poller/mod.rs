//! The OS readiness mechanism behind one small interface.
//!
//! Every backend fulfils the same contract:
//!
//! * registrations are **level-triggered** and carry a caller-chosen `u64` key
//!   that is handed back with each event;
//! * [`Poller::wait`] makes one blocking call into the OS and fills the event
//!   buffer; a wake-up from [`Notifier::notify`] ends the wait early and is
//!   reported as [`Wait::woken`], never as an event;
//! * a wait interrupted by a signal returns `ErrorKind::Interrupted` so the
//!   caller can run signal handlers (the portable backend cannot, see there);
//! * [`Poller::delete`] returns once the kernel holds no reference to the
//!   fd's file through the poller, so the caller may close it;
//! * after `fork()` the child calls [`Poller::reinit`] and re-registers its
//!   fds: the kernel object behind the parent's poller is shared with it.
//!
//! Backends: on Linux, chosen when the poller is made ([`BackendChoice`]):
//! direct epoll (one `epoll_wait` per tick; `polling` costs five syscalls
//! per wait) or io_uring (one `io_uring_enter` per tick that submits the
//! tick's registration changes and waits, see `uring`). The `polling` crate
//! runs everywhere else, and on Linux when built with
//! `--cfg ferroloop_force_polling` (CI runs the tests that way too, so every
//! backend stays tested).

use crate::Error;
use std::io;
use std::os::fd::RawFd;

#[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
mod epoll;
#[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
pub mod probe;
#[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
mod uring;
#[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
mod wake;

#[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
mod portable;

#[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
use wake::WakeFd;

/// The environment variable that picks the backend of loops made without
/// an explicit choice: `auto`, `io_uring` or `epoll`.
pub const BACKEND_ENV: &str = "FERROLOOP_BACKEND";

/// What `auto` picks when io_uring is usable. The readiness backend makes
/// the same system calls per request as epoll (`io_uring_enter` in place of
/// `epoll_wait`) and measured within noise of it on HTTP (0.98-1.05×
/// requests per CPU-second at 64 connections, 0.99× at one) and timers,
/// ahead on cross-thread wake-ups (about 9 % less CPU: the eventfd is never
/// read) and on ticks that must not block (about 45 % less: no system call
/// when there is nothing to submit).
#[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
const AUTO_PREFERS_IO_URING: bool = true;

/// The backend a poller runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    Epoll,
    IoUring,
    Polling,
}

impl Backend {
    /// `"epoll"`, `"io_uring"` or `"polling"`.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Epoll => "epoll",
            Backend::IoUring => "io_uring",
            Backend::Polling => "polling",
        }
    }
}

/// The backend asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BackendChoice {
    /// io_uring where this process can use it (probed once), else epoll;
    /// `polling` in a build that has only it.
    #[default]
    Auto,
    /// epoll; an error where it is not built in.
    Epoll,
    /// io_uring; an error naming the reason where it cannot be used.
    IoUring,
}

/// The spellings [`BackendChoice::parse`] takes.
pub const BACKEND_CHOICES: &[&str] = &["auto", "io_uring", "epoll"];

impl BackendChoice {
    /// `auto`, `io_uring` or `epoll`.
    pub fn parse(text: &str) -> Result<BackendChoice, Error> {
        match text {
            "auto" => Ok(BackendChoice::Auto),
            "io_uring" => Ok(BackendChoice::IoUring),
            "epoll" => Ok(BackendChoice::Epoll),
            other => Err(Error::UnknownBackend(format!("'{other}'"))),
        }
    }

    /// [`BACKEND_ENV`], or `auto` when it is unset or empty.
    pub fn from_env() -> Result<BackendChoice, Error> {
        match std::env::var(BACKEND_ENV) {
            Ok(text) if !text.is_empty() => BackendChoice::parse(&text)
                .map_err(|_| Error::UnknownBackend(format!("'{text}' (from {BACKEND_ENV})"))),
            Ok(_) | Err(std::env::VarError::NotPresent) => Ok(BackendChoice::Auto),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(Error::UnknownBackend(format!("non-UTF-8 {BACKEND_ENV}")))
            }
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Epoll => "epoll",
            BackendChoice::IoUring => "io_uring",
        }
    }
}

#[derive(Debug)]
enum Imp {
    #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
    Epoll(epoll::Poller),
    #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
    Uring(Box<uring::Poller>),
    #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
    Portable(portable::Poller),
}

/// Wakes a poller from any thread.
#[derive(Clone, Debug)]
pub struct Notifier {
    #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
    wake: std::sync::Arc<WakeFd>,
    #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
    inner: portable::Notifier,
}

impl Notifier {
    /// Make the current or next [`Poller::wait`] return with `woken` set.
    pub fn notify(&self) -> io::Result<()> {
        #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
        return self.wake.notify();
        #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
        return self.inner.notify();
    }
}

/// The poller of one loop: a backend, and why `auto` did not give io_uring.
#[derive(Debug)]
pub struct Poller {
    imp: Imp,
    /// The wake-up eventfd, kept across a switch from io_uring to epoll.
    #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
    wake: std::sync::Arc<WakeFd>,
    fallback: Option<String>,
}

impl Poller {
    /// A poller on the backend [`BACKEND_ENV`] asks for (`auto` if unset).
    pub fn new() -> Result<Poller, Error> {
        Poller::with_backend(BackendChoice::from_env()?)
    }

    /// A poller on the backend `choice` asks for.
    #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
    pub fn with_backend(choice: BackendChoice) -> Result<Poller, Error> {
        let wake = WakeFd::new()?;
        let uring = |wake: &std::sync::Arc<WakeFd>| -> Result<Imp, String> {
            probe::support()?;
            let ring = uring::new_ring().map_err(|e| probe::setup_refused(&e))?;
            Ok(Imp::Uring(Box::new(uring::Poller::new(wake, ring))))
        };
        let (imp, fallback) = match choice {
            BackendChoice::Epoll => (Imp::Epoll(epoll::Poller::new(&wake)?), None),
            BackendChoice::IoUring => match uring(&wake) {
                Ok(imp) => (imp, None),
                Err(reason) => {
                    return Err(Error::BackendUnavailable {
                        backend: "io_uring",
                        reason,
                    })
                }
            },
            BackendChoice::Auto if AUTO_PREFERS_IO_URING => match uring(&wake) {
                Ok(imp) => (imp, None),
                Err(reason) => (Imp::Epoll(epoll::Poller::new(&wake)?), Some(reason)),
            },
            BackendChoice::Auto => (Imp::Epoll(epoll::Poller::new(&wake)?), None),
        };
        Ok(Poller {
            imp,
            wake,
            fallback,
        })
    }

    /// A poller on the backend `choice` asks for: this build has only
    /// `polling`, which `auto` gives.
    #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
    pub fn with_backend(choice: BackendChoice) -> Result<Poller, Error> {
        if choice != BackendChoice::Auto {
            return Err(Error::BackendUnavailable {
                backend: choice.name(),
                reason: "this build of ferroloop has only the polling backend".into(),
            });
        }
        Ok(Poller {
            imp: Imp::Portable(portable::Poller::new()?),
            fallback: None,
        })
    }

    /// The backend running now.
    pub fn backend(&self) -> Backend {
        match &self.imp {
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Epoll(_) => Backend::Epoll,
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Uring(_) => Backend::IoUring,
            #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
            Imp::Portable(_) => Backend::Polling,
        }
    }

    /// Why this poller runs on epoll although io_uring was preferred: `auto`
    /// found it unusable, or the ring failed mid-run.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    pub fn notifier(&self) -> Notifier {
        #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
        return Notifier {
            wake: std::sync::Arc::clone(&self.wake),
        };
        #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
        return match &self.imp {
            Imp::Portable(p) => Notifier {
                inner: p.notifier(),
            },
        };
    }

    /// Start watching `fd` under `key`.
    ///
    /// # Safety
    /// `fd` must be deleted with [`Poller::delete`] before it is closed. If
    /// it is not: epoll drops the registration when the last descriptor of
    /// the file closes (the reactor's generation keys drop anything it still
    /// reports); io_uring's poll op in flight keeps the file open until the
    /// op completes or the registration is replaced or deleted.
    pub unsafe fn add(&mut self, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        match &mut self.imp {
            // SAFETY: forwarded to our caller's contract above.
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Epoll(p) => unsafe { p.add(fd, key, interest) },
            // SAFETY: as above.
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Uring(p) => unsafe { p.add(fd, key, interest) },
            // SAFETY: as above.
            #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
            Imp::Portable(p) => unsafe { p.add(fd, key, interest) },
        }
    }

    /// Change what a watched fd is watched for, and its key.
    pub fn modify(&mut self, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        match &mut self.imp {
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Epoll(p) => p.modify(fd, key, interest),
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Uring(p) => p.modify(fd, key, interest),
            #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
            Imp::Portable(p) => p.modify(fd, key, interest),
        }
    }

    /// Stop watching `fd`; on return the caller may close it.
    pub fn delete(&mut self, fd: RawFd) -> io::Result<()> {
        match &mut self.imp {
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Epoll(p) => p.delete(fd),
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Uring(p) => match p.delete(fd) {
                Err(e) if ring_exhausted(&e) => {
                    self.fall_back(&e)?;
                    Ok(())
                }
                other => other,
            },
            #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
            Imp::Portable(p) => p.delete(fd),
        }
    }

    /// Wait up to `timeout_ms` (-1: forever) and append events to `out`.
    pub fn wait(&mut self, out: &mut Vec<Event>, timeout_ms: i32) -> io::Result<Wait> {
        match &mut self.imp {
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Epoll(p) => p.wait(out, timeout_ms),
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Uring(p) => match p.wait(out, timeout_ms) {
                Err(e) if ring_exhausted(&e) => {
                    self.fall_back(&e)?;
                    // Level-triggered epoll reports at its first wait what
                    // the ring had not; the injector is looked at anyway.
                    Ok(Wait {
                        woken: true,
                        fell_back: true,
                    })
                }
                other => other,
            },
            #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
            Imp::Portable(p) => p.wait(out, timeout_ms),
        }
    }

    /// The ring kept refusing work for lack of kernel resources: go on with
    /// epoll, every registration moved over, the wake-up eventfd kept.
    #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
    fn fall_back(&mut self, err: &io::Error) -> io::Result<()> {
        let Imp::Uring(ring) = &self.imp else {
            return Ok(());
        };
        let epoll = epoll::Poller::new(&self.wake)?;
        for (fd, key, interest) in ring.registrations() {
            // SAFETY: the fd was registered with the ring under the same
            // contract; a closed one fails with EBADF and is skipped (epoll
            // would have dropped it).
            let _ = unsafe { epoll.add(fd, key, interest) };
        }
        self.imp = Imp::Epoll(epoll);
        self.fallback = Some(format!(
            "the io_uring ring kept failing ({err}); this loop continues on epoll"
        ));
        Ok(())
    }

    /// After `fork()`, in the child: replace the kernel objects shared with
    /// the parent by fresh ones. Registrations must be re-added.
    pub fn reinit(&mut self) -> io::Result<()> {
        #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
        self.wake.replace(wake::new_eventfd()?);
        match &mut self.imp {
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Epoll(p) => p.reinit(),
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Uring(p) => p.reinit(),
            #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
            Imp::Portable(p) => p.reinit(),
        }
    }

    /// Release the kernel objects now (a closed loop), not when the last
    /// notifier goes. Waits after this fail (`EBADF`; the portable backend
    /// cannot close early).
    pub fn close(&mut self) {
        #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
        self.wake.replace(-1);
        match &mut self.imp {
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Epoll(p) => p.close(),
            #[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
            Imp::Uring(p) => p.close(),
            #[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
            Imp::Portable(p) => p.close(),
        }
    }

    /// Make the ring's next enters fail with `errno` (`count` times).
    #[cfg(all(test, target_os = "linux", not(ferroloop_force_polling)))]
    pub(crate) fn inject_enter_errors(&mut self, errno: i32, count: usize) {
        if let Imp::Uring(p) = &mut self.imp {
            p.inject_enter_errors(errno, count);
        }
    }
}

/// The kernel refused ring work for lack of resources, after retries.
#[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
fn ring_exhausted(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EBUSY | libc::EAGAIN | libc::ENOMEM)
    )
}

/// Every backend choice this build can honour, for tests that run on each.
pub fn testable_backends() -> Vec<BackendChoice> {
    if cfg!(all(target_os = "linux", not(ferroloop_force_polling))) {
        vec![BackendChoice::Epoll, BackendChoice::IoUring]
    } else {
        vec![BackendChoice::Auto]
    }
}

/// Which readiness a registration asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Interest {
    pub readable: bool,
    pub writable: bool,
}

impl Interest {
    pub const NONE: Interest = Interest {
        readable: false,
        writable: false,
    };
    pub const READABLE: Interest = Interest {
        readable: true,
        writable: false,
    };
    pub const WRITABLE: Interest = Interest {
        readable: false,
        writable: true,
    };
    pub const BOTH: Interest = Interest {
        readable: true,
        writable: true,
    };

    /// True when neither direction is wanted.
    pub fn is_empty(self) -> bool {
        !self.readable && !self.writable
    }
}

/// One readiness report. Error and hang-up conditions are reported as both
/// readable and writable (as Python's `selectors` does): the callback's next
/// I/O call surfaces the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub key: u64,
    pub readable: bool,
    pub writable: bool,
}

/// What a wait returned besides events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wait {
    /// A [`Notifier`] woke the poller (possibly alongside events).
    pub woken: bool,
    /// The io_uring backend failed during this wait and the poller now runs
    /// on epoll ([`Poller::fallback_reason`] says why).
    pub fell_back: bool,
}
