//! A cell for pyclass fields that change only while the GIL is held.
//!
//! With the GIL (every build this module declares `gil_used` for), holding
//! `Python<'_>` means no other thread runs Python or touches such a field, so
//! a plain `UnsafeCell` is enough and costs nothing on the per-callback path.
//! Free-threaded builds get a mutex with the same interface.

use pyo3::Python;

#[cfg(not(Py_GIL_DISABLED))]
pub struct GilCell<T>(std::cell::UnsafeCell<T>);

// SAFETY: the value is only reached through `with`, which requires the GIL
// (`Python<'_>`); GIL-holding threads are serialised, and `with`'s closure
// cannot run Python code that could re-enter (see its contract).
#[cfg(not(Py_GIL_DISABLED))]
unsafe impl<T: Send> Sync for GilCell<T> {}

#[cfg(not(Py_GIL_DISABLED))]
impl<T> GilCell<T> {
    pub fn new(value: T) -> Self {
        GilCell(std::cell::UnsafeCell::new(value))
    }

    /// Exclusive access for the duration of `f`. `f` must not run Python
    /// code (no calls, no decref that could free an object): take values
    /// out and drop them after `with` returns.
    #[inline]
    pub fn with<R>(&self, _py: Python<'_>, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: see the `Sync` impl: the GIL serialises threads and `f`
        // does not re-enter, so this is the only live reference.
        f(unsafe { &mut *self.0.get() })
    }

    /// `with` for the garbage collector's `__traverse__`/`__clear__`, which
    /// run with the GIL held but get no `Python` token.
    ///
    /// # Safety
    /// Call only from `__traverse__` or `__clear__`; `f` as for `with`.
    #[inline]
    pub unsafe fn with_in_gc<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: the collector holds the GIL; the caller promises the rest.
        f(unsafe { &mut *self.0.get() })
    }
}

#[cfg(Py_GIL_DISABLED)]
pub struct GilCell<T>(std::sync::Mutex<T>);

#[cfg(Py_GIL_DISABLED)]
impl<T> GilCell<T> {
    pub fn new(value: T) -> Self {
        GilCell(std::sync::Mutex::new(value))
    }

    #[inline]
    pub fn with<R>(&self, _py: Python<'_>, f: impl FnOnce(&mut T) -> R) -> R {
        let mut guard = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut guard)
    }

    /// # Safety
    /// Only from `__traverse__`/`__clear__`. A value whose lock is held by a
    /// thread the collector stopped is skipped (reported as `None`).
    #[inline]
    pub unsafe fn with_in_gc<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        self.0.try_lock().ok().map(|mut guard| f(&mut guard))
    }
}
