//! fd registrations keyed by fd **and a generation**.
//!
//! Each new registration of an fd number gets a fresh generation, and the key
//! handed to the poller is `generation << 32 | fd`. An event whose generation
//! is not the fd's current one belongs to an earlier owner of that fd number
//! (the fd was closed and the number reused, or a `dup` of the old file is
//! still registered in the kernel) and is dropped: readiness can never reach
//! the wrong owner (uvloop issue 645).

use crate::poller::{Backend, BackendChoice, Event, Interest, Notifier, Poller, Wait};
use crate::Error;
use std::io;
use std::os::fd::RawFd;

/// A registered fd as the caller sees it.
#[derive(Debug)]
pub struct Source<S> {
    pub generation: u32,
    pub interest: Interest,
    pub data: S,
}

/// Readiness for a live registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ready {
    pub fd: RawFd,
    pub readable: bool,
    pub writable: bool,
}

/// The poller plus the registration table, indexed by fd number.
#[derive(Debug)]
pub struct Reactor<S> {
    poller: Poller,
    sources: Vec<Option<Source<S>>>,
    next_generation: u32,
    events: Vec<Event>,
    stale_dropped: u64,
    /// Live registrations, kept so `is_empty` is O(1) on the tick path.
    live: usize,
}

fn key(fd: RawFd, generation: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(fd as u32)
}

fn split_key(key: u64) -> (RawFd, u32) {
    ((key & 0xffff_ffff) as u32 as RawFd, (key >> 32) as u32)
}

impl<S> Reactor<S> {
    /// A reactor on the backend `FERROLOOP_BACKEND` asks for (`auto` if
    /// unset).
    pub fn new() -> Result<Self, Error> {
        Self::with_backend(BackendChoice::from_env()?)
    }

    /// A reactor on the backend `choice` asks for.
    pub fn with_backend(choice: BackendChoice) -> Result<Self, Error> {
        Ok(Reactor {
            poller: Poller::with_backend(choice)?,
            sources: Vec::new(),
            next_generation: 1,
            events: Vec::with_capacity(64),
            stale_dropped: 0,
            live: 0,
        })
    }

    /// The poller backend running now.
    pub fn backend(&self) -> Backend {
        self.poller.backend()
    }

