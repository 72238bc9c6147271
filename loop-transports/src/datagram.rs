//! [`DatagramCore`]: a UDP (or Unix datagram) socket as a sans-callback
//! state machine, following asyncio's `_SelectorDatagramTransport`.
//!
//! Receive errors (an ICMP port-unreachable surfacing as `ECONNREFUSED` on a
//! connected socket, …) are not fatal: `recv` returns them for
//! `error_received` and the socket stays open. Sends are attempted at once;
//! on `EAGAIN` the datagram is queued whole and sent when writable. Send
//! errors are queued as [`DatagramEvent::ErrorReceived`] and that datagram
//! is dropped, as asyncio does.

use crate::error::{Error, Op};
use crate::fd::IoFd;
use crate::flow::{Flow, WaterMarks};
use crate::socket;
use crate::stream::LOG_THRESHOLD_FOR_CONNLOST_WRITES;
use crate::sys;
use loop_core::Interest;
use socket2::SockAddr;
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

/// `recvfrom` calls per readable report.
pub const DEFAULT_RECVS_PER_EVENT: usize = 16;

/// Tunables of a datagram socket. Datagrams are received into the caller's
/// buffer (the thread's read buffer, [`crate::read_buf`], is large enough
/// for any datagram).
#[derive(Clone, Debug)]
pub struct DatagramConfig {
    pub recvs_per_event: usize,
    pub water_marks: WaterMarks,
    /// Bytes each queued datagram counts in the write buffer size beyond
    /// its payload (asyncio 3.13+ counts 8, so empty datagrams fill it too).
    pub header_size: usize,
}

impl Default for DatagramConfig {
    fn default() -> Self {
        DatagramConfig {
            recvs_per_event: DEFAULT_RECVS_PER_EVENT,
            water_marks: WaterMarks::default(),
            header_size: 0,
        }
    }
}

/// Something the caller must deliver to its protocol.
#[derive(Debug)]
pub enum DatagramEvent {
    /// A send failed (`error_received`); the datagram was dropped.
    ErrorReceived(Error),
    PauseWriting,
    ResumeWriting,
    /// `connection_lost`; terminal.
    Closed(Option<Error>),
}

/// One step of [`DatagramCore::recv_into`].
#[derive(Debug)]
pub enum Recv {
    /// `datagram_received(data, addr)`: this many bytes at the start of the
    /// caller's buffer, from `addr`.
    Datagram(usize, SockAddr),
    /// `error_received(exc)`; the socket stays open.
    Error(Error),
    /// Nothing more for this event.
    Done,
}

/// What became of a `send_to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Send {
    /// Sent, queued, or failed with an `ErrorReceived` event.
    Accepted,
    /// The transport is closed; dropped (see [`crate::Write::Ignored`]).
    Ignored { conn_lost: u32, warn: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Open,
    Closing,
    Closed,
}

/// A datagram socket. See the module docs.
#[derive(Debug)]
pub struct DatagramCore {
    fd: Option<IoFd>,
    raw: RawFd,
    /// The connected peer, if any (asyncio's `_address`).
    peer: Option<SockAddr>,
    state: State,
    recvs_per_event: usize,
    recvs_left: usize,
    queue: VecDeque<(Vec<u8>, Option<SockAddr>)>,
    queued_bytes: usize,
    header_size: usize,
    flow: Flow,
    conn_lost: u32,
    events: VecDeque<DatagramEvent>,
}

impl DatagramCore {
    /// Wrap a datagram socket (made non-blocking here). Whether it is
    /// connected is read with `getpeername`.
    pub fn new(fd: IoFd, config: &DatagramConfig) -> Result<DatagramCore, Error> {
        socket::set_nonblocking(&fd)?;
        let peer = socket::peer_addr(&fd).ok();
        let recvs_per_event = config.recvs_per_event.max(1);
        Ok(DatagramCore {
            raw: fd.raw(),
            fd: Some(fd),
            peer,
            state: State::Open,
            recvs_per_event,
            recvs_left: recvs_per_event,
            queue: VecDeque::new(),
            queued_bytes: 0,
            header_size: config.header_size,
            flow: Flow::new(config.water_marks),
            conn_lost: 0,
            events: VecDeque::new(),
        })
    }

