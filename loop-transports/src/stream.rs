//! [`StreamCore`]: a connected byte stream (socket or pipe) as a
//! sans-callback state machine.
//!
//! Each method makes the syscalls it needs and records what happened:
//! data comes back from [`StreamCore::read`] / [`StreamCore::read_into`];
//! everything else (connected, pause/resume writing, connection lost) is
//! queued and taken with [`StreamCore::next_event`]. After any call the
//! caller drains the events, delivers them to its protocol **with the core no
//! longer borrowed**, and registers [`StreamCore::interest`] with the
//! reactor. The core never calls user code, so a protocol may call back into
//! the transport (write, close, pause) from any callback.
//!
//! The fd is not closed when the connection is lost: the caller first
//! deregisters it (so no reused fd number can inherit the registration),
//! then calls [`StreamCore::close_fd`] or drops the core.

use crate::error::{Error, Op};
use crate::fd::IoFd;
use crate::flow::{Flow, WaterMarks};
use crate::socket;
use crate::sys;
use crate::write_buf::{Chunk, WriteBuffer, MAX_IOV};
use loop_core::Interest;
use socket2::{SockAddr, SockRef};
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::os::fd::{OwnedFd, RawFd};

/// asyncio's `max_size` for one read (256 KiB).
pub const DEFAULT_READ_BUFFER: usize = 256 * 1024;
/// Reads per readiness event before yielding to other connections. A read
/// that does not fill the buffer ends the batch early.
pub const DEFAULT_READS_PER_EVENT: usize = 4;
/// asyncio logs a warning for each write ignored after the connection was
/// lost once this many were ignored (`LOG_THRESHOLD_FOR_CONNLOST_WRITES`).
pub const LOG_THRESHOLD_FOR_CONNLOST_WRITES: u32 = 5;

/// Tunables of a stream.
#[derive(Clone, Debug)]
pub struct StreamConfig {
    /// Size of the reusable buffer behind [`StreamCore::read`].
    pub read_buffer_size: usize,
    /// Read syscalls per readiness event (see [`DEFAULT_READS_PER_EVENT`]).
    pub reads_per_event: usize,
    pub water_marks: WaterMarks,
    /// Set `TCP_NODELAY` on TCP sockets (asyncio does).
    pub nodelay: bool,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            read_buffer_size: DEFAULT_READ_BUFFER,
            reads_per_event: DEFAULT_READS_PER_EVENT,
            water_marks: WaterMarks::default(),
            nodelay: true,
        }
    }
}

/// What the fd is, which decides the syscalls and the meaning of EOF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// A connected socket: `recv`/`send`, `write_eof` is `shutdown(SHUT_WR)`.
    Socket,
    /// The read end of a pipe: EOF also ends the connection.
    ReadPipe,
    /// The write end of a pipe: `write_eof` closes it; the reader going
    /// away is seen as readability (a hang-up) on the write end.
    WritePipe,
}

/// Something the caller must deliver to its protocol.
#[derive(Debug)]
pub enum StreamEvent {
    /// A connect that was in progress succeeded (`connection_made`).
    Connected,
    /// A connect that was in progress failed; terminal.
    ConnectFailed(Error),
    /// The write buffer went above the high water mark.
    PauseWriting,
    /// The write buffer drained to the low water mark.
    ResumeWriting,
    /// The connection is over (`connection_lost`); terminal. `None` after
    /// `close`/`abort`/a drained write pipe, the error otherwise.
    Closed(Option<Error>),
}

/// One step of [`StreamCore::read`].
#[derive(Debug, PartialEq, Eq)]
pub enum Read<'a> {
    Data(&'a [u8]),
    /// The peer will send nothing more (`eof_received`).
    Eof,
    /// Stop reading for this event: nothing more now, the budget is spent,
    /// reading is paused or off, or an error was queued as `Closed`.
    Done,
}

/// One step of [`StreamCore::read_into`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadInto {
    /// This many bytes were stored at the start of the caller's buffer.
    Data(usize),
    Eof,
    Done,
}