    /// Why the reactor runs on epoll although io_uring was preferred.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.poller.fallback_reason()
    }

    /// A handle that wakes [`Reactor::poll`] from any thread.
    pub fn notifier(&self) -> Notifier {
        self.poller.notifier()
    }

    pub fn get(&self, fd: RawFd) -> Option<&Source<S>> {
        self.sources.get(usize::try_from(fd).ok()?)?.as_ref()
    }

    pub fn get_mut(&mut self, fd: RawFd) -> Option<&mut Source<S>> {
        self.sources.get_mut(usize::try_from(fd).ok()?)?.as_mut()
    }

    /// Number of live registrations.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Events dropped so far because they carried an old generation.
    pub fn stale_dropped(&self) -> u64 {
        self.stale_dropped
    }

    /// Register `fd` for a new owner with `data` and a fresh generation.
    /// Any earlier registration of the same fd number is replaced and its
    /// data returned (for the caller to drop outside its own borrows).
    ///
    /// Only an fd with some interest is in the kernel's set (see
    /// [`set_interest`](Self::set_interest)).
    ///
    /// The caller should [`deregister`](Self::deregister) before closing
    /// `fd`. If it does not (a Python user closing a socket that still has a
    /// reader), the kernel drops the registration when the file closes and
    /// the generation check drops anything still reported for it.
    pub fn register(&mut self, fd: RawFd, interest: Interest, data: S) -> Result<Option<S>, Error> {
        let index = usize::try_from(fd).map_err(|_| Error::InvalidFd(fd))?;
        let generation = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1).max(1);
        if !interest.is_empty() {
            self.arm(fd, key(fd, generation), interest)?;
        }
        if self.sources.len() <= index {
            self.sources.resize_with(index + 1, || None);
        }
        let old = self.sources[index].replace(Source {
            generation,
            interest,
            data,
        });
        if old.is_none() {
            self.live += 1;
        }
        Ok(old.map(|s| s.data))
    }

    /// Put `fd` in the kernel's set under key `k`.
    fn arm(&mut self, fd: RawFd, k: u64, interest: Interest) -> Result<(), Error> {
        // SAFETY: see `register`'s doc: a registration that outlives its fd
        // is tolerated by the kernel and filtered by generation here.
        match unsafe { self.poller.add(fd, k, interest) } {
            Ok(()) => Ok(()),
            // Same open file still registered (closed and reopened between a
            // deregister that failed and now): take it over.
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                Ok(self.poller.modify(fd, k, interest)?)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Change what a registered fd is watched for.
    pub fn set_interest(&mut self, fd: RawFd, interest: Interest) -> Result<(), Error> {
        let Some(source) = self.get(fd) else {
            return Err(Error::Io(io::Error::from_raw_os_error(libc::ENOENT)));
        };
        if source.interest == interest {
            return Ok(());
        }
        let k = key(fd, source.generation);
        match (source.interest.is_empty(), interest.is_empty()) {
            (true, true) => {}
            (true, false) => self.arm(fd, k, interest)?,
            // An fd with no interest leaves the kernel's set: epoll reports
            // hang-ups and errors whatever the mask, and a hung-up fd nobody
            // waits on would end every poll at once.
            (false, true) => {
                let _ = self.poller.delete(fd);
            }
            (false, false) => match self.poller.modify(fd, k, interest) {
                Ok(()) => {}
                // The fd was closed and its number reopened without telling
                // us: the kernel forgot it, so add it again.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    // SAFETY: as in `register`.
                    unsafe { self.poller.add(fd, k, interest) }?
                }
                Err(e) => return Err(e.into()),
            },
        }
        if let Some(source) = self.get_mut(fd) {
            source.interest = interest;
        }
        Ok(())
    }

    /// Stop watching `fd` and return its data. Kernel errors are ignored:
    /// they only mean the fd was already closed, which removed it.
    pub fn deregister(&mut self, fd: RawFd) -> Option<S> {
        let source = self.sources.get_mut(usize::try_from(fd).ok()?)?.take()?;
        self.live -= 1;
        if !source.interest.is_empty() {
            let _ = self.poller.delete(fd);
        }
        Some(source.data)
    }

    /// Every live registration's data.
    pub fn iter(&self) -> impl Iterator<Item = (RawFd, &S)> + '_ {
        self.sources
            .iter()
            .enumerate()
            .filter_map(|(fd, slot)| slot.as_ref().map(|s| (fd as RawFd, &s.data)))
    }

    /// Remove every registration, returning their data.
    pub fn drain(&mut self) -> Vec<(RawFd, S)> {
        let mut out = Vec::new();
        for (index, slot) in self.sources.iter_mut().enumerate() {
            if let Some(source) = slot.take() {
                let fd = index as RawFd;
                if !source.interest.is_empty() {
                    let _ = self.poller.delete(fd);
                }
                out.push((fd, source.data));
            }
        }
        self.live = 0;
        out
    }

    /// Release the kernel poller now (a closed event loop); any later poll
    /// fails. Registrations should be [`drain`](Self::drain)ed first.
    pub fn close(&mut self) {
        self.poller.close();
    }

    /// Wait up to `timeout_ms` (-1: forever) and append readiness of live
    /// registrations to `out`, filtered to what each asked for.
    pub fn poll(&mut self, timeout_ms: i32, out: &mut Vec<Ready>) -> io::Result<Wait> {
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        let result = self.poller.wait(&mut events, timeout_ms);
        for ev in &events {
            let (fd, generation) = split_key(ev.key);
            let interest = match self.get(fd) {
                Some(source) if source.generation == generation => source.interest,
                _ => {
                    self.stale_dropped += 1;
                    continue;
                }
            };
            let readable = ev.readable && interest.readable;
            let writable = ev.writable && interest.writable;
            if readable || writable {
                out.push(Ready {
                    fd,
                    readable,
                    writable,
                });
            }
        }
        self.events = events;
        result
    }

    /// In a forked child: build a new kernel poller (the old one is shared
    /// with the parent) and re-add every registration under its key.
    pub fn reinit_after_fork(&mut self) -> Result<(), Error> {
        self.poller.reinit()?;
        for (index, slot) in self.sources.iter().enumerate() {
            if let Some(source) = slot.as_ref().filter(|s| !s.interest.is_empty()) {
                let fd = index as RawFd;
                // SAFETY: as in `register`. An fd closed in the meantime fails
                // with EBADF and stays in the table until deregistered.
                let _ = unsafe {
                    self.poller
                        .add(fd, key(fd, source.generation), source.interest)
                };
            }
        }
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux", not(ferroloop_force_polling)))]
impl<S> Reactor<S> {
    pub(crate) fn poller_mut(&mut self) -> &mut Poller {
        &mut self.poller
    }
}

#[cfg(test)]
#[path = "reactor_tests.rs"]
mod tests;
