//! The loop clock: seconds as `f64` on the same clock as Python's
//! `time.monotonic()` (`CLOCK_MONOTONIC`), so deadlines computed in Rust and in
//! Python compare directly.

/// Current monotonic time in seconds.
#[inline]
pub fn monotonic() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC exists on
    // every unix we build for, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Resolution of [`monotonic`] in seconds (`time.get_clock_info("monotonic")`).
pub fn resolution() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as above; `ts` is valid for writes.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 1e-9;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Milliseconds for a blocking poll of `seconds`, rounded **up** so that a
/// poll never returns before a timer is due (which would spin a tick).
pub fn timeout_millis(seconds: f64) -> i32 {
    if seconds <= 0.0 || seconds.is_nan() {
        return 0;
    }
    let ms = (seconds * 1000.0).ceil();
    if ms >= i32::MAX as f64 {
        i32::MAX
    } else {
        ms as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_does_not_go_back() {
        let a = monotonic();
        let b = monotonic();
        assert!(b >= a);
        assert!(resolution() > 0.0 && resolution() < 0.01);
    }

    #[test]
    fn timeouts_round_up() {
        assert_eq!(timeout_millis(0.0), 0);
        assert_eq!(timeout_millis(-1.0), 0);
        assert_eq!(timeout_millis(f64::NAN), 0);
        assert_eq!(timeout_millis(0.0001), 1);
        assert_eq!(timeout_millis(0.001), 1);
        assert_eq!(timeout_millis(0.0011), 2);
        assert_eq!(timeout_millis(1e12), i32::MAX);
    }
}
