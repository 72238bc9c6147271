//! `cargo xtask echo-client`: the load generator of the TCP echo benchmark
//! (`bench/bench.py echo`, defined in bench/README.md).
//!
//! ```text
//! xtask echo-client --addr HOST:PORT [--conns 10] [--size 1024] [--warmup 1] [--duration 3]
//!                   [--messages N]
//! ```
//!
//! Each connection keeps one message in flight: write `size` bytes, read the
//! whole echo, checking every chunk byte for byte against what was sent,
//! repeat. With `--messages N` a connection stops after N echoes and stays
//! open and silent until the window closes (the idle-connection workload).
//! When the measured window closes, each connection finishes its message,
//! half-closes, and checks that the server sends nothing more; a server that
//! then does not close the connection is counted in `unclosed`.
//!
//! Connections are opened while the others run, at most [`OPEN_AHEAD`]
//! awaiting their first echo at a time, so a listener's accept backlog
//! (asyncio's default is 100) never overflows into SYN retransmits. The
//! measured window opens after the warm-up once every connection is open
//! and has echoed a message (or, with `--messages`, gone idle).
//!
//! One thread drives every connection with non-blocking sockets and poll(2).
//! A thread per connection would be simpler, but the server would then pay a
//! thread wake-up per message (the kernel wakes the reader from inside the
//! server's `send`): measured here, that cost uvloop's echo server about a
//! fifth of its messages per CPU-second. A single poller is only woken when
//! it sleeps, and it sleeps only when no echo is pending.
//!
//! Stdout is JSON lines, so a harness can sample the server at the edges of
//! the measured window while it is open:
//!
//! ```text
//! {"event":"measure_start"}        when the warm-up ends (every connection open)
//! {"event":"measure_end"}          when the measured window closes
//! {"event":"result", "messages", "bytes", "seconds", "errors", ...}
//! ```
//!
//! `messages` and `bytes` count echoes verified inside the measured window;
//! `bytes_sent` counts everything sent over the whole run (warm-up and each
//! connection's last message included), for a cross-check against the
//! server's own count. `errors` counts failed connections (`mismatches` of
//! them for wrong bytes). Exits 1 when any connection failed.

use std::fmt::Write as _;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: xtask echo-client --addr HOST:PORT [--conns N] [--size BYTES] \
                     [--warmup SECONDS] [--duration SECONDS] [--messages N]";

/// A server that makes no progress for this long is reported as stalled.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection waits for the server to close after our
/// half-close. A server that does not (rloop 0.5 never sends its FIN) is
/// counted in `unclosed`: a defect worth reporting, but not one that makes
/// its echo figures wrong.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// More time to close per this many connections half-closed at once (a
/// server closing 10,000 idle connections needs more than a second).
const CLOSE_TIMEOUT_PER_1000: Duration = Duration::from_secs(1);

/// Connections opened and not yet through their first echo, at most: below
/// asyncio's default listen backlog of 100.
const OPEN_AHEAD: usize = 64;

/// Messages are windows into one random buffer at offsets that move with
/// every message, so an echo of an earlier message (a stale buffer) or of
/// another connection's message does not compare equal.
const OFFSETS: usize = 251;

/// At most this many error messages are kept for the report.
const KEPT_ERRORS: usize = 5;

/// poll(2), which std uses internally but does not expose.
pub(crate) mod sys {
    use std::ffi::{c_int, c_short};
    use std::io;
    use std::time::Duration;

    pub const POLLIN: c_short = 0x1;
    pub const POLLOUT: c_short = 0x4;

    #[cfg(target_os = "linux")]
    type Nfds = std::ffi::c_ulong;
    #[cfg(not(target_os = "linux"))]
    type Nfds = std::ffi::c_uint;

    #[repr(C)]
    pub struct PollFd {
        pub fd: c_int,
        pub events: c_short,
        pub revents: c_short,
    }

