//! io_uring backend, readiness mode: level-triggered registrations as
//! one-shot `IORING_OP_POLL_ADD` ops re-armed by the next tick's enter.
//!
//! One `io_uring_enter` per tick submits the tick's registration changes
//! (arms, re-arms, cancels) and waits with the tick's timeout
//! (`IORING_ENTER_EXT_ARG`); a tick that must not block and has nothing
//! to submit reads the completion queue from shared memory with no system
//! call at all (unless the kernel flags work for it to run: the ring is
//! made with `COOP_TASKRUN`, see [`new_ring`]).
//!
//! Level-triggered semantics: multishot poll reports edges (a wake-up of
//! the file's wait queue), and `IORING_POLL_ADD_LEVEL` is refused with
//! `EINVAL` by the kernels we run on (6.18), so each registration is a
//! one-shot poll. Its completion is reported and the registration
//! re-armed at the next enter; a file still ready then completes at once
//! (the kernel polls it while arming), which is exactly what epoll's level
//! mode reports tick after tick.
//!
//! Registration changes are queued, not made at once: only the state at
//! the next enter matters, so a tick that adds and removes interest pays
//! nothing. The exception is [`Poller::delete`]: a pending poll op holds a
//! reference to its file, so a socket closed while its poll is armed would
//! stay open (no FIN) until the op is reaped. `delete` therefore submits
//! the cancellation at once when an op is in flight; the kernel completes
//! the cancelled op before the enter returns to user space, so the
//! caller's `close` that follows really closes. A registration whose
//! one-shot poll has completed and not been re-armed holds nothing, and
//! deleting it costs no system call.
//!
//! The wake-up eventfd is watched by a multishot poll (Linux 5.13): every
//! `notify` wakes its wait queue and posts a completion, and the counter is
//! never read (it cannot saturate in practice: 2^64 - 2 wake-ups). Kernels
//! without multishot poll get a one-shot poll and a drain per wake-up.

use super::wake::WakeFd;
use super::{Event, Interest, Wait};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};

/// Submission queue entries: registration changes beyond this many in one
/// tick are submitted early (one extra enter per 256 changes).
const SQ_ENTRIES: u32 = 256;
/// Completion queue entries: readiness of this many fds fits a tick; more
/// wait in the kernel's overflow list (`IORING_FEAT_NODROP`) for the next.
const CQ_ENTRIES: u32 = 4096;
/// Attempts at an enter the kernel refuses for lack of resources (`EBUSY`,
/// `EAGAIN`, `ENOMEM`) before the ring is given up for epoll.
const ENTER_ATTEMPTS: usize = 4;

/// `user_data` of cancellations: their completions carry nothing we need.
const CANCEL_DATA: u64 = 0;
/// `user_data` of the wake-up eventfd's poll.
const WAKE_DATA: u64 = 1;

/// A poll op's `user_data`: the arm's sequence number (never 0) and the fd.
fn op_data(fd: RawFd, seq: u32) -> u64 {
    (u64::from(seq) << 32) | u64::from(fd as u32)
}

fn split_op_data(data: u64) -> (RawFd, u32) {
    ((data & 0xffff_ffff) as u32 as RawFd, (data >> 32) as u32)
}

fn poll_mask(interest: Interest) -> u32 {
    let mut mask = 0;
    if interest.readable {
        mask |= libc::POLLIN as u32;
    }
    if interest.writable {
        mask |= libc::POLLOUT as u32;
    }
    mask
}

/// Incremented in every child `fork()` makes (a `pthread_atfork` hook): a
/// ring made under another count belongs to the parent and is never
/// written to (its queues are memory shared with the parent).
static FORK_COUNT: AtomicU64 = AtomicU64::new(0);

extern "C" fn count_fork_in_child() {
    FORK_COUNT.fetch_add(1, Ordering::Relaxed);
}

fn fork_count() -> u64 {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        // SAFETY: registers a handler that only bumps an atomic, which is
        // async-signal-safe as a post-fork child handler must be.
        unsafe { libc::pthread_atfork(None, None, Some(count_fork_in_child)) };
    });
    FORK_COUNT.load(Ordering::Relaxed)
}

