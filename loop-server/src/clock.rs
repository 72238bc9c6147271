//! The driver's clock: `time.monotonic()`-compatible seconds
//! ([`Monotonic`], loop-core's clock), or a clock a test moves by hand
//! ([`ManualClock`]) so deadlines are reached without waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub trait Clock: Send + Sync {
    /// Seconds; never goes back.
    fn now(&self) -> f64;
}

/// The process's monotonic clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct Monotonic;

impl Clock for Monotonic {
    fn now(&self) -> f64 {
        loop_core::clock::monotonic()
    }
}

/// A clock that moves only when told to.
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn new(start: f64) -> Self {
        ManualClock(Arc::new(AtomicU64::new(start.to_bits())))
    }

    pub fn advance(&self, seconds: f64) {
        let now = self.now() + seconds.max(0.0);
        self.0.store(now.to_bits(), Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}