    pub fn fd(&self) -> RawFd {
        self.raw
    }

    /// The connected peer, if the socket is connected.
    pub fn peer(&self) -> Option<&SockAddr> {
        self.peer.as_ref()
    }

    /// Readable while not closing; writable while datagrams are queued.
    pub fn interest(&self) -> Interest {
        if self.fd.is_none() {
            return Interest::NONE;
        }
        match self.state {
            State::Closed => Interest::NONE,
            State::Open | State::Closing => Interest {
                readable: self.state == State::Open,
                writable: !self.queue.is_empty(),
            },
        }
    }

    pub fn next_event(&mut self) -> Option<DatagramEvent> {
        self.events.pop_front()
    }

    pub fn is_closing(&self) -> bool {
        self.state != State::Open
    }

    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Renew the per-event receive budget; call once per readable report.
    pub fn begin_read_event(&mut self) {
        self.recvs_left = self.recvs_per_event;
    }

    /// Receive one datagram into `buf` (truncated to its size, as
    /// `recvfrom` does). Call until `Done`.
    pub fn recv_into(&mut self, buf: &mut [u8]) -> Recv {
        if self.state != State::Open || self.recvs_left == 0 || self.fd.is_none() {
            return Recv::Done;
        }
        self.recvs_left -= 1;
        let raw = self.raw;
        // SAFETY: the closure passes socket2's zeroed address storage and its
        // length, as recvfrom expects, and a buffer valid for its length.
        let result = unsafe {
            SockAddr::try_init(|storage, len| loop {
                let n = libc::recvfrom(
                    raw,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    0,
                    storage.cast(),
                    len,
                );
                if n >= 0 {
                    return Ok(n as usize);
                }
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            })
        };
        match result {
            // An unnamed peer (a Unix datagram socketpair) comes back with
            // an empty address, which Python shows as None.
            Ok((n, addr)) => Recv::Datagram(n, addr),
            Err(e) if sys::is_would_block(&e) => {
                self.recvs_left = 0;
                Recv::Done
            }
            Err(e) => Recv::Error(Error::os(Op::Read, e)),
        }
    }

    /// asyncio's `sendto`: to `addr`, or to the connected peer when `None`.
    /// An address other than the connected peer is refused.
    pub fn send_to(&mut self, data: &[u8], addr: Option<&SockAddr>) -> Result<Send, Error> {
        if let (Some(peer), Some(addr)) = (&self.peer, addr) {
            if addr != peer {
                return Err(Error::AddressMismatch {
                    expected: Box::new(peer.clone()),
                });
            }
        }
        // A lost connected endpoint drops sends; an unconnected one goes on
        // sending while its socket is open (asyncio's, until
        // `connection_lost` closes it).
        if self.conn_lost > 0 && (self.peer.is_some() || self.fd.is_none()) {
            let warn = self.conn_lost >= LOG_THRESHOLD_FOR_CONNLOST_WRITES;
            self.conn_lost = self.conn_lost.saturating_add(1);
            return Ok(Send::Ignored {
                conn_lost: self.conn_lost,
                warn,
            });
        }
        if self.state == State::Closed {
            // Best effort, as asyncio's: a full socket drops it.
            if let Err(e) = send_one(self.raw, data, addr) {
                if !sys::is_would_block(&e) {
                    self.events
                        .push_back(DatagramEvent::ErrorReceived(Error::os(Op::Write, e)));
                }
            }
            return Ok(Send::Accepted);
        }
        // Connected sockets send without an address, as asyncio's `send`.
        let addr = if self.peer.is_some() { None } else { addr };
        if self.queue.is_empty() && self.state == State::Open {
            match send_one(self.raw, data, addr) {
                Ok(_) => return Ok(Send::Accepted),
                Err(e) if sys::is_would_block(&e) => {}
                Err(e) => {
                    self.events
                        .push_back(DatagramEvent::ErrorReceived(Error::os(Op::Write, e)));
                    return Ok(Send::Accepted);
                }
            }
        }
        self.queued_bytes += data.len() + self.header_size;
        self.queue.push_back((data.to_vec(), addr.cloned()));
        if self.flow.should_pause(self.queued_bytes) {
            self.events.push_back(DatagramEvent::PauseWriting);
        }
        Ok(Send::Accepted)
    }

