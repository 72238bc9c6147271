//! The tests' [`Driver`]: runs stream cores and listeners on a loop-core
//! [`Reactor`], dispatching to [`StreamProtocol`]s with asyncio's
//! lifecycle, so the cores' contract is tested the way the asyncio
//! transports use it (a test harness, not part of the crate's API).
//!
//! Each connection lives in a slot of the driver's table while idle and is
//! taken out of it while being dispatched, so a protocol callback can create
//! new work (a listener's factory adds connections) without aliasing. See
//! [`super::transport`] for how callbacks reach back into their transport.
//!
//! A core that wants no readiness is *deregistered* rather than registered
//! with an empty interest: epoll reports `EPOLLHUP`/`EPOLLERR` whatever the
//! interest, so a paused socket whose peer hung up would wake every poll.

use super::protocol::StreamProtocol;
use super::transport::{DirtyList, Transport};
use loop_core::clock;
use loop_core::reactor::{Reactor, Ready};
use loop_core::Interest;
use loop_transports::listener::{AcceptStop, Accepted, ListenerCore};
use loop_transports::socket;
use loop_transports::{Error, IoFd, ReadInto, StreamConfig, StreamCore, StreamEvent};
use socket2::SockAddr;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Makes a protocol for each accepted connection, given the peer address.
pub type ProtocolFactory = Box<dyn FnMut(&SockAddr) -> Box<dyn StreamProtocol>>;

/// Identifies a listener added with [`Driver::listen`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ListenerId(usize);

struct StreamEntry {
    transport: Transport,
    protocol: Box<dyn StreamProtocol>,
    fd: RawFd,
    /// `connection_made` was called, so `connection_lost` is owed.
    made: bool,
    registered: bool,
}

struct ListenerEntry {
    core: ListenerCore,
    factory: ProtocolFactory,
    config: StreamConfig,
    registered: bool,
}

enum Entry {
    Stream(StreamEntry),
    Listener(ListenerEntry),
}

/// A single-threaded event driver for transports. See the module docs.
pub struct Driver {
    reactor: Reactor<usize>,
    entries: Vec<Option<Entry>>,
    free: Vec<usize>,
    dirty: Rc<DirtyList>,
    ready: Vec<Ready>,
    /// The one read buffer all connections read into, one at a time.
    scratch: Vec<u8>,
    accepted: Vec<Accepted>,
    errors: Vec<Error>,
}

impl Driver {
    /// A driver whose shared read buffer has `read_buffer_size` bytes.
    pub fn new(read_buffer_size: usize) -> Result<Driver, Error> {
        Ok(Driver {
            reactor: Reactor::new()?,
            entries: Vec::new(),
            free: Vec::new(),
            dirty: Rc::new(DirtyList::default()),
            ready: Vec::new(),
            scratch: vec![0; read_buffer_size.max(1)],
            accepted: Vec::new(),
            errors: Vec::new(),
        })
    }