    extern "C" {
        fn poll(fds: *mut PollFd, nfds: Nfds, timeout: c_int) -> c_int;
    }

    /// Wait until one of `fds` is ready or `timeout` passes (rounded up to
    /// whole milliseconds, so a short wait never becomes a busy loop).
    pub fn wait(fds: &mut [PollFd], timeout: Duration) -> io::Result<()> {
        let ms = timeout.as_micros().div_ceil(1000).min(c_int::MAX as u128) as c_int;
        // SAFETY: `fds` is an exclusively borrowed array of `fds.len()`
        // pollfd structs (same layout as C's), valid for the whole call.
        let n = unsafe { poll(fds.as_mut_ptr(), fds.len() as Nfds, ms) };
        if n >= 0 {
            return Ok(());
        }
        match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            e => Err(e),
        }
    }
}

struct Options {
    addr: SocketAddr,
    conns: usize,
    size: usize,
    warmup: Duration,
    duration: Duration,
    /// Echoes per connection before it goes idle; 0: no limit.
    messages: usize,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut addr = None;
    let mut conns = 10;
    let mut size = 1024;
    let mut warmup = Duration::from_secs(1);
    let mut duration = Duration::from_secs(3);
    let mut messages = 0;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}\n{USAGE}");
        match flag.as_str() {
            "--addr" => {
                let mut resolved = value.to_socket_addrs().map_err(|e| bad(&e))?;
                addr = Some(
                    resolved
                        .next()
                        .ok_or_else(|| bad(&"resolves to no address"))?,
                );
            }
            "--conns" => conns = value.parse().map_err(|e| bad(&e))?,
            "--size" => size = value.parse().map_err(|e| bad(&e))?,
            "--warmup" => warmup = seconds(value).map_err(|e| bad(&e))?,
            "--duration" => duration = seconds(value).map_err(|e| bad(&e))?,
            "--messages" => messages = value.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    let addr = addr.ok_or_else(|| format!("--addr is required\n{USAGE}"))?;
    if conns == 0 || size == 0 || duration.is_zero() {
        return Err(format!(
            "--conns, --size and --duration must be positive\n{USAGE}"
        ));
    }
    Ok(Options {
        addr,
        conns,
        size,
        warmup,
        duration,
        messages,
    })
}

pub(crate) fn seconds(text: &str) -> Result<Duration, String> {
    let s: f64 = text.parse().map_err(|e| format!("{e}"))?;
    Duration::try_from_secs_f64(s).map_err(|e| format!("{e}"))
}

/// Deterministic pseudo-random bytes (xorshift64), `len` of them.
pub(crate) fn random_bytes(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    /// A message is being written and its echo read (both at once, so a
    /// message larger than the socket buffers cannot deadlock).
    Echoing,
    /// Done with its `--messages`: open and silent until the window closes.
    Idle,
    /// Half-closed after the last echo; waiting for the server's close.
    Closing,
    Done,
    /// The server never closed after our half-close: noted, not an error
    /// (every echo was verified; see CLOSE_TIMEOUT).
    Unclosed,
    Failed,
}

struct Connection {
    id: usize,
    stream: TcpStream,
    phase: Phase,
    /// Messages echoed and verified on this connection.
    number: usize,
    /// Where the message in flight starts in the pattern.
    offset: usize,
    written: usize,
    received: usize,
    /// When waiting for the server stops: moved on with every sign of life
    /// while echoing, fixed once closing.
    deadline: Instant,
}

/// Why a connection failed; `mismatch` when the server's bytes were wrong
/// rather than missing.
struct Failure {
    mismatch: bool,
    message: String,
}

impl Failure {
    fn io(what: &str, e: &io::Error) -> Failure {
        Failure {
            mismatch: false,
            message: format!("{what}: {e}"),
        }
    }
}

pub(crate) fn would_block(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted)
}

