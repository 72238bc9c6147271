//! [`Driver`]: every connection of a server, once, whatever its protocol.
//!
//! The listener (accept batching, the back-off when the process runs out
//! of fds), the registry of connections (by [`ConnId`]), the reactor
//! interest each one needs, the end-of-tick flush (the cork), the timeout
//! sweep, graceful drain and the way a connection ends (drain its output,
//! half-close, linger, close; or lose it now) are here; the protocols are
//! behind [`Protocol`](crate::protocol::Protocol), and what each offers
//! the application is in `http_app.rs` and `ws_app.rs`.
//!
//! The host (loop-py's ASGI bridge; the pure-Rust example's loop) owns
//! the reactor and the clock's ticks. It hands the driver readiness
//! ([`ready`](Driver::ready)), calls [`flush_corked`](Driver::flush_corked)
//! at the end of a tick when asked to ([`take_flush_request`](Driver::take_flush_request))
//! and [`sweep`](Driver::sweep) every [`sweep_interval`](crate::ServerSettings::sweep_interval),
//! and after every call takes the reactor updates ([`take_io`](Driver::take_io))
//! and the events ([`next_event`](Driver::next_event)).

mod http_app;
mod io;
mod ws_app;

pub use http_app::{Progress, SendRefused};
pub use ws_app::{WsNext, WsRefused};

use crate::addr::Addr;
use crate::clock::Clock;
use crate::conn::{Conn, Ending};
use crate::counters::{Live, ServerCounters, Stat};
use crate::event::{App, Event, IoUpdate};
use crate::id::{ConnId, ExchangeId, Token};
use crate::logs::{Log, LogState};
use crate::protocol::{Drained, Due, Kind, Pending};
use crate::settings::ServerSettings;
use crate::tls;
use loop_core::Interest;
use loop_http::DateCache;
use loop_transports::listener::ACCEPT_RETRY_DELAY;
use loop_transports::{
    AcceptStop, Accepted, IoFd, LayeredStream, ListenerCore, StreamConfig, StreamCore, StreamStats,
};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// Connections accepted per readiness event before the loop moves on.
pub const ACCEPT_BATCH: usize = 64;
/// The same for a listener shared with other processes (pre-fork workers):
/// a worker that took a whole burst in one batch would leave its siblings
/// idle, so each takes one per wake-up and lets the others' loops (all
/// woken: `EPOLLEXCLUSIVE` measured less even) take the rest. Measured in
/// docs/decisions.md ("accept spread").
pub const SHARED_ACCEPT_BATCH: usize = 1;

pub(crate) struct Slot<A: App> {
    generation: u32,
    conn: Option<Conn<A>>,
}

/// The open or lost connection `id` in `slots` (a borrow of the registry
/// alone, so the rest of the driver stays usable beside it).
pub(crate) fn conn_in<A: App>(slots: &mut [Slot<A>], id: ConnId) -> Option<&mut Conn<A>> {
    let slot = slots.get_mut(id.slot as usize)?;
    if slot.generation != id.generation {
        return None;
    }
    slot.conn.as_mut()
}

/// [`conn_in`], if the connection is open.
pub(crate) fn live_in<A: App>(slots: &mut [Slot<A>], id: ConnId) -> Option<&mut Conn<A>> {
    conn_in(slots, id).filter(|c| c.stream.is_some())
}

struct Listener {
    core: ListenerCore,
    tcp: bool,
    active: bool,
}

/// The connections of one server (see the module docs).
pub struct Driver<A: App> {
    settings: Arc<ServerSettings>,
    clock: Arc<dyn Clock>,
    /// What new TLS handshakes start from (`None`: plaintext). A reload
    /// replaces it; live connections keep the sessions they have.
    tls: Option<loop_tls::TlsConfig>,
    counters: Arc<ServerCounters>,
    slots: Vec<Slot<A>>,
    free: Vec<u32>,
    /// Connections not lost yet.
    open: usize,
    listeners: Vec<Listener>,
    warned_accept: bool,
    events: VecDeque<Event<A>>,
    io: Vec<IoUpdate>,
    /// Connections whose interest may have changed.
    dirty: Vec<ConnId>,
    /// Connections whose output waits for the end of the tick.
    corked: Vec<ConnId>,
    /// The host was asked for an end-of-tick flush that has not run yet.
    flush_pending: bool,
    /// ... and has not taken the request yet.
    flush_wanted: bool,
    /// The server is shutting down: what starts now ends at once.
    draining: bool,
    date: DateCache,
    logs: LogState,
    accepted: Vec<Accepted>,
    scratch: Vec<ConnId>,
}