    /// Live connections and listeners.
    pub fn len(&self) -> usize {
        self.entries.iter().filter(|e| e.is_some()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Errors that had no protocol to go to (accept failures, including the
    /// resource-limit ones that paused a listener), oldest first.
    pub fn take_errors(&mut self) -> Vec<Error> {
        std::mem::take(&mut self.errors)
    }

    fn alloc(&mut self, entry: Entry) -> usize {
        match self.free.pop() {
            Some(token) => {
                self.entries[token] = Some(entry);
                token
            }
            None => {
                self.entries.push(Some(entry));
                self.entries.len() - 1
            }
        }
    }

    /// Drive `core` with `protocol`. A connected core gets
    /// `connection_made` now; a connecting one once the connect succeeds.
    pub fn add_stream(
        &mut self,
        core: StreamCore,
        protocol: impl StreamProtocol + 'static,
    ) -> Transport {
        self.add_boxed(core, Box::new(protocol))
    }

    fn add_boxed(&mut self, core: StreamCore, protocol: Box<dyn StreamProtocol>) -> Transport {
        let fd = core.fd();
        let connecting = core.is_connecting();
        let token = self.free.last().copied().unwrap_or(self.entries.len());
        let transport = Transport::new(core, token, Rc::clone(&self.dirty));
        let mut entry = StreamEntry {
            transport: transport.clone(),
            protocol,
            fd,
            made: false,
            registered: false,
        };
        if !connecting {
            entry.made = true;
            entry.protocol.connection_made(&entry.transport);
        }
        let allocated = self.alloc(Entry::Stream(entry));
        debug_assert_eq!(allocated, token);
        self.settle(token);
        transport
    }

    /// Connect to `addr` over TCP and drive the connection with `protocol`.
    /// Failures found at once are returned; later ones reach
    /// `connect_failed`.
    pub fn connect_tcp(
        &mut self,
        addr: SocketAddr,
        config: &StreamConfig,
        protocol: impl StreamProtocol + 'static,
    ) -> Result<Transport, Error> {
        let (fd, status) = socket::tcp_connect(addr, None)?;
        let core = StreamCore::from_connect(IoFd::owned(fd), status, config)?;
        Ok(self.add_stream(core, protocol))
    }

    /// Accept connections on `core`, each driven by a protocol from
    /// `factory`, with `config`.
    pub fn listen(
        &mut self,
        core: ListenerCore,
        config: StreamConfig,
        factory: impl FnMut(&SockAddr) -> Box<dyn StreamProtocol> + 'static,
    ) -> Result<ListenerId, Error> {
        let mut entry = ListenerEntry {
            core,
            factory: Box::new(factory),
            config,
            registered: false,
        };
        let token = self.free.last().copied().unwrap_or(self.entries.len());
        sync(
            &mut self.reactor,
            token,
            entry.core.fd(),
            entry.core.interest(),
            &mut entry.registered,
        )?;
        let allocated = self.alloc(Entry::Listener(entry));
        debug_assert_eq!(allocated, token);
        Ok(ListenerId(token))
    }

    /// Stop listening and close the listener's fd (if owned).
    pub fn close_listener(&mut self, id: ListenerId) {
        if let Some(Some(Entry::Listener(_))) = self.entries.get(id.0) {
            if let Some(Entry::Listener(mut l)) = self.entries[id.0].take() {
                if l.registered {
                    self.reactor.deregister(l.core.fd());
                }
                l.core.close_fd();
                self.free.push(id.0);
            }
        }
    }

    /// One round: deliver events from transport calls made outside
    /// callbacks, wait for readiness up to `timeout` (`None`: until
    /// something happens), dispatch it. Returns the readiness reports
    /// handled.
    pub fn turn(&mut self, timeout: Option<Duration>) -> Result<usize, Error> {
        self.settle_dirty();
        let now = clock::monotonic();
        self.resume_listeners(now);
        let mut timeout = timeout;
        for entry in self.entries.iter().flatten() {
            if let Entry::Listener(l) = entry {
                if let Some(at) = l.core.resume_at() {
                    let left = Duration::from_secs_f64((at - now).max(0.0));
                    timeout = Some(timeout.map_or(left, |t| t.min(left)));
                }
            }
        }
        if !self.dirty.is_empty() {
            timeout = Some(Duration::ZERO);
        }
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        match self.reactor.poll(timeout_ms(timeout), &mut ready) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                self.ready = ready;
                return Err(Error::Reactor(e.into()));
            }
        }
        let count = ready.len();
        for r in &ready {
            if let Some(source) = self.reactor.get(r.fd) {
                self.dispatch(source.data, *r);
            }
        }
        self.ready = ready;
        self.settle_dirty();
        Ok(count)
    }

    /// Turn until `done()` is true or `limit` has passed. Returns whether
    /// `done()` became true.
    pub fn run_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut() -> bool,
    ) -> Result<bool, Error> {
        let deadline = Instant::now() + limit;
        loop {
            if done() {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            self.turn(Some((deadline - now).min(Duration::from_millis(50))))?;
        }
    }

    fn settle_dirty(&mut self) {
        for token in self.dirty.take() {
            if let Some(Some(Entry::Stream(s))) = self.entries.get(token) {
                s.transport.clear_mark();
                self.settle(token);
            }
        }
    }

    fn resume_listeners(&mut self, now: f64) {
        for token in 0..self.entries.len() {
            let Some(Some(Entry::Listener(l))) = self.entries.get_mut(token) else {
                continue;
            };
            if l.core.resume_due(now) {
                if let Err(e) = sync(
                    &mut self.reactor,
                    token,
                    l.core.fd(),
                    l.core.interest(),
                    &mut l.registered,
                ) {
                    self.errors.push(e);
                }
            }
        }
    }

    fn dispatch(&mut self, token: usize, ready: Ready) {
        let Some(entry) = self.entries.get_mut(token).and_then(Option::take) else {
            return;
        };
        match entry {
            Entry::Stream(mut s) => {
                let finished = self.dispatch_stream(&mut s, ready);
                self.entries[token] = Some(Entry::Stream(s));
                if !finished {
                    self.settle(token);
                } else {
                    self.finish(token);
                }
            }
            Entry::Listener(mut l) => {
                self.dispatch_listener(token, &mut l);
                self.entries[token] = Some(Entry::Listener(l));
            }
        }
    }

    /// Handle readiness for one connection; true once it is finished.
    fn dispatch_stream(&mut self, s: &mut StreamEntry, ready: Ready) -> bool {
        // Read first, as asyncio's selector loop runs readers before writers.
        if ready.readable {
            match s.transport.core() {
                Ok(mut core) => core.begin_read_event(),
                Err(_) => return false,
            }
            loop {
                let step = match s.transport.core() {
                    Ok(mut core) => core.read_into(&mut self.scratch),
                    Err(_) => break,
                };
                match step {
                    Ok(ReadInto::Data(n)) => {
                        s.protocol.data_received(&self.scratch[..n], &s.transport);
                    }
                    Ok(ReadInto::Eof) => {
                        if !s.protocol.eof_received(&s.transport) {
                            s.transport.close();
                        }
                        s.transport.clear_mark();
                        return deliver(s);
                    }
                    Ok(ReadInto::Done) | Err(_) => break,
                }
                s.transport.clear_mark();
                if deliver(s) {
                    return true;
                }
            }
            if deliver(s) {
                return true;
            }
        }
        if ready.writable {
            if let Ok(mut core) = s.transport.core() {
                core.on_writable();
            }
            s.transport.clear_mark();
            return deliver(s);
        }
        false
    }

    fn dispatch_listener(&mut self, token: usize, l: &mut ListenerEntry) {
        let mut accepted = std::mem::take(&mut self.accepted);
        let stop = l.core.accept_batch(&mut accepted);
        for a in accepted.drain(..) {
            let protocol = (l.factory)(&a.peer);
            match StreamCore::socket(IoFd::owned(a.fd), &l.config) {
                Ok(core) => {
                    self.add_boxed(core, protocol);
                }
                Err(e) => self.errors.push(e),
            }
        }
        self.accepted = accepted;
        match stop {
            AcceptStop::Drained | AcceptStop::BatchFull => {}
            AcceptStop::ResourceLimit(e) => {
                l.core.back_off(clock::monotonic());
                self.errors.push(e);
            }
            AcceptStop::Failed(e) => self.errors.push(e),
        }
        if let Err(e) = sync(
            &mut self.reactor,
            token,
            l.core.fd(),
            l.core.interest(),
            &mut l.registered,
        ) {
            self.errors.push(e);
        }
    }

    /// Deliver pending events of a stream and bring its registration up to
    /// date; remove it once finished.
    fn settle(&mut self, token: usize) {
        let Some(Some(Entry::Stream(s))) = self.entries.get_mut(token) else {
            return;
        };
        s.transport.clear_mark();
        if deliver(s) {
            self.finish(token);
            return;
        }
        let interest = match s.transport.core() {
            Ok(core) => core.interest(),
            Err(_) => return,
        };
        if let Err(e) = sync(&mut self.reactor, token, s.fd, interest, &mut s.registered) {
            if let Ok(mut core) = s.transport.core() {
                core.fail(e);
            }
            if deliver(s) {
                self.finish(token);
            }
        }
    }

    /// Deregister, close the fd, and drop the protocol of a finished stream.
    fn finish(&mut self, token: usize) {
        let Some(Entry::Stream(s)) = self.entries.get_mut(token).and_then(Option::take) else {
            return;
        };
        if s.registered {
            self.reactor.deregister(s.fd);
        }
        if let Ok(mut core) = s.transport.core() {
            core.close_fd();
        }
        self.free.push(token);
        drop(s);
    }
}

/// Deliver queued events to the protocol, each after the core's borrow
/// ended. True once the terminal event was delivered.
fn deliver(s: &mut StreamEntry) -> bool {
    loop {
        let event = match s.transport.core() {
            Ok(mut core) => core.next_event(),
            Err(_) => return false,
        };
        let Some(event) = event else {
            return false;
        };
        match event {
            StreamEvent::Connected => {
                s.made = true;
                s.protocol.connection_made(&s.transport);
            }
            StreamEvent::PauseWriting => s.protocol.pause_writing(&s.transport),
            StreamEvent::ResumeWriting => s.protocol.resume_writing(&s.transport),
            StreamEvent::ConnectFailed(e) => {
                s.protocol.connect_failed(e);
                return true;
            }
            StreamEvent::Closed(err) => {
                if s.made {
                    s.protocol.connection_lost(err);
                }
                return true;
            }
        }
    }
}

/// Register, re-register or deregister `fd` for `interest`.
fn sync(
    reactor: &mut Reactor<usize>,
    token: usize,
    fd: RawFd,
    interest: Interest,
    registered: &mut bool,
) -> Result<(), Error> {
    if interest.is_empty() {
        if *registered {
            reactor.deregister(fd);
            *registered = false;
        }
    } else if *registered {
        reactor.set_interest(fd, interest)?;
    } else {
        reactor.register(fd, interest, token)?;
        *registered = true;
    }
    Ok(())
}

/// Milliseconds for `epoll_wait`, rounded up so a wait never ends early.
fn timeout_ms(timeout: Option<Duration>) -> i32 {
    match timeout {
        None => -1,
        Some(t) => {
            let ms = t.as_micros().div_ceil(1000);
            i32::try_from(ms).unwrap_or(i32::MAX)
        }
    }
}
