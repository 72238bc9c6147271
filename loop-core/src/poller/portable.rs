//! Portable backend on the `polling` crate (epoll, kqueue, event ports, …).
//!
//! `polling` retries `EINTR` internally, so a signal never ends a wait here.
//! To keep Ctrl-C prompt, blocking waits are capped at [`MAX_WAIT_MS`]; the
//! caller runs signal handlers after each wait.

use super::{Event, Interest, Wait};
use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Longest single blocking wait, so pending signals are looked at.
const MAX_WAIT_MS: i32 = 100;

fn event(key: u64, interest: Interest) -> polling::Event {
    let key = key as usize;
    match (interest.readable, interest.writable) {
        (true, true) => polling::Event::all(key),
        (true, false) => polling::Event::readable(key),
        (false, true) => polling::Event::writable(key),
        (false, false) => polling::Event::none(key),
    }
}

/// Wakes a poller from any thread.
#[derive(Clone, Debug)]
pub(super) struct Notifier {
    poller: Arc<Mutex<Option<Arc<polling::Poller>>>>,
}

impl Notifier {
    pub fn notify(&self) -> io::Result<()> {
        let poller = self
            .poller
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match poller {
            Some(poller) => poller.notify(),
            None => Ok(()), // closed: nobody to wake
        }
    }
}

#[derive(Debug)]
pub(super) struct Poller {
    shared: Arc<Mutex<Option<Arc<polling::Poller>>>>,
    poller: Arc<polling::Poller>,
    events: polling::Events,
}

impl Poller {
    pub fn new() -> io::Result<Poller> {
        let poller = Arc::new(polling::Poller::new()?);
        Ok(Poller {
            shared: Arc::new(Mutex::new(Some(Arc::clone(&poller)))),
            poller,
            events: polling::Events::new(),
        })
    }

    pub fn notifier(&self) -> Notifier {
        Notifier {
            poller: Arc::clone(&self.shared),
        }
    }

    /// Start watching `fd`.
    ///
    /// # Safety
    /// `fd` must be deleted with [`Poller::delete`] before it is closed
    /// (`polling::Poller::add`'s contract).
    pub unsafe fn add(&self, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        // SAFETY: forwarded to our caller's contract above.
        unsafe {
            self.poller
                .add_with_mode(fd, event(key, interest), polling::PollMode::Level)
        }
    }

    pub fn modify(&self, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        // SAFETY: the fd is registered and open for the duration of the call
        // (the reactor only modifies fds it holds a registration for).
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        self.poller
            .modify_with_mode(fd, event(key, interest), polling::PollMode::Level)
    }

    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        // SAFETY: as in `modify`.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        self.poller.delete(fd)
    }

    pub fn wait(&mut self, out: &mut Vec<Event>, timeout_ms: i32) -> io::Result<Wait> {
        let capped = if timeout_ms < 0 {
            MAX_WAIT_MS
        } else {
            timeout_ms.min(MAX_WAIT_MS)
        };
        self.events.clear();
        self.poller
            .wait(&mut self.events, Some(Duration::from_millis(capped as u64)))?;
        for ev in self.events.iter() {
            out.push(Event {
                key: ev.key as u64,
                readable: ev.readable,
                writable: ev.writable,
            });
        }
        // `polling` swallows its own notification; report a wake-up whenever
        // the wait ended without events before its deadline could have come.
        // The caller drains its injector after every wait anyway.
        Ok(Wait {
            woken: true,
            fell_back: false,
        })
    }

    pub fn reinit(&mut self) -> io::Result<()> {
        let poller = Arc::new(polling::Poller::new()?);
        *self.shared.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&poller));
        self.poller = poller;
        Ok(())
    }

    /// Let notifiers go of the poller; its fds close once the poller is
    /// dropped (`polling` offers no explicit close).
    pub fn close(&mut self) {
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}