/// Make a ring: no mappings inherited by a forked child (`MADV_DONTFORK`:
/// the child builds its own), a completion queue larger than the
/// submission queue, and where the kernel has them:
///
/// * `IORING_SETUP_COOP_TASKRUN` + `IORING_SETUP_TASKRUN_FLAG` (Linux
///   5.19): a completion does not interrupt the loop's thread (an IPI and a
///   trip through the kernel per readiness event); its work runs at the
///   thread's next system call, and the flag tells a tick that would not
///   enter to do so. Measured on `http_serve.py` at 64 connections: 0.72-0.79×
///   epoll's requests per CPU-second without it, 0.98-1.05× with it.
/// * `IORING_SETUP_SUBMIT_ALL` (Linux 5.18): one bad entry does not stop
///   the rest of a batch.
///
/// (`IORING_SETUP_DEFER_TASKRUN`, 6.1, measured within noise of
/// `COOP_TASKRUN` here, binds the ring to one thread: a loop run from
/// another thread would need a new ring. Left for the completion backend.)
pub(super) fn new_ring() -> io::Result<IoUring> {
    let build = |coop: bool, submit_all: bool| {
        let mut builder = IoUring::builder();
        builder.dontfork().setup_cqsize(CQ_ENTRIES).setup_clamp();
        if coop {
            builder.setup_coop_taskrun().setup_taskrun_flag();
        }
        if submit_all {
            builder.setup_submit_all();
        }
        builder.build(SQ_ENTRIES)
    };
    let refused =
        |r: &io::Result<IoUring>| matches!(r, Err(e) if e.raw_os_error() == Some(libc::EINVAL));
    let ring = build(true, true);
    if !refused(&ring) {
        return ring;
    }
    let ring = build(false, true);
    if !refused(&ring) {
        return ring;
    }
    build(false, false)
}

/// Refuse what epoll refuses (`EPERM` for regular files and directories,
/// which poll as always ready) and closed fds (`EBADF`), synchronously as
/// `epoll_ctl` does: a poll op would only fail at the next enter.
fn check_pollable(fd: RawFd) -> io::Result<()> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a `stat` into the buffer, which is valid for it;
    // a bad fd is reported as an error.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstat succeeded, so the struct is initialised.
    let kind = unsafe { st.assume_init() }.st_mode & libc::S_IFMT;
    if kind == libc::S_IFREG || kind == libc::S_IFDIR {
        return Err(io::Error::from_raw_os_error(libc::EPERM));
    }
    Ok(())
}

/// One fd's registration and the poll op that serves it.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    key: u64,
    interest: Interest,
    registered: bool,
    /// Sequence number of the poll op in flight (0: none).
    armed: u32,
    /// The mask that op waits for.
    armed_mask: u32,
    /// The next enter must cancel the op in flight and arm a new one, so
    /// the fd number is looked up again (a new registration of the number).
    rebind: bool,
    /// In `Poller::changed`.
    queued: bool,
    /// The kernel refused the fd (closed before the enter): not re-armed
    /// until the registration changes, as epoll forgets a closed fd.
    dead: bool,
}

pub(super) struct Poller {
    /// `None` once closed.
    ring: Option<IoUring>,
    wake: Arc<WakeFd>,
    slots: Vec<Slot>,
    /// Fds whose registration changed or whose poll completed since the
    /// last enter.
    changed: Vec<RawFd>,
    next_seq: u32,
    wake_armed: bool,
    /// The wake-up poll is multishot (cleared if the kernel refuses it).
    wake_multishot: bool,
    /// A wake-up was reaped and not yet reported (an interrupted wait).
    woken: bool,
    /// Readiness reaped outside a wait (making room in the completion
    /// queue), reported by the next one.
    backlog: Vec<Event>,
    /// [`FORK_COUNT`] when the ring was made.
    forks: u64,
    /// Errors the next enters fail with instead of entering (tests).
    #[cfg(test)]
    injected: Vec<i32>,
}

impl std::fmt::Debug for Poller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("uring::Poller")
            .field("open", &self.ring.is_some())
            .field("registrations", &self.registrations().count())
            .finish_non_exhaustive()
    }
}