impl Connection {
    fn open(id: usize, addr: SocketAddr) -> io::Result<Connection> {
        let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
        // Each message is written whole and the echo awaited: Nagle would
        // only delay the tail of a message.
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        let mut conn = Connection {
            id,
            stream,
            phase: Phase::Echoing,
            number: 0,
            offset: 0,
            written: 0,
            received: 0,
            deadline: Instant::now() + IO_TIMEOUT,
        };
        conn.next_message();
        Ok(conn)
    }

    fn next_message(&mut self) {
        self.offset = (self.id * 61 + self.number * 7) % OFFSETS;
        self.written = 0;
        self.received = 0;
    }

    /// Open and not yet through its first echo (a failed one counts as
    /// through: it will not echo).
    fn is_new(&self) -> bool {
        self.number == 0 && self.phase == Phase::Echoing
    }

    fn interest(&self, size: usize) -> i16 {
        match self.phase {
            Phase::Echoing if self.written < size => sys::POLLIN | sys::POLLOUT,
            Phase::Echoing | Phase::Closing => sys::POLLIN,
            Phase::Idle | Phase::Done | Phase::Unclosed | Phase::Failed => 0,
        }
    }
}

/// Everything the run counts, over all connections.
#[derive(Default)]
struct Tally {
    verified: u64,
    bytes_sent: u64,
    failed: u64,
    mismatches: u64,
    unclosed: u64,
    /// Distinct error messages (at most KEPT_ERRORS) and how many
    /// connections each ended.
    errors: Vec<(String, u64)>,
}

struct Client {
    pattern: Vec<u8>,
    size: usize,
    /// Echoes per connection before it goes idle; 0: no limit.
    limit: usize,
    /// How long the server has to close after our half-close.
    close_timeout: Duration,
    /// Where reads land before they are compared with what was sent.
    scratch: Vec<u8>,
    /// Set when the measured window closes: no new messages from then on.
    stopping: bool,
    tally: Tally,
}

impl Client {
    /// Make what progress the socket allows without blocking; `readable`
    /// when poll said there is something to read (or an error or hang-up).
    fn service(&mut self, conn: &mut Connection, readable: bool) {
        let outcome = match conn.phase {
            Phase::Echoing => {
                conn.deadline = Instant::now() + IO_TIMEOUT;
                self.echo(conn, readable)
            }
            Phase::Closing => self.close(conn),
            Phase::Idle | Phase::Done | Phase::Unclosed | Phase::Failed => Ok(()),
        };
        if let Err(failure) = outcome {
            self.fail(conn, failure);
        }
    }

    fn fail(&mut self, conn: &mut Connection, failure: Failure) {
        conn.phase = Phase::Failed;
        self.tally.failed += 1;
        self.tally.mismatches += u64::from(failure.mismatch);
        let errors = &mut self.tally.errors;
        if let Some((_, count)) = errors.iter_mut().find(|(m, _)| *m == failure.message) {
            *count += 1;
        } else if errors.len() < KEPT_ERRORS {
            errors.push((failure.message, 1));
        }
    }

    /// `conn` passed its deadline.
    fn timed_out(&mut self, conn: &mut Connection) {
        if conn.phase == Phase::Closing {
            conn.phase = Phase::Unclosed;
            self.tally.unclosed += 1;
        } else {
            let message = format!("no echo for {} s (server stalled)", IO_TIMEOUT.as_secs());
            self.fail(
                conn,
                Failure {
                    mismatch: false,
                    message,
                },
            );
        }
    }

