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
//! * after `fork()` the child calls [`Poller::reinit`] and re-registers its
//!   fds: the kernel object behind the parent's poller is shared with it.
//!
//! The backend is picked once here: direct epoll on Linux (one `epoll_wait`
//! per tick; `polling` costs five syscalls per wait), the `polling` crate
//! everywhere else and on Linux when built with `--cfg ferroloop_force_polling`
//! (CI runs the tests that way too, so both backends stay tested).

#[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
mod epoll;
#[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
pub use epoll::{Notifier, Poller};

#[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
mod portable;
#[cfg(not(all(target_os = "linux", not(ferroloop_force_polling))))]
pub use portable::{Notifier, Poller};

/// Name of the backend compiled in, for diagnostics and benchmarks.
pub const BACKEND: &str = if cfg!(all(target_os = "linux", not(ferroloop_force_polling))) {
    "epoll"
} else {
    "polling"
};

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
}
