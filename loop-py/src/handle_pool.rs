//! Emptied `call_soon` handles kept for reuse (see `handle::AnyHandle::release`).

use crate::handle::Handle;
use pyo3::prelude::*;

/// Emptied `call_soon` handles of one loop, ready for reuse.
#[derive(Default)]
pub struct HandlePool {
    free: Vec<Py<Handle>>,
}

impl HandlePool {
    /// Enough for the callbacks another thread queues with
    /// `call_soon_threadsafe` in one GIL switch interval (5 ms: about
    /// 28,000 in `threadsafe_throughput`, which the loop then runs in one
    /// tick); more are simply freed. 8,192 → 32,768 took that workload up
    /// ~5 % (15 paired rounds). An emptied handle is 112 bytes: at most
    /// ~3.5 MiB while bursts come, trimmed to
    /// [`IDLE_CAPACITY`](Self::IDLE_CAPACITY) once the loop has slept for
    /// a second.
    const CAPACITY: usize = 32_768;

    /// What an idle loop keeps (~0.9 MiB): 1,024 → 16,384 took `call_soon`
    /// in a 10,000-callback burst from 147 to 123 ns; 8,192 keeps most of
    /// that for half the memory.
    const IDLE_CAPACITY: usize = 8192;

    /// A blocking poll at least this long makes the loop idle.
    pub const IDLE_SECONDS: f64 = 1.0;

    pub fn take(&mut self) -> Option<Py<Handle>> {
        self.free.pop()
    }

    /// Keep an emptied handle (see [`AnyHandle::release`]); a full pool
    /// hands it back to be freed.
    pub fn put(&mut self, handle: Py<Handle>) -> Option<Py<Handle>> {
        if self.free.len() < Self::CAPACITY {
            self.free.push(handle);
            None
        } else {
            Some(handle)
        }
    }

    /// The handles past [`IDLE_CAPACITY`](Self::IDLE_CAPACITY), to free
    /// (the loop slept for [`IDLE_SECONDS`](Self::IDLE_SECONDS)).
    pub fn trim_idle(&mut self) -> Vec<Py<Handle>> {
        if self.free.len() > Self::IDLE_CAPACITY {
            self.free.split_off(Self::IDLE_CAPACITY)
        } else {
            Vec::new()
        }
    }

    pub fn clear(&mut self) -> Vec<Py<Handle>> {
        std::mem::take(&mut self.free)
    }
}