impl Poller {
    pub(super) fn new(wake: &Arc<WakeFd>, ring: IoUring) -> Poller {
        Poller {
            ring: Some(ring),
            wake: Arc::clone(wake),
            slots: Vec::new(),
            changed: Vec::new(),
            next_seq: 1,
            wake_armed: false,
            wake_multishot: true,
            woken: false,
            backlog: Vec::new(),
            forks: fork_count(),
            #[cfg(test)]
            injected: Vec::new(),
        }
    }

    fn slot_mut(&mut self, fd: RawFd) -> io::Result<&mut Slot> {
        let index = usize::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
        if self.slots.len() <= index {
            self.slots.resize(index + 1, Slot::default());
        }
        Ok(&mut self.slots[index])
    }

    fn queue_change(&mut self, fd: RawFd) {
        if let Some(slot) = usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i)) {
            if !slot.queued {
                slot.queued = true;
                self.changed.push(fd);
            }
        }
    }

    /// Start watching `fd` (replacing any registration of the number).
    ///
    /// # Safety
    /// As [`super::Poller::add`]: delete before closing `fd`, or a poll op
    /// in flight keeps the file open until it completes.
    pub(super) unsafe fn add(&mut self, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        check_pollable(fd)?;
        let slot = self.slot_mut(fd)?;
        slot.key = key;
        slot.interest = interest;
        slot.registered = true;
        slot.rebind = true;
        slot.dead = false;
        self.queue_change(fd);
        Ok(())
    }

    pub(super) fn modify(&mut self, fd: RawFd, key: u64, interest: Interest) -> io::Result<()> {
        let slot = self.slot_mut(fd)?;
        if !slot.registered {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        slot.key = key;
        slot.interest = interest;
        slot.dead = false;
        self.queue_change(fd);
        Ok(())
    }

    /// Stop watching `fd`. On return the kernel holds no reference to its
    /// file through this poller: the caller may close it.
    pub(super) fn delete(&mut self, fd: RawFd) -> io::Result<()> {
        let slot = self.slot_mut(fd)?;
        if !slot.registered {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let armed = slot.armed;
        *slot = Slot {
            queued: slot.queued,
            ..Slot::default()
        };
        if armed != 0 {
            self.push(
                &opcode::PollRemove::new(op_data(fd, armed))
                    .build()
                    .user_data(CANCEL_DATA),
            )?;
            self.submit_now()?;
        }
        Ok(())
    }

    /// Every registration: `(fd, key, interest)` (to move them to another
    /// backend).
    pub(super) fn registrations(&self) -> impl Iterator<Item = (RawFd, u64, Interest)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.registered && !s.interest.is_empty())
            .map(|(fd, s)| (fd as RawFd, s.key, s.interest))
    }

    fn ring(&mut self) -> io::Result<&mut IoUring> {
        if self.forks != fork_count() {
            // A child forked without reinit: the ring is the parent's.
            self.rebuild_ring()?;
        }
        self.ring
            .as_mut()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    /// Queue one entry, handing the queue to the kernel first if it is full.
    fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        for _ in 0..ENTER_ATTEMPTS {
            // SAFETY: our entries (poll, poll remove) carry no pointers to
            // user memory, so nothing must outlive the submission.
            if unsafe { self.ring()?.submission().push(entry) }.is_ok() {
                return Ok(());
            }
            self.submit_now()?;
        }
        Err(io::Error::from_raw_os_error(libc::EBUSY))
    }

    /// Submit what is queued without waiting.
    fn submit_now(&mut self) -> io::Result<()> {
        self.enter(Some(0)).map(drop)
    }

    /// One `io_uring_enter`: submit the queue and wait for a completion up
    /// to `timeout_ms` (`None`: no limit; `Some(0)`: no wait). A refusal
    /// for lack of resources is retried after reaping what is complete
    /// (that makes room for the kernel's overflow list); the error comes
    /// back only when it persists. A timeout is not an error.
    fn enter(&mut self, timeout_ms: Option<i32>) -> io::Result<()> {
        let mut timeout_ms = timeout_ms;
        let mut last = None;
        for _ in 0..ENTER_ATTEMPTS {
            let result = self.enter_once(timeout_ms);
            match result {
                Ok(()) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => return Ok(()),
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EBUSY | libc::EAGAIN | libc::ENOMEM)
                    ) =>
                {
                    let mut reaped = std::mem::take(&mut self.backlog);
                    self.reap(&mut reaped);
                    if !reaped.is_empty() || self.woken {
                        // Something to report: the retry must not block.
                        timeout_ms = Some(0);
                    }
                    self.backlog = reaped;
                    last = Some(e);
                    std::thread::yield_now();
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EBUSY)))
    }

    fn enter_once(&mut self, timeout_ms: Option<i32>) -> io::Result<()> {
        #[cfg(test)]
        if let Some(errno) = self.injected.pop() {
            return Err(io::Error::from_raw_os_error(errno));
        }
        let ring = self.ring()?;
        match timeout_ms {
            Some(0) => {
                let queued = ring.submission().len() as u32;
                // GETEVENTS with nothing to wait for: deferred completions
                // (a cancelled op releasing its file) run before returning.
                // SAFETY: no argument is passed.
                unsafe {
                    ring.submitter().enter::<libc::sigset_t>(
                        queued,
                        0,
                        io_uring::EnterFlags::GETEVENTS.bits(),
                        None,
                    )
                }
                .map(drop)
            }
            None => ring.submit_and_wait(1).map(drop),
            Some(ms) => {
                let ms = u64::try_from(ms).unwrap_or(0);
                let ts = types::Timespec::new()
                    .sec(ms / 1000)
                    .nsec((ms % 1000) as u32 * 1_000_000);
                let args = types::SubmitArgs::new().timespec(&ts);
                ring.submitter().submit_with_args(1, &args).map(drop)
            }
        }
    }

    /// Turn the queued registration changes into submission entries.
    fn flush_changes(&mut self) -> io::Result<()> {
        let mut changed = std::mem::take(&mut self.changed);
        let mut result = Ok(());
        for (i, &fd) in changed.iter().enumerate() {
            if let Err(e) = self.flush_one(fd) {
                // Keep what was not flushed for the next attempt.
                self.changed.extend_from_slice(&changed[i..]);
                result = Err(e);
                break;
            }
        }
        changed.clear();
        if self.changed.is_empty() {
            self.changed = changed;
        }
        result
    }

    fn flush_one(&mut self, fd: RawFd) -> io::Result<()> {
        let Some(slot) = usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i)) else {
            return Ok(());
        };
        slot.queued = false;
        let want = if slot.registered && !slot.dead {
            poll_mask(slot.interest)
        } else {
            0
        };
        let mut cancel = None;
        if slot.armed != 0 && (slot.rebind || slot.armed_mask != want) {
            cancel = Some(op_data(fd, slot.armed));
            slot.armed = 0;
        }
        slot.rebind = false;
        let mut arm = None;
        if slot.armed == 0 && want != 0 {
            let seq = self.next_seq;
            self.next_seq = self.next_seq.wrapping_add(1).max(1);
            slot.armed = seq;
            slot.armed_mask = want;
            arm = Some(
                opcode::PollAdd::new(types::Fd(fd), want)
                    .build()
                    .user_data(op_data(fd, seq)),
            );
        }
        if let Some(data) = cancel {
            self.push(&opcode::PollRemove::new(data).build().user_data(CANCEL_DATA))?;
        }
        if let Some(entry) = arm {
            self.push(&entry)?;
        }
        Ok(())
    }

    fn arm_wake(&mut self) -> io::Result<()> {
        if self.wake_armed {
            return Ok(());
        }
        let fd = self.wake.raw();
        if fd < 0 {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        let entry = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32)
            .multi(self.wake_multishot)
            .build()
            .user_data(WAKE_DATA);
        self.push(&entry)?;
        self.wake_armed = true;
        Ok(())
    }

    /// Move completions to `out`: readiness of live registrations, the
    /// wake-up; completions of cancelled or replaced ops are dropped.
    fn reap(&mut self, out: &mut Vec<Event>) {
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        for cqe in ring.completion() {
            let (data, res, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
            match data {
                CANCEL_DATA => {}
                WAKE_DATA => {
                    if !cqueue::more(flags) {
                        self.wake_armed = false;
                    }
                    if res == -libc::EINVAL && self.wake_multishot {
                        // No multishot poll (before 5.13): one-shot, drained.
                        self.wake_multishot = false;
                    } else if res >= 0 {
                        self.woken = true;
                        if !self.wake_multishot {
                            self.wake.drain();
                        }
                    }
                }
                _ => {
                    let (fd, seq) = split_op_data(data);
                    let Some(slot) = usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i))
                    else {
                        continue;
                    };
                    if slot.armed != seq {
                        continue; // cancelled or replaced
                    }
                    slot.armed = 0;
                    if res < 0 {
                        // EBADF: closed before the enter (epoll would have
                        // dropped it); anything else: try again next tick.
                        slot.dead = res == -libc::EBADF;
                    } else {
                        let bits = res as u32;
                        let failed =
                            bits & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) as u32 != 0;
                        out.push(Event {
                            key: slot.key,
                            readable: failed || bits & (libc::POLLIN | libc::POLLRDHUP) as u32 != 0,
                            writable: failed || bits & libc::POLLOUT as u32 != 0,
                        });
                    }
                    if !slot.queued {
                        slot.queued = true;
                        self.changed.push(fd);
                    }
                }
            }
        }
    }

    /// Submit the tick's changes and wait up to `timeout_ms` (-1: forever)
    /// in one enter; append events to `out`.
    pub(super) fn wait(&mut self, out: &mut Vec<Event>, timeout_ms: i32) -> io::Result<Wait> {
        self.ring()?;
        out.append(&mut self.backlog);
        self.flush_changes()?;
        self.arm_wake()?;
        let ready = !out.is_empty() || self.woken;
        let ring = self.ring()?;
        let pending = !ring.submission().is_empty()
            || ring.submission().cq_overflow()
            || ring.submission().taskrun();
        let result = if ready || timeout_ms == 0 {
            // Nothing to wait for: enter only to submit (or to flush the
            // kernel's side); completions are read from shared memory.
            if pending {
                self.enter(Some(0))
            } else {
                Ok(())
            }
        } else if ring.completion().is_empty() {
            self.enter(if timeout_ms < 0 {
                None
            } else {
                Some(timeout_ms)
            })
        } else if pending {
            self.enter(Some(0))
        } else {
            Ok(())
        };
        out.append(&mut self.backlog);
        self.reap(out);
        result?;
        Ok(Wait {
            woken: std::mem::take(&mut self.woken),
            fell_back: false,
        })
    }

    /// A new ring in place of the current one; every registration is
    /// re-armed at the next enter. Dropping a ring inherited through
    /// `fork()` only unmaps and closes this process's copy.
    fn rebuild_ring(&mut self) -> io::Result<()> {
        self.ring = None;
        self.forks = fork_count();
        self.ring = Some(new_ring()?);
        self.wake_armed = false;
        self.woken = false;
        self.backlog.clear();
        for fd in 0..self.slots.len() {
            let slot = &mut self.slots[fd];
            slot.armed = 0;
            if slot.registered {
                self.queue_change(fd as RawFd);
            }
        }
        Ok(())
    }

    /// After `fork()`, in the child, once the caller replaced the wake-up
    /// eventfd: a ring of its own. Registrations are kept (and re-armed).
    pub(super) fn reinit(&mut self) -> io::Result<()> {
        self.rebuild_ring()
    }

    /// Release the ring now (a closed loop): the kernel cancels what is in
    /// flight. Waits after this fail with `EBADF`.
    pub(super) fn close(&mut self) {
        self.ring = None;
        self.slots.clear();
        self.changed.clear();
    }

    /// Make the next enters fail with `errno` (`count` times).
    #[cfg(test)]
    pub(super) fn inject_enter_errors(&mut self, errno: i32, count: usize) {
        self.injected.extend(std::iter::repeat(errno).take(count));
    }
}
