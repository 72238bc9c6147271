//! The read buffer every stream on a thread reads into, and the read size
//! policy: one read of up to [`READ_SIZE`] bytes per readiness event, into
//! one buffer per thread (a loop runs on one thread), so an idle
//! connection holds no read buffer at all and a busy one copies out only
//! what arrived.
//!
//! A read that fills [`BULK_READ`] or more says a large message is
//! arriving: the caller may then size its next read from what the kernel
//! has waiting ([`crate::sys::pending_input`]) and read straight into the
//! object it hands on, skipping the copy.

use std::cell::RefCell;

/// asyncio's `max_size` for one read (256 KiB).
pub const READ_SIZE: usize = crate::stream::DEFAULT_READ_BUFFER;

/// Reads of at least this much are "bulk" (see the module docs).
pub const BULK_READ: usize = 64 * 1024;

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
                buf.resize(READ_SIZE, 0);
            }
            f(&mut buf)
        }
        Err(_) => f(&mut vec![0; READ_SIZE]),
    })
}