    fn echo(&mut self, conn: &mut Connection, mut readable: bool) -> Result<(), Failure> {
        let size = self.size;
        loop {
            let message = &self.pattern[conn.offset..conn.offset + size];
            while conn.written < size {
                match conn.stream.write(&message[conn.written..]) {
                    Ok(n) => {
                        conn.written += n;
                        self.tally.bytes_sent += n as u64;
                    }
                    // The server is not reading: drain its echo so it can.
                    Err(e) if would_block(&e) => {
                        readable = true;
                        break;
                    }
                    Err(e) => return Err(Failure::io("write", &e)),
                }
            }
            while readable && conn.received < size {
                let room = &mut self.scratch[..size - conn.received];
                match conn.stream.read(room) {
                    Ok(0) => {
                        return Err(Failure {
                            mismatch: false,
                            message: "server closed the connection mid-echo".into(),
                        })
                    }
                    Ok(n) => {
                        let expected = &message[conn.received..conn.received + n];
                        if room[..n] != *expected {
                            let at = room.iter().zip(expected).position(|(a, b)| a != b);
                            return Err(Failure {
                                mismatch: true,
                                message: format!(
                                    "echo of message {} differs from what was sent at byte {}",
                                    conn.number,
                                    conn.received + at.unwrap_or(0)
                                ),
                            });
                        }
                        conn.received += n;
                    }
                    Err(e) if would_block(&e) => break,
                    Err(e) => return Err(Failure::io("reading the echo", &e)),
                }
            }
            if conn.received < size {
                return Ok(()); // wait for more of the echo
            }
            self.tally.verified += 1;
            conn.number += 1;
            if self.stopping {
                return self.half_close(conn);
            }
            if conn.number == self.limit {
                conn.phase = Phase::Idle;
                return Ok(());
            }
            conn.next_message();
            // The echo of a message just written is not there yet: reading
            // now would only cost a syscall that finds nothing.
            readable = false;
        }
    }

    /// The last echo is in: half-close and wait for the server's close.
    fn half_close(&mut self, conn: &mut Connection) -> Result<(), Failure> {
        conn.stream
            .shutdown(Shutdown::Write)
            .map_err(|e| Failure::io("shutdown", &e))?;
        conn.phase = Phase::Closing;
        conn.deadline = Instant::now() + self.close_timeout;
        Ok(())
    }

    /// The window closed: idle connections half-close now (the others after
    /// the echo in flight).
    fn stop(&mut self, conns: &mut [Connection]) {
        self.stopping = true;
        for conn in conns.iter_mut().filter(|c| c.phase == Phase::Idle) {
            if let Err(failure) = self.half_close(conn) {
                self.fail(conn, failure);
            }
        }
    }

    /// After our half-close: the server must close without sending more.
    fn close(&mut self, conn: &mut Connection) -> Result<(), Failure> {
        match conn.stream.read(&mut self.scratch) {
            Ok(0) => conn.phase = Phase::Done,
            Ok(n) => {
                return Err(Failure {
                    mismatch: true,
                    message: format!("{n} bytes after the last echo"),
                })
            }
            Err(e) if would_block(&e) => {}
            // A reset after our FIN still means the server closed.
            Err(e) if e.kind() == ErrorKind::ConnectionReset => conn.phase = Phase::Done,
            Err(e) => return Err(Failure::io("waiting for the server to close", &e)),
        }
        Ok(())
    }
}

pub(crate) fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Distinct error messages with how many connections each ended, as the
/// elements of a JSON array (the echo and WebSocket clients' report).
pub(crate) fn error_list(errors: &[(String, u64)]) -> String {
    let quoted: Vec<String> = errors
        .iter()
        .map(|(message, count)| {
            let plural = if *count == 1 { "" } else { "s" };
            json_string(&format!("{message} ({count} connection{plural})"))
        })
        .collect();
    quoted.join(",")
}

