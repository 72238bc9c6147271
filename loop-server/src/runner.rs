//! A Rust host for the driver: a loop-core reactor, the monotonic clock's
//! sweep and an application written in Rust ([`Handler`]). It is what the
//! pure-Rust server (`examples/server.rs`) runs, and what the tests drive
//! whole connections with; loop-py is the other host (its loop's reactor,
//! readiness through an `IoPort`, the ASGI bridge as the application).

use crate::event::{App, Event, IoUpdate};
use crate::id::{ConnId, ExchangeId};
use crate::logs::Log;
use crate::Driver;
use loop_core::reactor::{Reactor, Ready};
use loop_http::RequestHead;
use loop_transports::IoFd;
use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// The application: what it does with each [`Event`]. It may call the
/// driver from any of them.
pub trait Handler: App + Sized {
    /// A request head: [`Driver::begin`] its exchange (or
    /// [`Driver::reject`] it) and answer.
    fn request(
        &mut self,
        driver: &mut Driver<Self>,
        conn: ConnId,
        head: RequestHead,
        ws: Option<Vec<String>>,
    );

    /// Body arrived for a reader of `ex` ([`Driver::take_body`]).
    fn body(&mut self, driver: &mut Driver<Self>, conn: ConnId, ex: ExchangeId) {
        let _ = (driver, conn, ex);
    }

    /// WebSocket input for a receiver of `ex` ([`Driver::ws_next`]).
    fn ws_input(&mut self, driver: &mut Driver<Self>, conn: ConnId, ex: ExchangeId) {
        let _ = (driver, conn, ex);
    }

    /// A `send` of `ex` may go on.
    fn writable(&mut self, driver: &mut Driver<Self>, conn: ConnId, ex: ExchangeId) {
        let _ = (driver, conn, ex);
    }

    /// Exchange `ex` is over for the application.
    fn ended(
        &mut self,
        driver: &mut Driver<Self>,
        conn: ConnId,
        ex: ExchangeId,
        disconnected: bool,
    ) {
        let _ = (driver, conn, ex, disconnected);
    }

    /// The connection is gone; its state comes back.
    fn closed(&mut self, conn: ConnId, app: Self::Conn, exchanges: Vec<Self::Exchange>) {
        let _ = (conn, app, exchanges);
    }

    /// A line for the logs.
    fn log(&mut self, line: Log) {
        let _ = line;
    }
}

/// The driver, its reactor and its application on one thread.
pub struct Runner<H: Handler> {
    pub driver: Driver<H>,
    pub handler: H,
    reactor: Reactor<usize>,
    io: Vec<IoUpdate>,
    ready: Vec<Ready>,
    /// When listeners that backed off should resume.
    wakeups: Vec<f64>,
    next_sweep: f64,
}

impl<H: Handler> Runner<H> {
    pub fn new(driver: Driver<H>, handler: H) -> io::Result<Self> {
        let next_sweep = driver.now() + driver.settings().sweep_interval();
        Ok(Runner {
            driver,
            handler,
            reactor: Reactor::new().map_err(io::Error::other)?,
            io: Vec::new(),
            ready: Vec::new(),
            wakeups: Vec::new(),
            next_sweep,
        })
    }

    /// Accept on a bound, listening socket (now owned here).
    pub fn listen(&mut self, socket: impl Into<OwnedFd>, tcp: bool) -> io::Result<()> {
        self.driver
            .listen(IoFd::owned(socket.into()), tcp, false)
            .map_err(io::Error::other)?;
        self.pump();
        Ok(())
    }

    /// Apply the driver's reactor updates and hand its events to the
    /// application, until there are none.
    pub fn pump(&mut self) {
        loop {
            self.driver.take_io(&mut self.io);
            for update in self.io.drain(..) {
                apply(&mut self.reactor, update);
            }
            let Some(event) = self.driver.next_event() else {
                break;
            };
            let (driver, handler) = (&mut self.driver, &mut self.handler);
            match event {
                Event::Request { conn, head, ws } => handler.request(driver, conn, head, ws),
                Event::Body { conn, ex } => handler.body(driver, conn, ex),
                Event::Ended {
                    conn,
                    ex,
                    disconnected,
                } => handler.ended(driver, conn, ex, disconnected),
                Event::Writable { conn, ex } => handler.writable(driver, conn, ex),
                Event::Pipelined { conn } => driver.resume(conn),
                Event::WsInput { conn, ex } => handler.ws_input(driver, conn, ex),
                Event::Wakeup { at } => self.wakeups.push(at),
                Event::Closed {
                    conn,
                    app,
                    exchanges,
                } => handler.closed(conn, app, exchanges),
                Event::Log(line) => handler.log(line),
            }
        }
    }

    /// One round: wait for readiness (up to `timeout`, and no longer than
    /// the next sweep or listener wake-up), dispatch it, flush what the
    /// round corked, run the sweep when due.
    pub fn turn(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.pump();
        let now = self.driver.now();
        let mut until = self.next_sweep;
        for &at in &self.wakeups {
            until = until.min(at);
        }
        let wait = Duration::from_secs_f64((until - now).max(0.0));
        let wait = timeout.map_or(wait, |t| t.min(wait));
        let millis = i32::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
        self.ready.clear();
        match self.reactor.poll(millis, &mut self.ready) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        for i in 0..self.ready.len() {
            let r = self.ready[i];
            let Some(token) = self.reactor.get(r.fd).map(|s| s.data) else {
                continue;
            };
            self.driver.ready(token, r.readable, r.writable);
            self.pump();
        }
        // The end of the tick.
        self.driver.take_flush_request();
        self.driver.flush_corked();
        self.pump();
        let now = self.driver.now();
        if now >= self.next_sweep {
            self.driver.sweep();
            self.next_sweep = now + self.driver.settings().sweep_interval();
            self.pump();
        }
        if self.wakeups.iter().any(|&at| at <= now) {
            self.wakeups.retain(|&at| at > now);
            self.driver.resume_listeners();
            self.pump();
        }
        Ok(())
    }

    /// Serve until an error.
    pub fn run(&mut self) -> io::Result<()> {
        loop {
            self.turn(None)?;
        }
    }

    /// Turn until `done()` or `limit`; whether `done()` became true.
    pub fn run_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&mut Self) -> bool,
    ) -> io::Result<bool> {
        let deadline = Instant::now() + limit;
        loop {
            if done(self) {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            self.turn(Some((deadline - now).min(Duration::from_millis(20))))?;
        }
    }
}

/// One reactor update. A failing registration leaves the connection to
/// its timeouts (it can only fail for an fd that is gone already).
fn apply(reactor: &mut Reactor<usize>, update: IoUpdate) {
    match update {
        IoUpdate::Register {
            fd,
            token,
            interest,
        } => {
            let _ = reactor.register(fd, interest, token.to_usize());
        }
        IoUpdate::Interest { fd, interest } => {
            let _ = reactor.set_interest(fd, interest);
        }
        IoUpdate::Deregister { fd } => {
            reactor.deregister(fd);
        }
        IoUpdate::Close { fd, stream } => {
            reactor.deregister(fd);
            drop(stream);
        }
    }
}
