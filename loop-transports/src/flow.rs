//! Write-side flow control: asyncio's high/low water marks.
//!
//! The protocol is paused when the buffered size goes **above** `high` and
//! resumed when it drains to **at most** `low`; the `paused` flag makes each
//! crossing signal exactly once, as `_maybe_pause_protocol` /
//! `_maybe_resume_protocol` do.

use crate::Error;

/// asyncio's default high water mark (64 KiB).
pub const DEFAULT_HIGH_WATER: usize = 64 * 1024;

/// Validated write-buffer limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaterMarks {
    high: usize,
    low: usize,
}

impl Default for WaterMarks {
    fn default() -> Self {
        WaterMarks {
            high: DEFAULT_HIGH_WATER,
            low: DEFAULT_HIGH_WATER / 4,
        }
    }
}

impl WaterMarks {
    /// asyncio's `_set_write_buffer_limits`: `high` defaults to `4 * low`,
    /// or 64 KiB when both are missing; `low` defaults to `high // 4`; and
    /// `high >= low >= 0` must hold. Python ints beyond `i64` are the
    /// caller's to reject.
    pub fn new(high: Option<i64>, low: Option<i64>) -> Result<WaterMarks, Error> {
        let high = match (high, low) {
            (Some(h), _) => h,
            (None, None) => DEFAULT_HIGH_WATER as i64,
            (None, Some(l)) => l.saturating_mul(4),
        };
        // Python's `//` floors, as `div_euclid` does for a positive divisor.
        let low = low.unwrap_or_else(|| high.div_euclid(4));
        if !(high >= low && low >= 0) {
            return Err(Error::InvalidWaterMarks { high, low });
        }
        Ok(WaterMarks {
            high: usize::try_from(high).unwrap_or(usize::MAX),
            low: usize::try_from(low).unwrap_or(usize::MAX),
        })
    }

    pub fn high(&self) -> usize {
        self.high
    }

    pub fn low(&self) -> usize {
        self.low
    }
}

/// Pause state against a set of water marks.
#[derive(Debug, Default)]
pub(crate) struct Flow {
    pub(crate) marks: WaterMarks,
    paused: bool,
}

impl Flow {
    pub(crate) fn new(marks: WaterMarks) -> Flow {
        Flow {
            marks,
            paused: false,
        }
    }

    /// After the buffer grew to `size`: true when the protocol must be paused
    /// now.
    pub(crate) fn should_pause(&mut self, size: usize) -> bool {
        if size > self.marks.high && !self.paused {
            self.paused = true;
            return true;
        }
        false
    }

    /// After the buffer shrank to `size`: true when the protocol must be
    /// resumed now.
    pub(crate) fn should_resume(&mut self, size: usize) -> bool {
        if self.paused && size <= self.marks.low {
            self.paused = false;
            return true;
        }
        false
    }

    pub(crate) fn is_paused(&self) -> bool {
        self.paused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(high: Option<i64>, low: Option<i64>) -> (usize, usize) {
        let m = WaterMarks::new(high, low).unwrap();
        (m.high(), m.low())
    }

    #[test]
    fn defaults_follow_asyncio() {
        assert_eq!(marks(None, None), (65536, 16384));
        assert_eq!(marks(Some(1000), None), (1000, 250));
        assert_eq!(marks(None, Some(100)), (400, 100));
        assert_eq!(marks(Some(0), None), (0, 0));
        assert_eq!(marks(Some(7), Some(7)), (7, 7));
        assert_eq!(WaterMarks::default(), WaterMarks::new(None, None).unwrap());
    }

    #[test]
    fn invalid_limits_are_rejected_with_both_values() {
        for (h, l) in [(Some(1), Some(2)), (Some(-1), None), (None, Some(-1))] {
            let err = WaterMarks::new(h, l).unwrap_err();
            assert!(matches!(err, Error::InvalidWaterMarks { .. }), "{err:?}");
        }
        let err = WaterMarks::new(Some(-1), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "high (-1) must be >= low (-1) must be >= 0"
        );
    }

    #[test]
    fn each_crossing_signals_once() {
        let mut flow = Flow::new(WaterMarks::new(Some(10), Some(4)).unwrap());
        assert!(!flow.should_pause(10), "at high is not above high");
        assert!(flow.should_pause(11));
        assert!(!flow.should_pause(20), "already paused");
        assert!(!flow.should_resume(5));
        assert!(flow.should_resume(4));
        assert!(!flow.should_resume(0), "already resumed");
    }
}
