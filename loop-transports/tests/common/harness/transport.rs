//! [`Transport`]: the handle a Rust protocol writes and closes through.
//!
//! Re-entrancy design: the driver owns each connection's protocol, and the
//! connection's [`StreamCore`] sits in a `RefCell` shared with its
//! `Transport` handles. The driver borrows the core only for the duration
//! of one core call and never while a protocol callback runs, so a callback
//! may call any `Transport` method; the call runs at once on the core, and
//! whatever events it causes (pause writing, connection lost) are queued in
//! the core. The handle marks its connection dirty, and the driver delivers
//! those events after the current callback returns (or, for calls made
//! outside any callback, at the start of the next turn).

use loop_transports::{Chunk, Error, StreamCore, StreamStats, Write};
use socket2::SockAddr;
use std::cell::{Cell, RefCell, RefMut};
use std::os::fd::RawFd;
use std::rc::Rc;

/// Connections touched through a `Transport` since the driver last looked.
#[derive(Debug, Default)]
pub(super) struct DirtyList {
    tokens: RefCell<Vec<usize>>,
}

impl DirtyList {
    pub(super) fn take(&self) -> Vec<usize> {
        std::mem::take(&mut *self.tokens.borrow_mut())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.tokens.borrow().is_empty()
    }
}

#[derive(Debug)]
struct Shared {
    core: RefCell<StreamCore>,
    token: usize,
    marked: Cell<bool>,
    dirty: Rc<DirtyList>,
}

/// A cheap, cloneable handle to one driven stream connection, with asyncio's
/// transport methods.
#[derive(Clone, Debug)]
pub struct Transport {
    shared: Rc<Shared>,
}

impl Transport {
    pub(super) fn new(core: StreamCore, token: usize, dirty: Rc<DirtyList>) -> Transport {
        Transport {
            shared: Rc::new(Shared {
                core: RefCell::new(core),
                token,
                marked: Cell::new(false),
                dirty,
            }),
        }
    }

    /// Borrow the core for one call. Only fails if a core call is already
    /// running, which the safe API cannot cause (cores run no user code).
    pub(super) fn core(&self) -> Result<RefMut<'_, StreamCore>, Error> {
        self.shared
            .core
            .try_borrow_mut()
            .map_err(|_| Error::Reentrant)
    }

    pub(super) fn clear_mark(&self) {
        self.shared.marked.set(false);
    }

    /// Run `f` on the core and tell the driver this connection changed.
    fn with<R>(&self, f: impl FnOnce(&mut StreamCore) -> R) -> Result<R, Error> {
        let result = f(&mut *self.core()?);
        if !self.shared.marked.replace(true) {
            self.shared
                .dirty
                .tokens
                .borrow_mut()
                .push(self.shared.token);
        }
        Ok(result)
    }

    fn read<R>(&self, f: impl FnOnce(&StreamCore) -> R) -> Option<R> {
        self.shared.core.try_borrow().ok().map(|core| f(&core))
    }

    pub fn write(&self, data: &[u8]) -> Result<Write, Error> {
        self.with(|core| core.write(data))?
    }

    /// All buffers in one vectored write.
    pub fn writelines(&self, bufs: &[&[u8]]) -> Result<Write, Error> {
        self.with(|core| core.write_vectored(bufs))?
    }

    /// Hand over owned bytes; the unsent rest is buffered without a copy.
    pub fn write_chunk(&self, chunk: impl Into<Chunk>) -> Result<Write, Error> {
        let chunk = chunk.into();
        self.with(move |core| core.write_chunk(chunk))?
    }

    pub fn write_eof(&self) -> Result<(), Error> {
        self.with(StreamCore::write_eof)?
    }

    pub fn can_write_eof(&self) -> bool {
        self.read(StreamCore::can_write_eof).unwrap_or(false)
    }

    /// Flush, then close; `connection_lost(None)` follows.
    pub fn close(&self) {
        let _ = self.with(StreamCore::close);
    }

    /// Close now, dropping buffered data; `connection_lost(None)` follows.
    pub fn abort(&self) {
        let _ = self.with(StreamCore::abort);
    }

    pub fn pause_reading(&self) {
        let _ = self.with(StreamCore::pause_reading);
    }

    pub fn resume_reading(&self) {
        let _ = self.with(StreamCore::resume_reading);
    }

    pub fn is_reading(&self) -> bool {
        self.read(StreamCore::is_reading).unwrap_or(false)
    }

    pub fn is_closing(&self) -> bool {
        self.read(StreamCore::is_closing).unwrap_or(true)
    }

    pub fn get_write_buffer_size(&self) -> usize {
        self.read(StreamCore::get_write_buffer_size).unwrap_or(0)
    }

    /// `(low, high)`.
    pub fn get_write_buffer_limits(&self) -> (usize, usize) {
        self.read(StreamCore::get_write_buffer_limits)
            .unwrap_or((0, 0))
    }

    pub fn set_write_buffer_limits(
        &self,
        high: Option<i64>,
        low: Option<i64>,
    ) -> Result<(), Error> {
        self.with(|core| core.set_write_buffer_limits(high, low))?
    }

    pub fn stats(&self) -> StreamStats {
        self.read(StreamCore::stats).unwrap_or_default()
    }

    /// Chunks waiting in the write buffer.
    pub fn buffered_chunks(&self) -> usize {
        self.read(StreamCore::buffered_chunks).unwrap_or(0)
    }

    pub fn fd(&self) -> RawFd {
        self.read(StreamCore::fd).unwrap_or(-1)
    }

    pub fn local_addr(&self) -> Result<SockAddr, Error> {
        self.read(StreamCore::local_addr)
            .unwrap_or(Err(Error::Reentrant))
    }

    pub fn peer_addr(&self) -> Result<SockAddr, Error> {
        self.read(StreamCore::peer_addr)
            .unwrap_or(Err(Error::Reentrant))
    }
}