/// What became of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// Sent, buffered, or (on a fatal error) turned into a `Closed` event.
    Accepted,
    /// The connection is lost; the data was dropped. `warn` is true when
    /// asyncio would log "socket.send() raised exception.".
    Ignored { conn_lost: u32, warn: bool },
}

/// Syscall and byte counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    pub read_calls: u64,
    pub bytes_read: u64,
    pub write_calls: u64,
    pub bytes_written: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Connecting,
    Open,
    /// `close()` was called with data still buffered.
    Closing,
    /// The `Closed`/`ConnectFailed` event was queued.
    Closed,
}

/// A connected stream over a non-blocking fd. See the module docs.
#[derive(Debug)]
pub struct StreamCore {
    fd: Option<IoFd>,
    raw: RawFd,
    kind: StreamKind,
    state: State,
    read_paused: bool,
    read_eof: bool,
    eof_requested: bool,
    eof_sent: bool,
    read_buf: Vec<u8>,
    read_buffer_size: usize,
    reads_per_event: usize,
    reads_left: usize,
    out: WriteBuffer,
    flow: Flow,
    /// asyncio's `_conn_lost`: non-zero once the connection is lost, then
    /// incremented by each ignored write.
    conn_lost: u32,
    events: VecDeque<StreamEvent>,
    /// The buffer drained as `ResumeWriting` was queued: a close or
    /// half-close waits for that event's delivery (see `next_event`).
    drain_pending: bool,
    /// Writes are held in the buffer until `uncork` (see `cork`).
    corked: bool,
    stats: StreamStats,
}

impl StreamCore {
    fn new(fd: IoFd, kind: StreamKind, state: State, config: &StreamConfig) -> StreamCore {
        let reads_per_event = config.reads_per_event.max(1);
        StreamCore {
            raw: fd.raw(),
            fd: Some(fd),
            kind,
            state,
            read_paused: false,
            read_eof: false,
            eof_requested: false,
            eof_sent: false,
            read_buf: Vec::new(),
            read_buffer_size: config.read_buffer_size.max(1),
            reads_per_event,
            reads_left: reads_per_event,
            out: WriteBuffer::default(),
            flow: Flow::new(config.water_marks),
            conn_lost: 0,
            events: VecDeque::new(),
            drain_pending: false,
            corked: false,
            stats: StreamStats::default(),
        }
    }

    /// A connected stream socket (accepted, adopted, or connected at once).
    /// Made non-blocking, with `TCP_NODELAY` per `config`. No `Connected`
    /// event follows: the caller calls `connection_made` itself.
    pub fn socket(fd: IoFd, config: &StreamConfig) -> Result<StreamCore, Error> {
        socket::prepare_stream(&fd, config.nodelay)?;
        Ok(StreamCore::new(fd, StreamKind::Socket, State::Open, config))
    }

    /// A connection [`ListenerCore`](crate::ListenerCore) accepted: already
    /// non-blocking and close-on-exec, so the only syscall left is
    /// `TCP_NODELAY` when `tcp` (the listener's family says so) and the
    /// config asks for it.
    pub fn accepted(fd: OwnedFd, tcp: bool, config: &StreamConfig) -> Result<StreamCore, Error> {
        if tcp && config.nodelay {
            SockRef::from(&fd)
                .set_tcp_nodelay(true)
                .map_err(|e| Error::os(Op::SetOption, e))?;
        }
        Ok(StreamCore::new(
            IoFd::owned(fd),
            StreamKind::Socket,
            State::Open,
            config,
        ))
    }

    /// A socket whose non-blocking connect is in progress. It wants
    /// writability; then `on_writable` queues `Connected` or `ConnectFailed`.
    /// Writes made meanwhile are buffered and sent once connected.
    pub fn connecting(fd: IoFd, config: &StreamConfig) -> Result<StreamCore, Error> {
        socket::prepare_stream(&fd, config.nodelay)?;
        Ok(StreamCore::new(
            fd,
            StreamKind::Socket,
            State::Connecting,
            config,
        ))
    }

