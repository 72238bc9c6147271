//! The read buffer every stream on a thread reads into, and the read size
//! policy: one read of up to [`READ_SIZE`] bytes per readiness event, into
//! one buffer per thread (a loop runs on one thread), so an idle
//! connection holds no read buffer at all and a busy one copies out only
//! what arrived.
//!
//! A read of [`BULK_READ`] or more says large messages are arriving: a
//! stream's [`ReadSizer`] then sends its next reads straight into the
//! object the caller hands on (no copy), sized from the last read with some
//! room to spare, so no syscall is spent asking the kernel how much is
//! waiting: a short read is shrunk in place (`realloc` on the heap, no
//! copy). Those allocations stay below [`DIRECT_READ_MAX`], under glibc's
//! initial mmap threshold (128 KiB): in a process whose allocator never
//! raised it, a larger one would be an mmap, page faults and an munmap per
//! read (what asyncio's `recv(256 KiB)` pays there). A read that fills its
//! object may be followed by more: the next one is as large as a direct
//! read may be.

use std::cell::RefCell;

/// asyncio's `max_size` for one read (256 KiB).
pub const READ_SIZE: usize = crate::stream::DEFAULT_READ_BUFFER;

/// Reads of at least this much are "bulk" (see the module docs): from
/// here on a copy costs more than shrinking an allocation in place.
pub const BULK_READ: usize = 8 * 1024;

/// The largest read straight into the caller's object (see the module
/// docs): 124 KiB, so that with its allocator's headers it stays below 128
/// KiB.
pub const DIRECT_READ_MAX: usize = 124 * 1024;

/// Room to spare in a direct read, past what the last read returned: an
/// eighth of it, rounded up to whole pages.
const DIRECT_SLACK_DIVISOR: usize = 8;
const PAGE: usize = 4096;

/// Where a stream's next read goes (see the module docs): the thread's
/// buffer, or straight into an object of [`ReadSizer::direct`] bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadSizer {
    /// 0: into the thread's buffer.
    direct: usize,
}

impl ReadSizer {
    /// `Some(size)`: read straight into an object of `size` bytes.
    pub fn direct(&self) -> Option<usize> {
        (self.direct > 0).then_some(self.direct)
    }

    /// A read into `capacity` bytes returned `n` (0 for EOF or nothing).
    pub fn record(&mut self, n: usize, capacity: usize) {
        self.direct = if n < BULK_READ {
            0
        } else if n >= capacity {
            DIRECT_READ_MAX
        } else {
            (n + n / DIRECT_SLACK_DIVISOR)
                .next_multiple_of(PAGE)
                .min(DIRECT_READ_MAX)
        };
    }
}

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` with this thread's read buffer ([`READ_SIZE`] bytes). `f` must
/// not run code that reads through it again (it would get a fresh buffer
/// of its own, not an error).
pub fn with_read_buffer<R>(f: impl FnOnce(&mut [u8]) -> R) -> R {
    BUFFER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() != READ_SIZE {
                // Zeroed by the allocator (calloc: fresh pages are not
                // written), so only the pages reads reach become resident.
                *buf = vec![0; READ_SIZE];
            }
            f(&mut buf)
        }
        Err(_) => f(&mut vec![0; READ_SIZE]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_reads_use_the_shared_buffer() {
        let mut sizer = ReadSizer::default();
        assert_eq!(sizer.direct(), None);
        sizer.record(BULK_READ - 1, READ_SIZE);
        assert_eq!(sizer.direct(), None);
        sizer.record(0, READ_SIZE);
        assert_eq!(sizer.direct(), None);
    }

    #[test]
    fn bulk_reads_go_direct_with_room_to_spare() {
        let mut sizer = ReadSizer::default();
        sizer.record(100 * 1024, READ_SIZE);
        let size = sizer.direct().unwrap();
        assert!(size > 100 * 1024 && size <= DIRECT_READ_MAX, "{size}");
        assert_eq!(size % PAGE, 0);
        // The same message size again: the same direct size.
        sizer.record(100 * 1024, size);
        assert_eq!(sizer.direct(), Some(size));
        // A full read: as large as a direct read may be.
        sizer.record(size, size);
        assert_eq!(sizer.direct(), Some(DIRECT_READ_MAX));
        sizer.record(READ_SIZE, READ_SIZE);
        assert_eq!(sizer.direct(), Some(DIRECT_READ_MAX));
        // Small messages again: back to the shared buffer.
        sizer.record(10, DIRECT_READ_MAX);
        assert_eq!(sizer.direct(), None);
        // The smallest bulk read: a page or more of room.
        sizer.record(BULK_READ, READ_SIZE);
        assert_eq!(
            sizer.direct(),
            Some((BULK_READ + BULK_READ / 8).next_multiple_of(PAGE))
        );
    }
}
