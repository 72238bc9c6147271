//! Always-on loop counters (`loop.stats()`).
//!
//! Cheap by construction: every counter is a plain integer bumped where the
//! loop already handles the thing it counts (a tick, a poll, a batch of
//! callbacks swapped out, a due timer popped), never a new step per
//! callback, and the clock is read only around polls that can block (where
//! the loop is about to sleep anyway) and once per `run_forever`.
//!
//! Utilization is `busy / (busy + poll)` over the wall time the loop spent
//! inside `run_forever`: time between runs counts as neither.

/// The counters of one loop. Single-threaded: it lives in the loop's state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoopStats {
    /// Loop iterations.
    pub ticks: u64,
    /// Poller waits (a tick with nothing registered and nothing to wait for
    /// skips the syscall and is not a poll).
    pub polls: u64,
    /// Waits with a non-zero timeout.
    pub blocking_polls: u64,
    /// Wall time blocked in those waits.
    pub poll_seconds: f64,
    /// Handles taken from the ready queue to run.
    pub callbacks: u64,
    /// Due timers moved to the ready queue.
    pub timers_fired: u64,
    /// Scheduled timers cancelled (counted when the loop learns of it).
    pub timers_cancelled: u64,
    /// Items received through the injector: `call_soon_threadsafe` from
    /// other threads or onto a loop not running (the running loop's own
    /// thread queues directly).
    pub threadsafe_calls: u64,
    /// Wall time inside finished runs.
    run_seconds: f64,
    /// Start of the current run, if one is in progress.
    run_started: Option<f64>,
}

impl LoopStats {
    pub fn new() -> Self {
        Self::default()
    }

    /// `run_forever` began at `now`.
    pub fn run_started(&mut self, now: f64) {
        self.run_started = Some(now);
    }

    /// `run_forever` ended at `now`.
    pub fn run_ended(&mut self, now: f64) {
        if let Some(start) = self.run_started.take() {
            self.run_seconds += (now - start).max(0.0);
        }
    }

    /// A poll that did not block.
    #[inline]
    pub fn note_poll(&mut self) {
        self.polls += 1;
    }

    /// A poll that could block and took `seconds`.
    #[inline]
    pub fn note_blocking_poll(&mut self, seconds: f64) {
        self.polls += 1;
        self.blocking_polls += 1;
        self.poll_seconds += seconds.max(0.0);
    }

    /// Wall time spent in runs up to `now`.
    pub fn run_seconds(&self, now: f64) -> f64 {
        let current = self.run_started.map_or(0.0, |s| (now - s).max(0.0));
        self.run_seconds + current
    }

    /// Wall time the loop ran and was not blocked in a poll.
    pub fn busy_seconds(&self, now: f64) -> f64 {
        (self.run_seconds(now) - self.poll_seconds).max(0.0)
    }

    /// `busy / (busy + poll)`, in 0..=1; 0.0 before the loop first ran.
    pub fn utilization(&self, now: f64) -> f64 {
        let busy = self.busy_seconds(now);
        let total = busy + self.poll_seconds;
        if total > 0.0 {
            (busy / total).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilization_is_zero_before_the_first_run() {
        let stats = LoopStats::new();
        assert_eq!(stats.utilization(100.0), 0.0);
        assert_eq!(stats.busy_seconds(100.0), 0.0);
    }

    #[test]
    fn busy_is_run_time_minus_poll_time() {
        let mut stats = LoopStats::new();
        stats.run_started(10.0);
        stats.note_blocking_poll(3.0);
        stats.note_poll();
        // Mid-run: the current run counts up to `now`.
        assert_eq!(stats.busy_seconds(14.0), 1.0);
        assert_eq!(stats.utilization(14.0), 0.25);
        stats.run_ended(14.0);
        // Between runs the clock does not count.
        assert_eq!(stats.busy_seconds(50.0), 1.0);
        stats.run_started(50.0);
        stats.run_ended(52.0);
        assert_eq!(stats.busy_seconds(60.0), 3.0);
        assert_eq!(stats.utilization(60.0), 0.5);
        assert_eq!((stats.polls, stats.blocking_polls), (2, 1));
    }

    #[test]
    fn a_clock_step_backwards_never_goes_negative() {
        let mut stats = LoopStats::new();
        stats.run_started(10.0);
        stats.note_blocking_poll(-1.0);
        assert_eq!(stats.poll_seconds, 0.0);
        assert_eq!(stats.busy_seconds(9.0), 0.0);
        stats.run_ended(9.0);
        assert_eq!(stats.utilization(9.0), 0.0);
    }
}