    /// `connecting` or `socket`, as [`socket::tcp_connect`] reported.
    pub fn from_connect(
        fd: IoFd,
        status: socket::ConnectStatus,
        config: &StreamConfig,
    ) -> Result<StreamCore, Error> {
        match status {
            socket::ConnectStatus::Connected => StreamCore::socket(fd, config),
            socket::ConnectStatus::InProgress => StreamCore::connecting(fd, config),
        }
    }

    /// The read end of a pipe (or a socket or character device used as one).
    pub fn read_pipe(fd: IoFd, config: &StreamConfig) -> Result<StreamCore, Error> {
        crate::pipe::prepare_pipe_fd(&fd)?;
        Ok(StreamCore::new(
            fd,
            StreamKind::ReadPipe,
            State::Open,
            config,
        ))
    }

    /// The write end of a pipe (or a socket or character device used as one).
    pub fn write_pipe(fd: IoFd, config: &StreamConfig) -> Result<StreamCore, Error> {
        crate::pipe::prepare_pipe_fd(&fd)?;
        Ok(StreamCore::new(
            fd,
            StreamKind::WritePipe,
            State::Open,
            config,
        ))
    }

    /// The fd number (still reported after `close_fd`, for bookkeeping).
    pub fn fd(&self) -> RawFd {
        self.raw
    }

    pub fn kind(&self) -> StreamKind {
        self.kind
    }

    /// The readiness the core needs now: readable while reading and not
    /// paused (always, on a write pipe, to notice the reader going away);
    /// writable while data is buffered or a connect is in progress.
    pub fn interest(&self) -> Interest {
        if self.fd.is_none() {
            return Interest::NONE;
        }
        match self.state {
            State::Closed => Interest::NONE,
            State::Connecting => Interest::WRITABLE,
            State::Open | State::Closing => Interest {
                readable: match self.kind {
                    StreamKind::WritePipe => true,
                    StreamKind::Socket | StreamKind::ReadPipe => self.can_read(),
                },
                writable: !self.out.is_empty() && !self.corked,
            },
        }
    }

    /// The next event to deliver, oldest first.
    ///
    /// A buffer that drained with `ResumeWriting` queued finishes a pending
    /// close or half-close only here, once that event was delivered: the
    /// protocol may write more from `resume_writing` (asyncio checks the
    /// buffer after calling it), and that data goes out first.
    pub fn next_event(&mut self) -> Option<StreamEvent> {
        if let Some(event) = self.events.pop_front() {
            return Some(event);
        }
        if std::mem::take(&mut self.drain_pending) && self.out.is_empty() {
            self.on_drained();
            return self.events.pop_front();
        }
        None
    }

    pub fn has_events(&self) -> bool {
        !self.events.is_empty() || self.drain_pending
    }

    /// asyncio's `is_closing()`: `close`, `abort` or a fatal error happened.
    pub fn is_closing(&self) -> bool {
        matches!(self.state, State::Closing | State::Closed)
    }