impl<A: App> Driver<A> {
    /// A driver for `settings`; their TLS files are read now.
    pub fn new(
        settings: ServerSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, loop_tls::ConfigError> {
        let tls = settings
            .tls
            .as_ref()
            .map(loop_tls::TlsConfig::load)
            .transpose()?;
        Ok(Driver {
            settings: Arc::new(settings),
            clock,
            tls,
            counters: Arc::default(),
            slots: Vec::new(),
            free: Vec::new(),
            open: 0,
            listeners: Vec::new(),
            warned_accept: false,
            events: VecDeque::new(),
            io: Vec::new(),
            dirty: Vec::new(),
            corked: Vec::new(),
            flush_pending: false,
            flush_wanted: false,
            draining: false,
            date: DateCache::new(),
            logs: LogState::default(),
            accepted: Vec::new(),
            scratch: Vec::new(),
        })
    }

    pub fn settings(&self) -> &Arc<ServerSettings> {
        &self.settings
    }

    pub fn counters(&self) -> &Arc<ServerCounters> {
        &self.counters
    }

    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    /// Connections not lost yet.
    pub fn open_connections(&self) -> usize {
        self.open
    }

    /// Connections in the registry: open ones and lost ones whose
    /// [`Event::Closed`] has not been taken yet.
    pub fn registered(&self) -> usize {
        self.slots.iter().filter(|s| s.conn.is_some()).count()
    }

    pub fn is_draining(&self) -> bool {
        self.draining
    }

    /// Which log lines the host wants: DEBUG (a connection's life) and the
    /// access lines.
    pub fn set_log_levels(&mut self, debug: bool, access: bool) {
        self.logs.debug = debug;
        self.logs.access = access && self.settings.access_log;
    }

    pub fn tls_enabled(&self) -> bool {
        self.tls.is_some()
    }

    /// Re-read the TLS files for new handshakes (live connections keep
    /// their sessions). A file that does not load keeps the old
    /// certificates and logs a warning naming why. False when nothing was
    /// reloaded (that, or TLS is off).
    pub fn reload_tls(&mut self) -> bool {
        let (Some(current), Some(settings)) = (self.tls.as_ref(), self.settings.tls.as_ref())
        else {
            return false;
        };
        match current.reload(settings) {
            Ok(config) => {
                self.tls = Some(config);
                self.counters.tls.reloads.bump();
                self.log(Log::Info("TLS certificates reloaded".into()));
                true
            }
            Err(err) => {
                self.counters.tls.reload_errors.bump();
                self.log(Log::Warning(format!(
                    "TLS reload failed, keeping the current certificates: {err}"
                )));
                false
            }
        }
    }

    /// Everything `Server.stats()` reports; `in_flight`: the host's
    /// running requests.
    pub fn report(&self, in_flight: usize) -> Vec<(String, Stat)> {
        let mut bytes = StreamStats::default();
        for conn in self.slots.iter().filter_map(|s| s.conn.as_ref()) {
            if let Some(stream) = &conn.stream {
                let stats = stream.core().stats();
                bytes.bytes_read += stats.bytes_read;
                bytes.bytes_written += stats.bytes_written;
            }
        }
        self.counters.report(&Live {
            open: self.open,
            in_flight,
            bytes,
            tls: self.tls.is_some(),
        })
    }

    // ---- the host's side --------------------------------------------------

    /// The next event for the application, oldest first. A
    /// [`Event::Closed`] frees the connection's slot as it is taken.
    pub fn next_event(&mut self) -> Option<Event<A>> {
        let mut event = self.events.pop_front()?;
        if let Event::Closed {
            conn,
            app,
            exchanges,
        } = &mut event
        {
            if let Some(slot) = self.slots.get_mut(conn.slot as usize) {
                if slot.generation == conn.generation {
                    if let Some(gone) = slot.conn.take() {
                        *app = gone.app;
                        *exchanges = gone.exchanges.into_iter().map(|ex| ex.app).collect();
                        slot.generation = slot.generation.wrapping_add(1) & 0x7fff_ffff;
                        self.free.push(conn.slot);
                    }
                }
            }
        }
        Some(event)
    }

    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// The reactor changes made since the last call, in order.
    pub fn take_io(&mut self, out: &mut Vec<IoUpdate>) {
        for id in std::mem::take(&mut self.dirty) {
            let Some(conn) = self.conn_mut(id) else {
                continue;
            };
            conn.io_queued = false;
            if conn.stream.is_none() {
                continue;
            }
            let wanted = conn.wanted();
            if wanted != conn.registered {
                conn.registered = wanted;
                let fd = conn.fd;
                self.io.push(IoUpdate::Interest {
                    fd,
                    interest: wanted,
                });
            }
        }
        out.append(&mut self.io);
    }

    /// Whether the host should run [`flush_corked`](Self::flush_corked) at
    /// the end of its tick (asked once per tick; if it cannot defer, it
    /// flushes at once).
    pub fn take_flush_request(&mut self) -> bool {
        std::mem::take(&mut self.flush_wanted)
    }

    /// The end of the tick: write what every corked connection held, the
    /// responses finished in the tick together (the client is woken once
    /// for them, not once per response: a wake-up costs the sending CPU an
    /// inter-processor interrupt).
    pub fn flush_corked(&mut self) {
        self.flush_pending = false;
        for id in std::mem::take(&mut self.corked) {
            let Some(conn) = self.live_mut(id) else {
                continue;
            };
            conn.corked = false;
            if let Some(stream) = conn.stream.as_mut() {
                stream.uncork();
            }
            self.settle(id);
        }
    }

    /// Readiness the reactor reported for `token`.
    pub fn ready(&mut self, token: usize, readable: bool, writable: bool) {
        match Token::from_usize(token) {
            Token::Listener(index) => {
                if readable {
                    self.accept(index);
                }
            }
            Token::Conn(id) => {
                // Read first, as asyncio's selector loop runs readers
                // before writers.
                if readable {
                    self.on_readable(id);
                }
                if writable {
                    self.on_writable(id);
                }
            }
        }
    }

    /// The periodic check: every deadline due (TLS handshakes, request
    /// heads, keep-alive, body rate, WebSocket pings and closes, a close's
    /// drain and linger), and warnings suppressed in a second that is over.
    pub fn sweep(&mut self) {
        let now = self.now();
        if let Some(line) = self.logs.overdue_warning(now) {
            self.log(Log::Warning(line));
        }
        self.resume_listeners();
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        ids.extend(self.open_ids());
        for &id in &ids {
            self.check_timers(id, now);
        }
        self.scratch = ids;
    }

    /// Server shutdown: stop taking requests. Idle connections close now
    /// (kept for one more response with `keep_idle`: a hand-over to a new
    /// worker), busy ones when done; WebSocket sessions are closed with
    /// 1012 (service restart).
    pub fn drain(&mut self, keep_idle: bool) {
        self.draining = true;
        let now = self.now();
        for id in self.open_ids().collect::<Vec<_>>() {
            let Some(conn) = self.live_mut(id) else {
                continue;
            };
            conn.closing_because("server shutting down");
            let buffered = conn.buffered() > 0;
            match conn.kind.protocol().drain(keep_idle, buffered, now) {
                Drained::AfterCurrent => {}
                Drained::Close => {
                    self.end_exchanges(id, true);
                    self.settle(id);
                }
                Drained::Lose => self.lose(id, "server shutting down"),
            }
        }
    }

    /// The grace period is over: every connection closes now, with an RST.
    pub fn abort_all(&mut self) {
        for id in self.open_ids().collect::<Vec<_>>() {
            self.abort(id);
        }
    }

    /// Close `id` now with an RST.
    pub fn abort(&mut self, id: ConnId) {
        if let Some(conn) = self.live_mut(id) {
            conn.closing_because("reset by the server");
            if let Some(stream) = conn.stream.as_mut() {
                stream.reset();
            }
        }
        self.lose(id, "reset by the server");
    }

    /// Continue with pipelined input ([`Event::Pipelined`]).
    pub fn resume(&mut self, id: ConnId) {
        if matches!(self.live_mut(id).map(|c| &c.kind), Some(Kind::Http(_))) {
            self.process(id);
        }
    }

    // ---- listening --------------------------------------------------------

    /// Accept on a bound, listening socket's fd (borrowed or owned by
    /// `fd`). `tcp`: its connections get `TCP_NODELAY`. `shared`: other
    /// processes accept from the same socket (workers).
    pub fn listen(
        &mut self,
        fd: IoFd,
        tcp: bool,
        shared: bool,
    ) -> Result<(), loop_transports::Error> {
        let batch = if shared {
            SHARED_ACCEPT_BATCH
        } else {
            ACCEPT_BATCH
        };
        let core = ListenerCore::new(fd, batch)?;
        let index = self.listeners.len();
        self.io.push(IoUpdate::Register {
            fd: core.fd(),
            token: Token::Listener(index),
            interest: Interest::READABLE,
        });
        self.listeners.push(Listener {
            core,
            tcp,
            active: true,
        });
        Ok(())
    }

    /// Stop accepting on every listener (graceful shutdown's first step);
    /// their fds are forgotten (a borrowed one stays open) or closed.
    pub fn stop_listening(&mut self) {
        for l in &mut self.listeners {
            if std::mem::replace(&mut l.active, false) {
                self.io.push(IoUpdate::Deregister { fd: l.core.fd() });
                l.core.close_fd();
            }
        }
    }

    /// Accept again on listeners whose back-off is over.
    pub fn resume_listeners(&mut self) {
        let now = self.now();
        for l in &mut self.listeners {
            if l.core.resume_due(now) && l.active {
                self.io.push(IoUpdate::Interest {
                    fd: l.core.fd(),
                    interest: Interest::READABLE,
                });
            }
        }
    }

    fn accept(&mut self, index: usize) {
        let mut accepted = std::mem::take(&mut self.accepted);
        let (stop, tcp) = match self.listeners.get_mut(index) {
            Some(l) if l.active => (l.core.accept_batch(&mut accepted), l.tcp),
            _ => return,
        };
        // One connection's failure does not drop the rest of the batch.
        for Accepted { fd, peer } in accepted.drain(..) {
            self.adopt(fd, Addr::of(&peer), tcp);
        }
        self.accepted = accepted;
        // Drained, a full batch (the next readiness event says more) and an
        // error asyncio logs and goes on from (a peer that gave up was
        // skipped inside the batch) need nothing; running out of fds does.
        if let AcceptStop::ResourceLimit(err) = stop {
            let now = self.now();
            let Some(l) = self.listeners.get_mut(index) else {
                return;
            };
            let at = l.core.back_off(now);
            self.io.push(IoUpdate::Interest {
                fd: l.core.fd(),
                interest: Interest::NONE,
            });
            if !std::mem::replace(&mut self.warned_accept, true) {
                self.log(Log::Warning(format!(
                    "accept failed ({err}); pausing new connections for {ACCEPT_RETRY_DELAY:.0} s"
                )));
            }
            self.events.push_back(Event::Wakeup { at });
        }
    }

    /// Make an accepted stream (`fd`, connected to `peer`) a connection of
    /// this server. `None` when it closed at once (it died before its
    /// first syscall, or TLS refused to start a session).
    pub fn adopt(&mut self, fd: OwnedFd, peer: Option<Addr>, tcp: bool) -> Option<ConnId> {
        let config = StreamConfig {
            nodelay: true,
            ..StreamConfig::default()
        };
        let core = StreamCore::accepted(fd, tcp, &config).ok()?;
        let (stream, tls) = match &self.tls {
            None => (LayeredStream::plain(core), None),
            Some(config) => match tls::layer(config, &self.counters) {
                Ok((layer, state)) => (LayeredStream::with_layer(core, Some(layer)), Some(state)),
                Err(err) => {
                    self.debug(|| format!("TLS session not started: {err}"));
                    return None;
                }
            },
        };
        self.counters.accepted.bump();
        let now = self.now();
        let fd = stream.core().fd();
        let local = stream.core().local_addr().ok().and_then(|a| Addr::of(&a));
        let conn = Conn {
            fd,
            stream: Some(stream),
            kind: Kind::Pending(Pending {
                held: Vec::new(),
                deadline: now + self.settings.http.timeout_request_head,
            }),
            ending: Ending::Open,
            registered: Interest::READABLE,
            io_queued: false,
            corked: false,
            peer_text: peer.as_ref().map(Addr::text).unwrap_or_default(),
            peer,
            local,
            tls,
            accepted_at: now,
            why: None,
            peer_eof: false,
            awaiting_begin: false,
            offer: None,
            ws_log: None,
            exchanges: Vec::new(),
            app: A::Conn::default(),
        };
        let id = self.alloc(conn);
        self.open += 1;
        self.io.push(IoUpdate::Register {
            fd,
            token: Token::Conn(id),
            interest: Interest::READABLE,
        });
        if self.logs.debug {
            let line = match self.live_mut(id) {
                Some(conn) => format!("{} - Connection accepted", conn.peer_name()),
                None => return Some(id),
            };
            self.log(Log::Debug(line));
        }
        Some(id)
    }

    // ---- the registry -----------------------------------------------------

    fn alloc(&mut self, conn: Conn<A>) -> ConnId {
        match self.free.pop() {
            Some(slot) => {
                let s = &mut self.slots[slot as usize];
                s.conn = Some(conn);
                ConnId {
                    slot,
                    generation: s.generation,
                }
            }
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    conn: Some(conn),
                });
                ConnId {
                    slot: (self.slots.len() - 1) as u32,
                    generation: 0,
                }
            }
        }
    }

    /// The connection `id`, open or lost (until its `Closed` is taken).
    pub(crate) fn conn_mut(&mut self, id: ConnId) -> Option<&mut Conn<A>> {
        conn_in(&mut self.slots, id)
    }

    pub(crate) fn conn(&self, id: ConnId) -> Option<&Conn<A>> {
        let slot = self.slots.get(id.slot as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        slot.conn.as_ref()
    }

    /// The connection `id` if it is open.
    pub(crate) fn live_mut(&mut self, id: ConnId) -> Option<&mut Conn<A>> {
        self.conn_mut(id).filter(|c| c.stream.is_some())
    }

    fn open_ids(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            let conn = s.conn.as_ref()?;
            conn.stream.as_ref()?;
            Some(ConnId {
                slot: i as u32,
                generation: s.generation,
            })
        })
    }

    /// The host's state of connection `id` (open or lost).
    pub fn conn_app(&mut self, id: ConnId) -> Option<&mut A::Conn> {
        self.conn_mut(id).map(|c| &mut c.app)
    }

    /// The host's state of exchange `ex` of `id`.
    pub fn exchange_app(&mut self, id: ConnId, ex: ExchangeId) -> Option<&mut A::Exchange> {
        self.conn_mut(id)?.exchange_mut(ex).map(|x| &mut x.app)
    }

    /// Every exchange's host state (the shutdown cancels their tasks).
    pub fn exchange_apps(&self) -> impl Iterator<Item = &A::Exchange> + '_ {
        self.slots
            .iter()
            .filter_map(|s| s.conn.as_ref())
            .flat_map(|c| c.exchanges.iter().map(|ex| &ex.app))
    }

    /// The connection's addresses: the peer, ours (for the scope).
    pub fn addresses(&self, id: ConnId) -> Option<(Option<Addr>, Option<Addr>)> {
        self.conn(id).map(|c| (c.peer.clone(), c.local.clone()))
    }

    /// What the TLS handshake negotiated (`None` for plaintext, or while
    /// it runs).
    pub fn tls_info(&self, id: ConnId) -> Option<loop_tls::TlsInfo> {
        self.conn(id)?.tls.as_ref()?.info().cloned()
    }

    /// Whether `id` is a TLS connection.
    pub fn is_secure(&self, id: ConnId) -> bool {
        self.conn(id).is_some_and(|c| c.tls.is_some())
    }

    /// The peer as the logs name it.
    pub fn peer_name(&self, id: ConnId) -> Option<String> {
        self.conn(id).map(|c| c.peer_name().to_owned())
    }

    // ---- events and logs ----------------------------------------------------

    pub(crate) fn log(&mut self, line: Log) {
        self.events.push_back(Event::Log(line));
    }

    /// A DEBUG line, made only when the host wants them.
    pub(crate) fn debug(&mut self, line: impl FnOnce() -> String) {
        if self.logs.debug {
            self.events.push_back(Event::Log(Log::Debug(line())));
        }
    }

    /// Every exchange of `id` still open for the application ends
    /// ([`Event::Ended`]).
    pub(crate) fn end_exchanges(&mut self, id: ConnId, disconnected: bool) {
        let Some(conn) = self.conn_mut(id) else {
            return;
        };
        let mut ended = Vec::new();
        for ex in conn.exchanges.iter_mut().filter(|ex| !ex.ended) {
            ex.ended = true;
            ended.push(ex.id);
        }
        for ex in ended {
            self.events.push_back(Event::Ended {
                conn: id,
                ex,
                disconnected,
            });
        }
    }

    // ---- timers ---------------------------------------------------------------

    fn check_timers(&mut self, id: ConnId, now: f64) {
        let handshake_timeout = self.settings.tls_handshake_timeout;
        let Some(conn) = self.live_mut(id) else {
            return;
        };
        if let Some(tls) = conn.tls.as_ref() {
            if !tls.established() && now >= conn.accepted_at + handshake_timeout {
                tls.timed_out();
                return self.lose(id, "TLS handshake timeout (ssl_handshake_timeout)");
            }
        }
        match conn.ending {
            Ending::Open => {}
            Ending::Draining { deadline } if now >= deadline => {
                self.counters.timed_out(crate::counters::Timeout::Drain);
                return self.lose(id, "output drain timeout");
            }
            Ending::Lingering { deadline } if now >= deadline => {
                return self.lose(id, "closed after linger");
            }
            Ending::Draining { .. } | Ending::Lingering { .. } => return,
        }
        match conn.kind.protocol().on_timer(now) {
            Due::Nothing => {}
            Due::Output => self.settle(id),
            Due::Expired(timeout) => {
                self.counters.timed_out(timeout);
                self.ws_after_input(id);
                self.settle(id);
            }
            Due::Answer(status) => {
                self.counters
                    .timed_out(crate::counters::Timeout::RequestHead);
                self.fail(id, status, None);
            }
            Due::Lose(timeout, why) => {
                match conn.tls.as_ref().filter(|t| !t.established()) {
                    // The head deadline came first: the handshake timed out.
                    Some(tls) => tls.timed_out(),
                    None => self.counters.timed_out(timeout),
                }
                self.lose(id, why);
            }
        }
    }

    // ---- the end ------------------------------------------------------------

    /// The connection is gone (EOF, reset, a deadline, shutdown): its
    /// stream goes to the host to be deregistered and closed (TLS: our
    /// `close_notify` first, if the socket takes it), the application hears
    /// that every exchange ended, and [`Event::Closed`] follows.
    pub fn lose(&mut self, id: ConnId, why: impl Into<Cow<'static, str>>) {
        let debug = self.logs.debug;
        let access = self.logs.access;
        // Its status went out: the access log shows the request.
        let cut_short = if self.conn(id).is_some_and(|c| c.stream.is_some()) {
            self.cut_short_line(id)
        } else {
            None
        };
        let Some(conn) = live_in(&mut self.slots, id) else {
            return;
        };
        let Some(mut stream) = conn.stream.take() else {
            return;
        };
        conn.closing_because(why);
        for ex in &mut conn.exchanges {
            // Closes a file in flight.
            ex.file = None;
        }
        conn.kind.protocol().lose();
        self.open -= 1;
        self.counters.stream_closed(&stream.core().stats());
        if stream.has_layer() {
            // TLS: `close_notify` first, so the client sees an orderly end
            // (one that sent its own waits for ours); a dead socket just
            // refuses it.
            let _ = stream.shutdown();
        }
        let fd = conn.fd;
        let ws = match &conn.kind {
            Kind::Ws(w) => Some((
                w.ended.as_ref().map_or(1006, |(code, _)| *code),
                w.log_prefix.clone(),
            )),
            _ => None,
        };
        let line = debug.then(|| match ws {
            Some((code, _)) => format!(
                "{} - WebSocket connection closed ({code})",
                conn.peer_name()
            ),
            None => {
                let why = conn.why.as_deref().unwrap_or("closed");
                format!("{} - Connection closed ({why})", conn.peer_name())
            }
        });
        self.io.push(IoUpdate::Close {
            fd,
            stream: Box::new(stream),
        });
        if let Some(line) = cut_short {
            self.log(Log::Access(line));
        }
        self.end_exchanges(id, true);
        if let Some((code, prefix)) = ws {
            self.counters.ws_ended.bump();
            self.counters.ws_close_codes.bump(code);
            if let Some(prefix) = prefix.filter(|_| access) {
                self.log(Log::Access(format!("{prefix} closed {code}")));
            }
        }
        if let Some(line) = line {
            self.log(Log::Debug(line));
        }
        self.events.push_back(Event::Closed {
            conn: id,
            app: A::Conn::default(),
            exchanges: Vec::new(),
        });
    }
}
