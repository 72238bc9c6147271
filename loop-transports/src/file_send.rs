//! [`FileSend`]: a region of a file sent on a [`LayeredStream`] without
//! reading it into memory, as the socket accepts it.
//!
//! A plain stream on Linux gets the bytes with `sendfile(2)`, straight from
//! the page cache. A stream with a byte-stream layer (TLS) must see the
//! application bytes, so the file is read (`pread`) one bounded chunk at a
//! time and written through the layer, the next chunk only once the core's
//! buffer is empty. Either way memory stays bounded by one chunk whatever
//! the file's size or the reader's speed.
//!
//! The caller calls [`FileSend::advance`] once the bytes written before the
//! file left (it does nothing while the core buffers any), and again on
//! each writability report until it says [`FileProgress::Done`]. The
//! stream's buffered-bytes count is the caller's flow control as for any
//! write; the file adds at most one chunk to it.

use crate::error::{Error, Op};
use crate::layer::LayeredStream;
use crate::stream::Write;
use crate::sys;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Bytes read per `pread` when a layer needs the data (what the core may
/// hold of the file at once).
pub const LAYERED_CHUNK: usize = 64 * 1024;
/// Bytes one `advance` sends before it yields to other connections, even
/// when the socket would take more (a fast loopback reader would otherwise
/// get a 100 MiB file in one callback).
pub const ADVANCE_BUDGET: u64 = 1024 * 1024;

/// What [`FileSend::advance`] got done.
#[derive(Debug)]
pub enum FileProgress {
    /// Every byte is with the kernel (or, through a layer, with the core's
    /// write buffer).
    Done,
    /// The socket is full, the core still buffers earlier bytes, or this
    /// call's budget is spent: advance again once the fd is writable.
    Pending,
    /// The file ended before the region did (it shrank after it was
    /// opened); what it had was sent.
    Short,
    /// The stream was lost while sending (its closed event says why).
    Lost,
    /// The file could not be read.
    Failed(Error),
}

/// A file region on its way to a stream (see the module docs). Dropping it
/// closes the file.
#[derive(Debug)]
pub struct FileSend {
    file: File,
    offset: u64,
    left: u64,
    /// The layered path's read buffer, made on first use.
    scratch: Vec<u8>,
}

impl FileSend {
    /// `count` bytes of `file` from `offset` (the file's own position is
    /// neither used nor moved).
    pub fn new(file: File, offset: u64, count: u64) -> Self {
        FileSend {
            file,
            offset,
            left: count,
            scratch: Vec::new(),
        }
    }

    /// Bytes not sent yet.
    pub fn left(&self) -> u64 {
        self.left
    }

    /// The file being sent.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The file offset the next byte comes from.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Send what the stream takes now, up to [`ADVANCE_BUDGET`] bytes.
    pub fn advance(&mut self, stream: &mut LayeredStream) -> FileProgress {
        if stream.core().is_closed() {
            return FileProgress::Lost;
        }
        if self.left == 0 {
            return FileProgress::Done;
        }
        if stream.buffered() > 0 {
            // What was written before the file goes first.
            return FileProgress::Pending;
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if !stream.has_layer() {
            return self.send_plain(stream);
        }
        self.send_read(stream)
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn send_plain(&mut self, stream: &mut LayeredStream) -> FileProgress {
        let out = stream.core().fd();
        let mut budget = ADVANCE_BUDGET;
        while self.left > 0 {
            if budget == 0 {
                return FileProgress::Pending;
            }
            let want = self.left.min(budget) as usize;
            let result = sys::sendfile(out, self.file.as_raw_fd(), &mut self.offset, want);
            stream.core_mut().count_write(&result);
            match result {
                Ok(0) => return FileProgress::Short,
                Ok(n) => {
                    self.left -= n as u64;
                    budget -= n as u64;
                }
                Err(e) if sys::is_would_block(&e) => return FileProgress::Pending,
                Err(e) => {
                    // sendfile does not say which fd failed: EIO, EINVAL and
                    // EOVERFLOW come from the file, the rest from the socket.
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EIO | libc::EINVAL | libc::EOVERFLOW)
                    ) {
                        return FileProgress::Failed(Error::os(Op::SendFile, e));
                    }
                    stream.core_mut().fail(Error::os(Op::SendFile, e));
                    return FileProgress::Lost;
                }
            }
        }
        FileProgress::Done
    }

    fn send_read(&mut self, stream: &mut LayeredStream) -> FileProgress {
        let mut budget = ADVANCE_BUDGET;
        while self.left > 0 {
            if budget == 0 || stream.buffered() > 0 {
                return FileProgress::Pending;
            }
            let want = self.left.min(LAYERED_CHUNK as u64) as usize;
            if self.scratch.len() < want {
                self.scratch.resize(want, 0);
            }
            let n = match sys::pread(
                self.file.as_raw_fd(),
                &mut self.scratch[..want],
                self.offset,
            ) {
                Ok(0) => return FileProgress::Short,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return FileProgress::Failed(Error::os(Op::ReadFile, e)),
            };
            match stream.write(&self.scratch[..n]) {
                Ok(Write::Accepted) if !stream.core().is_closed() => {}
                Ok(_) | Err(_) => return FileProgress::Lost,
            }
            self.offset += n as u64;
            self.left -= n as u64;
            budget = budget.saturating_sub(n as u64);
        }
        FileProgress::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{IoFd, StreamConfig, StreamCore};
    use std::io::{Read, Write as _};
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    fn temp_file(data: &[u8]) -> File {
        let dir = std::env::temp_dir();
        let path = dir.join(format!(
            "ferroloop-file-send-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let mut f = File::create(&path).expect("create");
        f.write_all(data).expect("write");
        let file = File::open(&path).expect("open");
        std::fs::remove_file(&path).expect("unlink");
        file
    }

    fn pair() -> (LayeredStream, UnixStream) {
        let (ours, peer) = UnixStream::pair().expect("socketpair");
        peer.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .expect("timeout");
        let core = StreamCore::socket(IoFd::owned(OwnedFd::from(ours)), &StreamConfig::default())
            .expect("core");
        (LayeredStream::plain(core), peer)
    }

    /// Advance until done, reading the peer side as a slow reader would.
    fn pump(send: &mut FileSend, stream: &mut LayeredStream, peer: &mut UnixStream) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = vec![0; 4096];
        loop {
            stream.on_writable();
            match send.advance(stream) {
                FileProgress::Done if stream.buffered() == 0 => break,
                FileProgress::Done | FileProgress::Pending => {}
                other => panic!("unexpected {other:?}"),
            }
            let n = peer.read(&mut buf).expect("read");
            got.extend_from_slice(&buf[..n]);
        }
        peer.set_nonblocking(true).expect("nonblocking");
        while let Ok(n) = peer.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn a_region_arrives_whole_after_what_was_buffered() {
        let data = pattern(3 * 1024 * 1024);
        let (mut stream, mut peer) = pair();
        // Fill the socket so the head is partly buffered by the core.
        let head = vec![b'H'; 512 * 1024];
        assert_eq!(stream.write(&head).expect("write"), Write::Accepted);
        let mut send = FileSend::new(temp_file(&data), 100, 2 * 1024 * 1024);
        let got = pump(&mut send, &mut stream, &mut peer);
        assert_eq!(&got[..head.len()], &head[..]);
        assert_eq!(&got[head.len()..], &data[100..100 + 2 * 1024 * 1024]);
        assert_eq!(send.left(), 0);
    }

    #[test]
    fn a_file_shorter_than_the_region_is_short() {
        let (mut stream, mut peer) = pair();
        let mut send = FileSend::new(temp_file(b"abc"), 0, 10);
        let mut outcome = send.advance(&mut stream);
        if matches!(outcome, FileProgress::Pending) {
            outcome = send.advance(&mut stream);
        }
        assert!(matches!(outcome, FileProgress::Short), "{outcome:?}");
        let mut buf = [0; 3];
        peer.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"abc");
    }

    #[test]
    fn a_gone_peer_loses_the_stream() {
        let (mut stream, peer) = pair();
        drop(peer);
        let mut send = FileSend::new(temp_file(&pattern(1 << 20)), 0, 1 << 20);
        let outcome = send.advance(&mut stream);
        assert!(matches!(outcome, FileProgress::Lost), "{outcome:?}");
        assert!(stream.take_closed().is_some());
    }

    /// XOR-ing layer: the file must pass through it, never around it.
    struct Xor;

    impl crate::ByteLayer for Xor {
        fn decode(&mut self, wire: &[u8], app: &mut Vec<u8>) -> Result<(), crate::LayerError> {
            app.extend(wire.iter().map(|b| b ^ 0x55));
            Ok(())
        }
        fn encode(&mut self, app: &[u8], wire: &mut Vec<u8>) -> Result<(), crate::LayerError> {
            wire.extend(app.iter().map(|b| b ^ 0x55));
            Ok(())
        }
        fn take_output(&mut self, _: &mut Vec<u8>) {}
        fn wants_read(&self) -> bool {
            false
        }
        fn close(&mut self, _: &mut Vec<u8>) {}
        fn eof(&mut self) -> crate::Eof {
            crate::Eof::Clean
        }
    }

    #[test]
    fn a_layered_stream_gets_the_file_through_its_layer_a_chunk_at_a_time() {
        let data = pattern(2 * 1024 * 1024 + 5);
        let (ours, mut peer) = UnixStream::pair().expect("socketpair");
        peer.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .expect("timeout");
        let core = StreamCore::socket(IoFd::owned(OwnedFd::from(ours)), &StreamConfig::default())
            .expect("core");
        let mut stream = LayeredStream::with_layer(core, Some(Box::new(Xor)));
        let mut send = FileSend::new(temp_file(&data), 0, data.len() as u64);
        let mut got = Vec::new();
        let mut buf = vec![0; 4096];
        loop {
            stream.on_writable();
            let outcome = send.advance(&mut stream);
            // Never more than one chunk of the file held in memory.
            assert!(stream.buffered() <= LAYERED_CHUNK, "{}", stream.buffered());
            match outcome {
                FileProgress::Done if stream.buffered() == 0 => break,
                FileProgress::Done | FileProgress::Pending => {}
                other => panic!("unexpected {other:?}"),
            }
            let n = peer.read(&mut buf).expect("read");
            got.extend(buf[..n].iter().map(|b| b ^ 0x55));
        }
        peer.set_nonblocking(true).expect("nonblocking");
        while let Ok(n) = peer.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend(buf[..n].iter().map(|b| b ^ 0x55));
        }
        assert_eq!(got.len(), data.len());
        assert!(got == data);
    }
}
