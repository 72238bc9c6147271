//! The Date header value: IMF-fixdate (RFC 9110 §5.6.7), e.g.
//! `Sun, 06 Nov 1994 08:49:37 GMT`, cached per second.

use std::time::{SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate.
const LEN: usize = 29;

/// 9999-12-31T23:59:59Z: the last instant with a four-digit year.
const MAX_SECS: u64 = 253_402_300_799;

/// Formats the current time as IMF-fixdate, at most once per second.
#[derive(Clone, Debug)]
pub struct DateCache {
    secs: u64,
    buf: [u8; LEN],
}

impl Default for DateCache {
    fn default() -> Self {
        DateCache::new()
    }
}

impl DateCache {
    pub fn new() -> Self {
        let secs = now_secs();
        DateCache {
            secs,
            buf: format(secs),
        }
    }

    /// The current time as IMF-fixdate, reformatted only when the second
    /// has changed since the last call.
    pub fn get(&mut self) -> &[u8] {
        let secs = now_secs();
        if secs != self.secs {
            self.secs = secs;
            self.buf = format(secs);
        }
        &self.buf
    }
}

fn now_secs() -> u64 {
    // A clock before 1970 is a broken clock; 1970 is as good a date as any.
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// IMF-fixdate of `secs` seconds after the Unix epoch (UTC).
pub(crate) fn format(secs: u64) -> [u8; LEN] {
    const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
    const MONTHS: [&[u8; 3]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let secs = secs.min(MAX_SECS);
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);

    let mut out = *b"Thu, 01 Jan 1970 00:00:00 GMT";
    // 1970-01-01 was a Thursday.
    out[..3].copy_from_slice(DAYS[(days % 7) as usize]);
    two_digits(&mut out[5..7], day);
    out[8..11].copy_from_slice(MONTHS[(month - 1) as usize]);
    two_digits(&mut out[12..14], year / 100);
    two_digits(&mut out[14..16], year % 100);
    two_digits(&mut out[17..19], rem / 3600);
    two_digits(&mut out[20..22], rem / 60 % 60);
    two_digits(&mut out[23..25], rem % 60);
    out
}

fn two_digits(out: &mut [u8], n: u64) {
    out[0] = b'0' + (n / 10 % 10) as u8;
    out[1] = b'0' + (n % 10) as u8;
}

/// (year, month 1..=12, day 1..=31) of a day count since 1970-01-01, in the
/// proleptic Gregorian calendar: shift to a year starting in March so the
/// leap day is last, then count 400-year eras (Howard Hinnant's method).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z / 146_097;
    let doe = z % 146_097; // day of era, 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of March-based year
    let mp = (5 * doy + 2) / 153; // March = 0
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(secs: u64) -> String {
        String::from_utf8(format(secs).to_vec()).unwrap()
    }

    #[test]
    fn known_dates() {
        assert_eq!(fmt(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(fmt(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT"); // RFC 9110's example
        assert_eq!(fmt(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT"); // 400-year leap day
        assert_eq!(fmt(1_709_164_800), "Thu, 29 Feb 2024 00:00:00 GMT");
        assert_eq!(fmt(4_107_542_399), "Sun, 28 Feb 2100 23:59:59 GMT"); // 2100 is no leap year
        assert_eq!(fmt(4_107_542_400), "Mon, 01 Mar 2100 00:00:00 GMT");
        assert_eq!(fmt(4_133_980_800), "Sat, 01 Jan 2101 00:00:00 GMT");
        assert_eq!(fmt(MAX_SECS), "Fri, 31 Dec 9999 23:59:59 GMT");
        assert_eq!(fmt(u64::MAX), "Fri, 31 Dec 9999 23:59:59 GMT");
    }

    #[test]
    fn matches_a_day_by_day_walk() {
        // Walk the calendar naively for 300 years and compare.
        let days_in_month = |y: u64, m: u64| match m {
            2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let (mut y, mut m, mut d) = (1970, 1, 1);
        for days in 0..(300 * 366) {
            assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
            d += 1;
            if d > days_in_month(y, m) {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }

    #[test]
    fn cache_is_well_formed() {
        let mut cache = DateCache::new();
        let value = cache.get().to_vec();
        assert_eq!(value.len(), 29);
        assert!(value.ends_with(b" GMT"));
        assert_eq!(&value[3..5], b", ");
    }
}