    /// Writable: send queued datagrams until the kernel pushes back. A send
    /// error drops that datagram, queues `ErrorReceived` and ends this round.
    pub fn on_writable(&mut self) {
        if self.state == State::Closed {
            return;
        }
        while let Some((data, addr)) = self.queue.front() {
            match send_one(self.raw, data, addr.as_ref()) {
                Err(e) if sys::is_would_block(&e) => break,
                result => {
                    self.queued_bytes -= data.len() + self.header_size;
                    self.queue.pop_front();
                    if let Err(e) = result {
                        self.events
                            .push_back(DatagramEvent::ErrorReceived(Error::os(Op::Write, e)));
                        break;
                    }
                }
            }
        }
        if self.flow.should_resume(self.queued_bytes) {
            self.events.push_back(DatagramEvent::ResumeWriting);
        }
        if self.queue.is_empty() && self.state == State::Closing {
            self.lose(None);
        }
    }

    /// Close once the queue is sent.
    pub fn close(&mut self) {
        if self.state != State::Open {
            return;
        }
        if self.queue.is_empty() {
            self.lose(None);
        } else {
            self.state = State::Closing;
        }
    }

    /// Close now, dropping queued datagrams.
    pub fn abort(&mut self) {
        if self.state == State::Closed {
            return;
        }
        self.queue.clear();
        self.queued_bytes = 0;
        self.lose(None);
    }

    fn lose(&mut self, err: Option<Error>) {
        self.state = State::Closed;
        self.conn_lost = self.conn_lost.saturating_add(1);
        self.events.push_back(DatagramEvent::Closed(err));
    }

    /// Bytes of queued datagrams.
    pub fn get_write_buffer_size(&self) -> usize {
        self.queued_bytes
    }

    /// Queued datagrams.
    pub fn queued_datagrams(&self) -> usize {
        self.queue.len()
    }

    pub fn get_write_buffer_limits(&self) -> (usize, usize) {
        (self.flow.marks.low(), self.flow.marks.high())
    }

    pub fn set_write_buffer_limits(
        &mut self,
        high: Option<i64>,
        low: Option<i64>,
    ) -> Result<(), Error> {
        self.flow.marks = WaterMarks::new(high, low)?;
        if self.flow.should_pause(self.queued_bytes) {
            self.events.push_back(DatagramEvent::PauseWriting);
        }
        Ok(())
    }

    pub fn conn_lost(&self) -> u32 {
        self.conn_lost
    }

    pub fn local_addr(&self) -> Result<SockAddr, Error> {
        match self.fd.as_ref() {
            Some(fd) => socket::local_addr(fd),
            None => Err(Error::os(
                Op::Address,
                io::Error::from_raw_os_error(libc::EBADF),
            )),
        }
    }

    /// Close the fd now if owned (forget it if borrowed), losing the
    /// transport first if needed. Deregister it from the reactor first.
    pub fn close_fd(&mut self) {
        if self.state != State::Closed {
            self.abort();
        }
        self.fd = None;
    }
}

fn send_one(raw: RawFd, data: &[u8], addr: Option<&SockAddr>) -> io::Result<usize> {
    let (name, namelen) = match addr {
        Some(a) => (a.as_ptr().cast::<libc::sockaddr>(), a.len()),
        None => (std::ptr::null(), 0),
    };
    loop {
        // SAFETY: `data` is valid for its length; `name` is null with length
        // 0 or points at a live `SockAddr` of `namelen` bytes.
        let n = unsafe {
            libc::sendto(
                raw,
                data.as_ptr().cast(),
                data.len(),
                libc::MSG_NOSIGNAL,
                name,
                namelen,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
