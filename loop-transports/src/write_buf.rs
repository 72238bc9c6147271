//! The write buffer: only what the kernel did not take, as a queue of chunks
//! flushed with one `writev` per call.
//!
//! A remainder given as a borrowed slice must be copied; an owned
//! [`Chunk`] is queued as is. Small copies are appended to the tail chunk so
//! a burst of tiny writes does not become a long iovec list.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::Arc;

/// Copies up to this size are appended to the tail chunk when it has room.
const COALESCE_MAX: usize = 4096;
/// A tail chunk stops taking appended copies at this size.
const TAIL_CAP: usize = 64 * 1024;
/// iovecs per `writev` (Linux allows 1024; more buys nothing here): a
/// vectored write of more buffers must join them first.
pub const MAX_IOV: usize = 64;

/// Bytes handed to a transport by value, so they need not be copied.
///
/// Only standard owned byte containers are accepted: dropping them runs no
/// user code, so a core can drop buffered data while borrowed. All of them
/// are `Send`, so a core can move to another thread (and sit in a Python
/// object).
#[derive(Debug)]
pub struct Chunk(Repr);

#[derive(Debug)]
enum Repr {
    Vec(Vec<u8>),
    Boxed(Box<[u8]>),
    Arc(Arc<[u8]>),
    Static(&'static [u8]),
}

impl Chunk {
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Vec(v) => v,
            Repr::Boxed(b) => b,
            Repr::Arc(a) => a,
            Repr::Static(s) => s,
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<Vec<u8>> for Chunk {
    fn from(v: Vec<u8>) -> Chunk {
        Chunk(Repr::Vec(v))
    }
}

impl From<Box<[u8]>> for Chunk {
    fn from(b: Box<[u8]>) -> Chunk {
        Chunk(Repr::Boxed(b))
    }
}

impl From<Arc<[u8]>> for Chunk {
    fn from(a: Arc<[u8]>) -> Chunk {
        Chunk(Repr::Arc(a))
    }
}

impl From<&'static [u8]> for Chunk {
    fn from(s: &'static [u8]) -> Chunk {
        Chunk(Repr::Static(s))
    }
}

/// Queued output. `head` bytes of the front chunk were already written.
#[derive(Debug, Default)]
pub(crate) struct WriteBuffer {
    chunks: VecDeque<Chunk>,
    head: usize,
    len: usize,
}

impl WriteBuffer {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of queued chunks (diagnostics and tests).
    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Queue a copy of `data`.
    pub(crate) fn push_copy(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.len += data.len();
        if data.len() <= COALESCE_MAX {
            if let Some(Chunk(Repr::Vec(tail))) = self.chunks.back_mut() {
                if tail.len() + data.len() <= TAIL_CAP {
                    tail.extend_from_slice(data);
                    return;
                }
            }
        }
        self.chunks.push_back(Chunk::from(data.to_vec()));
    }

    /// Queue `chunk` from byte `offset` on (the part before was written).
    pub(crate) fn push_chunk(&mut self, chunk: Chunk, offset: usize) {
        let offset = offset.min(chunk.len());
        if offset == chunk.len() {
            return;
        }
        if self.chunks.is_empty() {
            self.head = offset;
        } else if offset > 0 {
            // Only the front chunk may start at an offset.
            self.push_copy(&chunk.as_slice()[offset..]);
            return;
        }
        self.len += chunk.len() - offset;
        self.chunks.push_back(chunk);
    }

    /// Fill `out` with the queued bytes, in order; returns how many slices.
    pub(crate) fn io_slices<'a>(&'a self, out: &mut [IoSlice<'a>]) -> usize {
        let mut n = 0;
        for (i, chunk) in self.chunks.iter().enumerate() {
            if n == out.len() {
                break;
            }
            let bytes = chunk.as_slice();
            let bytes = if i == 0 { &bytes[self.head..] } else { bytes };
            out[n] = IoSlice::new(bytes);
            n += 1;
        }
        n
    }

    /// Drop the first `n` queued bytes (they were written).
    pub(crate) fn consume(&mut self, mut n: usize) {
        n = n.min(self.len);
        self.len -= n;
        while n > 0 {
            let Some(front) = self.chunks.front() else {
                break;
            };
            let left = front.len() - self.head;
            if n >= left {
                n -= left;
                self.head = 0;
                self.chunks.pop_front();
            } else {
                self.head += n;
                n = 0;
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        self.chunks.clear();
        self.head = 0;
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(buf: &WriteBuffer) -> Vec<u8> {
        let mut slices = [IoSlice::new(&[]); MAX_IOV];
        let n = buf.io_slices(&mut slices);
        slices[..n].iter().flat_map(|s| s.iter().copied()).collect()
    }

    #[test]
    fn small_copies_coalesce_large_ones_do_not() {
        let mut buf = WriteBuffer::default();
        buf.push_copy(b"ab");
        buf.push_copy(b"cd");
        assert_eq!(buf.chunk_count(), 1);
        buf.push_copy(&[b'x'; COALESCE_MAX + 1]);
        assert_eq!(buf.chunk_count(), 2);
        assert_eq!(buf.len(), 4 + COALESCE_MAX + 1);
    }

    #[test]
    fn owned_chunk_keeps_its_offset_and_consume_walks_chunks() {
        let mut buf = WriteBuffer::default();
        buf.push_chunk(Chunk::from(b"hello".to_vec()), 2);
        buf.push_copy(b"!!");
        assert_eq!(buf.chunk_count(), 1, "appended to the owned tail");
        assert_eq!(contents(&buf), b"llo!!");
        buf.consume(1);
        assert_eq!(contents(&buf), b"lo!!");
        buf.consume(3);
        assert_eq!(contents(&buf), b"!");
        assert_eq!(buf.len(), 1);
        buf.consume(10);
        assert!(buf.is_empty());
        assert_eq!(buf.chunk_count(), 0);
    }

    #[test]
    fn slices_are_capped() {
        let mut buf = WriteBuffer::default();
        for _ in 0..(MAX_IOV + 5) {
            buf.push_chunk(Chunk::from(vec![1u8; COALESCE_MAX + 1]), 0);
        }
        let mut slices = [IoSlice::new(&[]); MAX_IOV];
        assert_eq!(buf.io_slices(&mut slices), MAX_IOV);
    }
}