pub(crate) fn event(name: &str) {
    // The harness reads a pipe and must see each event when it happens.
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{{\"event\":\"{name}\"}}");
    let _ = out.flush();
}

/// What a run measured and found.
struct Report {
    /// Echoes verified inside the measured window, and its length.
    messages: u64,
    seconds: f64,
    tally: Tally,
}

/// Drive every connection through warm-up, the measured window and the
/// close; `on_event` hears "measure_start" and "measure_end" as they happen.
fn run(opts: &Options, mut on_event: impl FnMut(&str)) -> Result<Report, String> {
    let extra = CLOSE_TIMEOUT_PER_1000.mul_f64(opts.conns as f64 / 1000.0);
    let mut client = Client {
        pattern: random_bytes(opts.size + OFFSETS),
        size: opts.size,
        limit: opts.messages,
        close_timeout: CLOSE_TIMEOUT + extra,
        scratch: vec![0; opts.size],
        stopping: false,
        tally: Tally::default(),
    };
    let mut conns: Vec<Connection> = Vec::with_capacity(opts.conns);

    let warmup_end = Instant::now() + opts.warmup;
    // (when, verified so far) at the start and at the end of the window
    let mut window_start: Option<(Instant, u64)> = None;
    let mut window_end: Option<(Instant, u64)> = None;
    let mut fds: Vec<sys::PollFd> = Vec::with_capacity(opts.conns);
    let mut live: Vec<usize> = Vec::with_capacity(opts.conns);
    loop {
        // Open more while few are waiting for their first echo.
        let mut unconfirmed = conns.iter().filter(|c| c.is_new()).count();
        while conns.len() < opts.conns && unconfirmed < OPEN_AHEAD {
            let id = conns.len();
            let conn = Connection::open(id, opts.addr)
                .map_err(|e| format!("connection {id} to {}: {e}", opts.addr))?;
            conns.push(conn);
            unconfirmed += 1;
        }

        let now = Instant::now();
        if window_start.is_none()
            && now >= warmup_end
            && conns.len() == opts.conns
            && unconfirmed == 0
        {
            window_start = Some((now, client.tally.verified));
            on_event("measure_start");
        }
        let measure_end = window_start.map(|(start, _)| start + opts.duration);
        if window_end.is_none() && measure_end.is_some_and(|end| now >= end) {
            window_end = Some((now, client.tally.verified));
            on_event("measure_end");
            client.stop(&mut conns);
        }
        for conn in conns.iter_mut() {
            if conn.interest(opts.size) != 0 && now >= conn.deadline {
                client.timed_out(conn);
            }
        }

        fds.clear();
        live.clear();
        for (i, conn) in conns.iter().enumerate() {
            let events = conn.interest(opts.size);
            if events != 0 {
                fds.push(sys::PollFd {
                    fd: conn.stream.as_raw_fd(),
                    events,
                    revents: 0,
                });
                live.push(i);
            }
        }
        if live.is_empty() && window_end.is_some() {
            break;
        }

        // Sleep until a socket is ready, the next edge of the window, or the
        // first connection's deadline.
        let next_wake = [Some(warmup_end), measure_end]
            .into_iter()
            .flatten()
            .chain(live.iter().map(|&i| conns[i].deadline))
            .filter(|&t| t > now)
            .min()
            .unwrap_or(now);
        sys::wait(&mut fds, next_wake - now).map_err(|e| format!("poll: {e}"))?;
        for (fd, &i) in fds.iter().zip(&live) {
            if fd.revents != 0 {
                client.service(&mut conns[i], fd.revents & !sys::POLLOUT != 0);
            }
        }
    }

    let (start, before) = window_start.expect("the window opened before it closed");
    let (end, after) = window_end.expect("the loop ends after the window closed");
    Ok(Report {
        messages: after - before,
        seconds: (end - start).as_secs_f64(),
        tally: client.tally,
    })
}

pub fn main(args: &[String]) -> Result<(), String> {
    let opts = parse(args)?;
    let Report {
        messages,
        seconds,
        tally,
    } = run(&opts, event)?;
    let errors = error_list(&tally.errors);
    println!(
        "{{\"event\":\"result\",\"addr\":\"{}\",\"conns\":{},\"size\":{},\"messages\":{messages},\
         \"bytes\":{},\"seconds\":{seconds:.6},\"bytes_sent\":{},\"total_messages\":{},\
         \"errors\":{},\"mismatches\":{},\"unclosed\":{},\"error_messages\":[{}]}}",
        opts.addr,
        opts.conns,
        opts.size,
        messages * opts.size as u64,
        tally.bytes_sent,
        tally.verified,
        tally.failed,
        tally.mismatches,
        tally.unclosed,
        errors,
    );
    if tally.failed == 0 {
        Ok(())
    } else {
        Err(format!(
            "{} of {} connections failed",
            tally.failed, opts.conns
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A threaded std echo server on a free port; `corrupt_at` flips the
    /// byte at that offset of the whole stream on connection 0.
    fn echo_server(corrupt_at: Option<usize>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let mut stream = stream.unwrap();
                let corrupt_at = corrupt_at.filter(|_| n == 0);
                std::thread::spawn(move || {
                    let (mut buf, mut seen) = ([0u8; 4096], 0);
                    loop {
                        let k = match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return, // dropping closes
                            Ok(k) => k,
                        };
                        if let Some(at) = corrupt_at.filter(|&at| (seen..seen + k).contains(&at)) {
                            buf[at - seen] ^= 1;
                        }
                        seen += k;
                        if stream.write_all(&buf[..k]).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    fn options(addr: SocketAddr, size: usize) -> Options {
        Options {
            addr,
            conns: 3,
            size,
            warmup: Duration::from_millis(50),
            duration: Duration::from_millis(150),
            messages: 0,
        }
    }

    #[test]
    fn echoes_verified_and_counted() {
        for size in [1, 1024, 100 * 1024] {
            let addr = echo_server(None);
            let mut events = Vec::new();
            let report = run(&options(addr, size), |e| events.push(e.to_string())).unwrap();
            assert_eq!(events, ["measure_start", "measure_end"]);
            let t = &report.tally;
            assert_eq!(
                (t.failed, t.mismatches, t.unclosed),
                (0, 0, 0),
                "{:?}",
                t.errors
            );
            assert!(report.messages > 0 && report.messages <= t.verified);
            assert_eq!(t.bytes_sent, t.verified * size as u64);
            // The window is timed as observed, within a poll wake-up of 150 ms.
            assert!((0.14..0.5).contains(&report.seconds), "{}", report.seconds);
        }
    }

    #[test]
    fn idle_connections_echo_once_then_wait_for_the_window() {
        let addr = echo_server(None);
        // More connections than are opened ahead at once.
        let opts = Options {
            conns: OPEN_AHEAD * 2 + 3,
            messages: 1,
            warmup: Duration::ZERO,
            ..options(addr, 1024)
        };
        let mut events = Vec::new();
        let report = run(&opts, |e| events.push(e.to_string())).unwrap();
        assert_eq!(events, ["measure_start", "measure_end"]);
        let t = &report.tally;
        assert_eq!((t.failed, t.unclosed), (0, 0), "{:?}", t.errors);
        // One echo each, all before the window: none inside it.
        assert_eq!(t.verified, opts.conns as u64);
        assert_eq!(report.messages, 0);
        assert_eq!(t.bytes_sent, opts.conns as u64 * 1024);
    }

    #[test]
    fn a_wrong_byte_is_a_mismatch() {
        let addr = echo_server(Some(5000));
        let report = run(&options(addr, 1024), |_| {}).unwrap();
        let t = &report.tally;
        assert_eq!((t.failed, t.mismatches), (1, 1));
        assert!(
            t.errors[0].0.contains("echo of message 4 differs"),
            "{:?}",
            t.errors
        );
    }

    #[test]
    fn parses_options() {
        let args: Vec<String> = [
            "--addr",
            "127.0.0.1:9",
            "--size",
            "10240",
            "--duration",
            "0.5",
        ]
        .map(String::from)
        .into();
        let opts = parse(&args).unwrap();
        assert_eq!((opts.conns, opts.size, opts.messages), (10, 10240, 0));
        assert_eq!(opts.duration, Duration::from_millis(500));
        assert!(parse(&["--size".into(), "0".into()]).is_err());
    }
}