    /// The terminal event (`Closed` or `ConnectFailed`) has been queued.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    pub fn is_connecting(&self) -> bool {
        self.state == State::Connecting
    }

    /// asyncio's `is_reading()`: not paused and not closing.
    pub fn is_reading(&self) -> bool {
        self.kind != StreamKind::WritePipe && !self.read_paused && !self.is_closing()
    }

    pub fn pause_reading(&mut self) {
        if self.is_reading() {
            self.read_paused = true;
        }
    }

    pub fn resume_reading(&mut self) {
        if !self.is_closing() && self.read_paused {
            self.read_paused = false;
        }
    }

    fn can_read(&self) -> bool {
        self.state == State::Open
            && self.kind != StreamKind::WritePipe
            && !self.read_paused
            && !self.read_eof
            && self.fd.is_some()
    }

    // ---- reading -------------------------------------------------------

    /// Call once per readable report, before the `read` calls: it renews the
    /// per-event read budget.
    pub fn begin_read_event(&mut self) {
        self.reads_left = self.reads_per_event;
    }

    /// True when the next `read`/`read_into` would make a syscall: reading is
    /// on and the event's budget is not spent. A BufferedProtocol caller
    /// checks this before asking the protocol for a buffer.
    pub fn wants_read(&self) -> bool {
        self.reads_left > 0 && self.can_read()
    }

    /// Read into the core's reusable buffer. Call until `Done`.
    ///
    /// On a write pipe this checks (without blocking) whether the reader went
    /// away, queuing `Closed` if so, and returns `Done`.
    pub fn read(&mut self) -> Read<'_> {
        if self.kind == StreamKind::WritePipe {
            self.check_write_pipe_hangup();
            return Read::Done;
        }
        if self.read_buf.len() != self.read_buffer_size {
            self.read_buf.resize(self.read_buffer_size, 0);
        }
        let mut buf = std::mem::take(&mut self.read_buf);
        let step = self.read_step(&mut buf);
        self.read_buf = buf;
        match step {
            ReadInto::Data(n) => Read::Data(&self.read_buf[..n]),
            ReadInto::Eof => Read::Eof,
            ReadInto::Done => Read::Done,
        }
    }

    /// Read into a caller-provided buffer (asyncio's BufferedProtocol
    /// `get_buffer` / `buffer_updated`). An empty buffer is an error.
    pub fn read_into(&mut self, buf: &mut [u8]) -> Result<ReadInto, Error> {
        if self.kind == StreamKind::WritePipe {
            self.check_write_pipe_hangup();
            return Ok(ReadInto::Done);
        }
        if buf.is_empty() {
            return Err(Error::EmptyBuffer);
        }
        Ok(self.read_step(buf))
    }

    fn read_step(&mut self, buf: &mut [u8]) -> ReadInto {
        if !self.wants_read() {
            return ReadInto::Done;
        }
        let result = if self.kind == StreamKind::Socket {
            sys::recv(self.raw, buf)
        } else {
            sys::read(self.raw, buf)
        };
        self.stats.read_calls += 1;
        match result {
            Ok(0) => {
                self.read_eof = true;
                self.reads_left = 0;
                if self.kind == StreamKind::ReadPipe {
                    // asyncio: a read pipe's EOF is followed by
                    // connection_lost(None).
                    self.force_close(None);
                }
                ReadInto::Eof
            }
            Ok(n) => {
                self.stats.bytes_read += n as u64;
                // A short read means the kernel buffer is empty for now.
                self.reads_left = if n < buf.len() {
                    0
                } else {
                    self.reads_left - 1
                };
                ReadInto::Data(n)
            }
            Err(e) if sys::is_would_block(&e) => {
                self.reads_left = 0;
                ReadInto::Done
            }
            Err(e) => {
                self.force_close(Some(Error::os(Op::Read, e)));
                ReadInto::Done
            }
        }
    }

    fn check_write_pipe_hangup(&mut self) {
        if self.is_closed() {
            return;
        }
        match sys::hung_up(self.raw) {
            Ok(false) => {}
            // asyncio's `_read_ready` on a write pipe: the reader closed; an
            // error only if data was still waiting to be written.
            Ok(true) => {
                let err = (!self.out.is_empty())
                    .then(|| Error::os(Op::Write, io::Error::from_raw_os_error(libc::EPIPE)));
                self.force_close(err);
            }
            Err(e) => self.force_close(Some(Error::os(Op::Poll, e))),
        }
    }

    // ---- writing -------------------------------------------------------

    /// Write `data`: sent at once when nothing is buffered, only the rest is
    /// copied into the buffer.
    pub fn write(&mut self, data: &[u8]) -> Result<Write, Error> {
        if let Some(early) = self.write_precheck(data.len())? {
            return Ok(early);
        }
        let sent = match self.try_send(&[IoSlice::new(data)]) {
            Some(n) => n,
            None => return Ok(Write::Accepted),
        };
        self.out.push_copy(&data[sent..]);
        self.after_growth();
        Ok(Write::Accepted)
    }

    /// `writelines`: all buffers in one vectored syscall when nothing is
    /// buffered; only the rest is copied.
    pub fn write_vectored(&mut self, bufs: &[&[u8]]) -> Result<Write, Error> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if let Some(early) = self.write_precheck(total)? {
            return Ok(early);
        }
        let mut slices = [IoSlice::new(&[]); MAX_IOV];
        let count = bufs.len().min(MAX_IOV);
        for (slot, buf) in slices.iter_mut().zip(bufs) {
            *slot = IoSlice::new(buf);
        }
        let mut skip = match self.try_send(&slices[..count]) {
            Some(n) => n,
            None => return Ok(Write::Accepted),
        };
        for buf in bufs {
            if skip >= buf.len() {
                skip -= buf.len();
                continue;
            }
            self.out.push_copy(&buf[skip..]);
            skip = 0;
        }
        self.after_growth();
        Ok(Write::Accepted)
    }

    /// Write bytes the caller hands over: the unsent rest is queued without a
    /// copy.
    pub fn write_chunk(&mut self, chunk: impl Into<Chunk>) -> Result<Write, Error> {
        let chunk = chunk.into();
        if let Some(early) = self.write_precheck(chunk.len())? {
            return Ok(early);
        }
        let sent = match self.try_send(&[IoSlice::new(chunk.as_slice())]) {
            Some(n) => n,
            None => return Ok(Write::Accepted),
        };
        self.out.push_chunk(chunk, sent);
        self.after_growth();
        Ok(Write::Accepted)
    }

    /// asyncio's checks at the top of `write`, in its order.
    fn write_precheck(&mut self, len: usize) -> Result<Option<Write>, Error> {
        if self.kind == StreamKind::ReadPipe {
            return Err(Error::NotWritable);
        }
        if self.eof_requested {
            return Err(Error::WriteAfterEof);
        }
        if len == 0 {
            return Ok(Some(Write::Accepted));
        }
        // A write pipe also ignores writes once closing.
        let pipe_closing = self.kind == StreamKind::WritePipe && self.is_closing();
        if self.conn_lost > 0 || pipe_closing {
            let warn = self.conn_lost >= LOG_THRESHOLD_FOR_CONNLOST_WRITES;
            self.conn_lost = self.conn_lost.saturating_add(1);
            return Ok(Some(Write::Ignored {
                conn_lost: self.conn_lost,
                warn,
            }));
        }
        Ok(None)
    }

    /// Send now if nothing is queued ahead and no cork holds writes.
    /// `Some(bytes sent)` (0 when the data must all be buffered), or `None`
    /// after a fatal error.
    fn try_send(&mut self, slices: &[IoSlice<'_>]) -> Option<usize> {
        if self.state != State::Open || self.corked || !self.out.is_empty() {
            return Some(0);
        }
        match self.send_slices(slices) {
            Ok(n) => Some(n),
            Err(e) if sys::is_would_block(&e) => Some(0),
            Err(e) => {
                self.force_close(Some(Error::os(Op::Write, e)));
                None
            }
        }
    }

    fn send_slices(&mut self, slices: &[IoSlice<'_>]) -> io::Result<usize> {
        let result = send_raw(self.raw, self.kind, slices);
        self.count_write(&result);
        result
    }

    pub(crate) fn count_write(&mut self, result: &io::Result<usize>) {
        self.stats.write_calls += 1;
        if let Ok(n) = result {
            self.stats.bytes_written += *n as u64;
        }
    }

    fn after_growth(&mut self) {
        if self.flow.should_pause(self.out.len()) {
            self.events.push_back(StreamEvent::PauseWriting);
        }
    }

    /// Hold writes in the buffer instead of sending them, until
    /// [`uncork`](Self::uncork): a server writes what one tick produced for
    /// a connection together, waking its peer once instead of once per
    /// response. Flow control counts what is held.
    pub fn cork(&mut self) {
        self.corked = true;
    }

    pub fn is_corked(&self) -> bool {
        self.corked
    }

    /// Send what the cork held, as far as the socket takes it (the rest
    /// waits for writability).
    pub fn uncork(&mut self) {
        if std::mem::take(&mut self.corked) && matches!(self.state, State::Open | State::Closing) {
            self.flush();
        }
    }

    /// The fd is writable: finish a connect, or flush the buffer with
    /// vectored writes until it is empty or the kernel stops taking data.
    pub fn on_writable(&mut self) {
        match self.state {
            State::Connecting => self.finish_connect(),
            State::Open | State::Closing => self.flush(),
            State::Closed => {}
        }
    }

    fn finish_connect(&mut self) {
        let Some(fd) = self.fd.as_ref() else {
            return;
        };
        match socket::connect_result(fd) {
            Ok(()) => {
                self.state = State::Open;
                self.events.push_back(StreamEvent::Connected);
                self.flush();
            }
            Err(e) => {
                self.out.clear();
                self.state = State::Closed;
                self.conn_lost = self.conn_lost.saturating_add(1);
                self.events.push_back(StreamEvent::ConnectFailed(e));
            }
        }
    }

    fn flush(&mut self) {
        while !self.out.is_empty() && self.fd.is_some() {
            let (result, offered) = {
                let mut slices = [IoSlice::new(&[]); MAX_IOV];
                let count = self.out.io_slices(&mut slices);
                let offered: usize = slices[..count].iter().map(|s| s.len()).sum();
                (send_raw(self.raw, self.kind, &slices[..count]), offered)
            };
            self.count_write(&result);
            match result {
                Ok(n) => {
                    self.out.consume(n);
                    if n < offered {
                        break; // the kernel buffer is full
                    }
                }
                Err(e) if sys::is_would_block(&e) => break,
                Err(e) => {
                    self.force_close(Some(Error::os(Op::Write, e)));
                    return;
                }
            }
        }
        let resumed = self.flow.should_resume(self.out.len());
        if resumed {
            self.events.push_back(StreamEvent::ResumeWriting);
        }
        if self.out.is_empty() {
            if resumed {
                // After the protocol heard of it (see `next_event`).
                self.drain_pending = true;
            } else {
                self.on_drained();
            }
        }
    }

    /// Nothing left to write: finish a pending close or half-close.
    fn on_drained(&mut self) {
        match self.state {
            State::Closing => self.lose(None),
            State::Open if self.eof_requested && !self.eof_sent => {
                self.eof_sent = true;
                if let Err(e) = sys::shutdown_write(self.raw) {
                    self.force_close(Some(Error::os(Op::Shutdown, e)));
                }
            }
            _ => {}
        }
    }

    /// `write_eof()` was called (asyncio's `_eof`).
    pub fn eof_requested(&self) -> bool {
        self.eof_requested
    }

    /// asyncio's `can_write_eof()`.
    pub fn can_write_eof(&self) -> bool {
        self.kind != StreamKind::ReadPipe
    }

    /// Half-close once the buffer drains: `shutdown(SHUT_WR)` on a socket
    /// (reading goes on); on a write pipe this is `close()`. A shutdown made
    /// at once that fails is returned, as asyncio raises it.
    pub fn write_eof(&mut self) -> Result<(), Error> {
        match self.kind {
            StreamKind::ReadPipe => Err(Error::NotWritable),
            StreamKind::WritePipe => {
                self.close();
                Ok(())
            }
            StreamKind::Socket => {
                if self.is_closing() || self.eof_requested {
                    return Ok(());
                }
                self.eof_requested = true;
                // What a cork held goes out before the FIN.
                self.corked = false;
                if self.state == State::Open && self.out.is_empty() {
                    self.eof_sent = true;
                    sys::shutdown_write(self.raw).map_err(|e| Error::os(Op::Shutdown, e))?;
                }
                Ok(())
            }
        }
    }

    /// Orderly close: stop reading, flush what is buffered, then queue
    /// `Closed(None)`. A second call does nothing.
    pub fn close(&mut self) {
        // What a cork held goes out before the close.
        self.corked = false;
        match self.state {
            State::Closing | State::Closed => {}
            State::Open if !self.out.is_empty() => self.state = State::Closing,
            State::Open | State::Connecting => self.lose(None),
        }
    }

    /// Close now: drop buffered data and queue `Closed(None)`.
    pub fn abort(&mut self) {
        self.force_close(None);
    }

    /// Abort with an RST: buffered data is dropped and closing the fd
    /// resets the connection instead of ending it with a FIN (a server
    /// shutting down past its grace period).
    pub fn reset(&mut self) {
        if self.fd.is_some() && self.kind == StreamKind::Socket {
            // Failing (the socket is already dead) leaves a plain close.
            let _ = sys::set_linger_zero(self.raw);
        }
        self.abort();
    }

    /// asyncio's `_fatal_error`: lose the connection with `err` (a protocol
    /// callback raised, a registration failed, …). Buffered data is dropped.
    pub fn fail(&mut self, err: Error) {
        self.force_close(Some(err));
    }

    /// asyncio's `_force_close`: drop the buffer and lose the connection,
    /// unless it is lost already.
    fn force_close(&mut self, err: Option<Error>) {
        if self.state == State::Closed {
            return;
        }
        self.out.clear();
        self.lose(err);
    }

    fn lose(&mut self, err: Option<Error>) {
        self.state = State::Closed;
        self.conn_lost = self.conn_lost.saturating_add(1);
        self.events.push_back(StreamEvent::Closed(err));
    }

    /// Close the fd now if owned (forget it if borrowed), losing the
    /// connection first if that has not happened. Deregister it from the
    /// reactor before calling this.
    pub fn close_fd(&mut self) {
        if self.state != State::Closed {
            self.force_close(None);
        }
        self.fd = None;
    }

    /// Take the fd out of the core (its ownership travels with it).
    pub fn take_fd(&mut self) -> Option<IoFd> {
        if self.state != State::Closed {
            self.force_close(None);
        }
        self.fd.take()
    }

    // ---- buffer limits and introspection -------------------------------

    pub fn get_write_buffer_size(&self) -> usize {
        self.out.len()
    }

    /// `(low, high)`, in asyncio's order.
    pub fn get_write_buffer_limits(&self) -> (usize, usize) {
        (self.flow.marks.low(), self.flow.marks.high())
    }

    /// asyncio's `set_write_buffer_limits`: validate, then pause the protocol
    /// if the buffer is now above `high` (never resumes, as asyncio).
    pub fn set_write_buffer_limits(
        &mut self,
        high: Option<i64>,
        low: Option<i64>,
    ) -> Result<(), Error> {
        self.flow.marks = WaterMarks::new(high, low)?;
        self.after_growth();
        Ok(())
    }

    /// The protocol was told to pause writing and not yet to resume.
    pub fn is_writing_paused(&self) -> bool {
        self.flow.is_paused()
    }

    /// asyncio's `_conn_lost` counter.
    pub fn conn_lost(&self) -> u32 {
        self.conn_lost
    }

    /// Chunks in the write buffer (diagnostics and tests).
    pub fn buffered_chunks(&self) -> usize {
        self.out.chunk_count()
    }

    pub fn stats(&self) -> StreamStats {
        self.stats
    }

    pub fn local_addr(&self) -> Result<SockAddr, Error> {
        let fd = self.fd.as_ref().ok_or_else(closed_fd)?;
        socket::local_addr(fd)
    }

    pub fn peer_addr(&self) -> Result<SockAddr, Error> {
        let fd = self.fd.as_ref().ok_or_else(closed_fd)?;
        socket::peer_addr(fd)
    }
}

/// One write syscall: `send`/`sendmsg` (with `MSG_NOSIGNAL`) on sockets,
/// `write`/`writev` on pipes.
fn send_raw(raw: RawFd, kind: StreamKind, slices: &[IoSlice<'_>]) -> io::Result<usize> {
    match (slices, kind == StreamKind::Socket) {
        ([one], true) => sys::send(raw, one),
        ([one], false) => sys::write(raw, one),
        (many, true) => sys::sendmsg(raw, many),
        (many, false) => sys::writev(raw, many),
    }
}

fn closed_fd() -> Error {
    Error::os(Op::Address, io::Error::from_raw_os_error(libc::EBADF))
}
