//! Loop state owned by the thread running the loop.
//!
//! PyO3 requires pyclasses to be `Send + Sync`, but a loop's state is
//! single-threaded. [`Owned`] holds it in a `RefCell` and lets a thread in
//! only if it owns the loop (runs it), or if no thread does (the loop is not
//! running: asyncio lets any thread schedule on an idle loop, and the GIL,
//! which this module requires, serialises those calls). Other threads must
//! use the injector instead.

use std::cell::{Ref, RefCell, RefMut};
use std::sync::atomic::{AtomicU64, Ordering};

/// The calling thread's id (`pthread_self`: one load from the thread
/// pointer, where a Rust `thread_local!` in a shared library costs a
/// `__tls_get_addr` call per state borrow). Never 0 for a live thread; an
/// exited thread's id may be reused, which cannot confuse an owner check:
/// a loop's owner gives it up before its thread can exit.
#[inline]
pub fn current_thread() -> u64 {
    // SAFETY: pthread_self has no preconditions and cannot fail.
    unsafe { libc::pthread_self() as u64 }
}

pub struct Owned<T> {
    cell: RefCell<T>,
    /// Thread running the loop, 0 when none.
    owner: AtomicU64,
}

// SAFETY: the cell is only borrowed through `try_borrow_mut`, which admits
// the owner thread while the loop runs and otherwise only GIL-holding
// callers (no borrow is ever held across a GIL release by a non-owner), so
// two threads never borrow it at once.
unsafe impl<T: Send> Sync for Owned<T> {}

/// Why a borrow was refused.
pub enum Refused {
    /// Another thread runs the loop.
    OtherThread,
    /// Re-entrant borrow: a bug in this crate, reported as RuntimeError.
    Busy,
}

impl<T> Owned<T> {
    pub fn new(value: T) -> Self {
        Owned {
            cell: RefCell::new(value),
            owner: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn owner(&self) -> u64 {
        self.owner.load(Ordering::Acquire)
    }

    /// True if the calling thread may borrow now.
    #[inline]
    pub fn admits_current(&self) -> bool {
        let owner = self.owner();
        owner == 0 || owner == current_thread()
    }

    #[inline]
    pub fn try_borrow_mut(&self) -> Result<RefMut<'_, T>, Refused> {
        if !self.admits_current() {
            return Err(Refused::OtherThread);
        }
        self.cell.try_borrow_mut().map_err(|_| Refused::Busy)
    }

    /// Shared access for the garbage collector's `__traverse__` (GIL held,
    /// no `Python` token, any thread). `None` while the loop is borrowed,
    /// e.g. by its own thread blocked in a poll: the borrow flag only
    /// changes under the GIL, so reading it here is race-free.
    pub fn peek_in_gc(&self) -> Option<Ref<'_, T>> {
        self.cell.try_borrow().ok()
    }

    /// Exclusive access for `__clear__`, if nobody holds a borrow.
    pub fn take_in_gc(&self) -> Option<RefMut<'_, T>> {
        self.cell.try_borrow_mut().ok()
    }

    /// Claim the loop for the calling thread (start of `run_forever`).
    pub fn claim(&self) -> bool {
        self.owner
            .compare_exchange(0, current_thread(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Give the loop up (end of `run_forever`).
    pub fn release(&self) {
        self.owner.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn idle_loop_admits_any_thread() {
        let owned = Arc::new(Owned::new(0u32));
        *owned.try_borrow_mut().ok().unwrap() += 1;
        let other = Arc::clone(&owned);
        let admitted = std::thread::spawn(move || other.admits_current())
            .join()
            .unwrap();
        assert!(admitted);
    }

    #[test]
    fn running_loop_admits_only_its_thread() {
        let owned = Arc::new(Owned::new(0u32));
        assert!(owned.claim());
        assert!(!owned.claim(), "a second run is refused");
        assert_eq!(owned.owner(), current_thread());
        assert!(owned.try_borrow_mut().is_ok());
        let other = Arc::clone(&owned);
        let refused =
            std::thread::spawn(move || matches!(other.try_borrow_mut(), Err(Refused::OtherThread)))
                .join()
                .unwrap();
        assert!(refused);
        owned.release();
        assert_eq!(owned.owner(), 0);
    }

    #[test]
    fn reentrant_borrow_is_refused_not_a_panic() {
        let owned = Owned::new(0u32);
        let _held = owned.try_borrow_mut().ok().unwrap();
        assert!(matches!(owned.try_borrow_mut(), Err(Refused::Busy)));
        assert!(
            owned.peek_in_gc().is_none(),
            "the collector skips a borrowed loop"
        );
    }

    #[test]
    fn thread_ids_are_distinct() {
        let here = current_thread();
        let there = std::thread::spawn(current_thread).join().unwrap();
        assert_ne!(here, there);
        assert_ne!(here, 0);
    }
}
