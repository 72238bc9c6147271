//! One WebSocket connection of the load generator and what the run counts:
//! the handshake, the message in flight, the frames read back and checked,
//! the closing handshake. `mod.rs` drives them.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::{Options, CLOSE_TIMEOUT, IO_TIMEOUT, KEPT_ERRORS, NORMAL_CLOSURE, OFFSETS, READ_SLACK};
use crate::echo_client::{random_bytes, sys, would_block};
use crate::ws_wire::{self, Deflate, DeflateParams};

/// Compressible ASCII (words of a small vocabulary), so text is valid
/// UTF-8 and deflate has something to do, as it would on JSON or chat text.
pub(super) fn text_pattern(len: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "the", "event", "loop", "socket", "frame", "message", "server", "client", "python", "rust",
        "asgi", "queue", "buffer", "deflate", "window", "close", "ping", "pong", "text", "binary",
        "value", "id", "name", "status", "ok", "error", "timeout", "{", "}", "\":\"", "1234", "56",
        "7", "true", "false", "null",
    ];
    let noise = random_bytes(len);
    let mut out = Vec::with_capacity(len + 16);
    let mut i = 0;
    while out.len() < len {
        out.extend_from_slice(WORDS[noise[i % len] as usize % WORDS.len()].as_bytes());
        out.push(b' ');
        i += 1;
    }
    out.truncate(len);
    out
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Phase {
    /// A message written (or being written) and its echo awaited.
    Echoing,
    /// Idle mode: a ping sent, its pong awaited.
    Pinging,
    /// Idle mode: open, nothing in flight.
    Idle,
    /// Our close frame sent; the server's awaited.
    Closing,
    /// The server's close frame received; its TCP close awaited.
    CloseReceived,
    Done,
    /// No close frame or no TCP close within CLOSE_TIMEOUT: noted.
    Unclosed,
    Failed,
}

struct Failure {
    mismatch: bool,
    message: String,
}

fn fail<T>(message: impl Into<String>) -> Result<T, Failure> {
    Err(Failure {
        mismatch: false,
        message: message.into(),
    })
}

fn mismatch<T>(message: impl Into<String>) -> Result<T, Failure> {
    Err(Failure {
        mismatch: true,
        message: message.into(),
    })
}

pub(super) struct Connection {
    pub(super) id: usize,
    pub(super) stream: TcpStream,
    pub(super) phase: Phase,
    pub(super) deflate: Option<Deflate>,
    /// Messages echoed and verified.
    pub(super) number: usize,
    /// Where the message in flight starts in the pattern.
    pub(super) offset: usize,
    pub(super) sent_at: Instant,
    /// Frames queued for the socket and how much of them is written.
    pub(super) out: Vec<u8>,
    pub(super) out_at: usize,
    /// Bytes read: `inbuf[start..filled]` is not parsed yet.
    pub(super) inbuf: Vec<u8>,
    pub(super) start: usize,
    pub(super) filled: usize,
    /// A fragmented message's payload so far, its opcode and RSV1.
    pub(super) fragments: Vec<u8>,
    pub(super) fragmented: Option<(u8, bool)>,
    pub(super) deadline: Instant,
}

/// Everything the run counts, over all connections.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) verified: u64,
    pub(super) failed: u64,
    pub(super) mismatches: u64,
    pub(super) unclosed: u64,
    pub(super) bad_close: u64,
    pub(super) deflate: u64,
    pub(super) deflate_params: Option<DeflateParams>,
    pub(super) errors: Vec<(String, u64)>,
}

pub(super) struct Client {
    pub(super) pattern: Vec<u8>,
    pub(super) size: usize,
    pub(super) opcode: u8,
    /// Set when the measured window closes: each connection closes after
    /// its message in flight.
    pub(super) stopping: bool,
    /// Round-trip times (µs) of the echoes verified in the window.
    pub(super) recording: bool,
    pub(super) latencies_us: Vec<u32>,
    /// Scratch for compressed and inflated payloads.
    pub(super) packed: Vec<u8>,
    pub(super) inflated: Vec<u8>,
    pub(super) mask_state: u64,
    pub(super) tally: Tally,
}

impl Client {
    fn mask(&mut self) -> [u8; 4] {
        // xorshift64: a fresh key per frame, as RFC 6455 §5.3 asks.
        let s = &mut self.mask_state;
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        (*s as u32).to_ne_bytes()
    }

    pub(super) fn open(&mut self, id: usize, opts: &Options) -> Result<Connection, String> {
        let stream =
            TcpStream::connect_timeout(&opts.addr, IO_TIMEOUT).map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .map_err(|e| e.to_string())?;
        let mut nonce = [0u8; 16];
        for chunk in nonce.chunks_mut(4) {
            chunk.copy_from_slice(&self.mask());
        }
        let key = ws_wire::key(nonce);
        let host = opts.addr.to_string();
        let request = ws_wire::request(&host, &opts.path, &key, opts.deflate);
        (&stream)
            .write_all(request.as_bytes())
            .map_err(|e| format!("sending the handshake: {e}"))?;
        let mut head = Vec::with_capacity(512);
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(end) = ws_wire::head_end(&head)? {
                break end;
            }
            match (&stream).read(&mut chunk) {
                Ok(0) => return Err("server closed during the handshake".into()),
                Ok(n) => head.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("reading the handshake response: {e}")),
            }
        };
        let params = ws_wire::check_response(&head[..end], &key, opts.deflate)?;
        if let Some(p) = params {
            self.tally.deflate += 1;
            self.tally.deflate_params.get_or_insert(p);
        }
        stream.set_nonblocking(true).map_err(|e| e.to_string())?;
        let mut inbuf = vec![0u8; opts.size + READ_SLACK];
        let rest = &head[end..];
        inbuf[..rest.len()].copy_from_slice(rest);
        Ok(Connection {
            id,
            stream,
            phase: Phase::Idle,
            deflate: params.map(Deflate::new),
            number: 0,
            offset: 0,
            sent_at: Instant::now(),
            out: Vec::with_capacity(opts.size + 16),
            out_at: 0,
            inbuf,
            start: 0,
            filled: rest.len(),
            fragments: Vec::new(),
            fragmented: None,
            deadline: Instant::now() + IO_TIMEOUT,
        })
    }

    /// Queue the connection's first message.
    pub(super) fn start_echo(&mut self, conn: &mut Connection) {
        if let Err(failure) = self.send_message(conn) {
            self.record_failure(conn, failure);
        }
    }

    /// Queue the connection's next message.
    fn send_message(&mut self, conn: &mut Connection) -> Result<(), Failure> {
        conn.offset = (conn.id * 61 + conn.number * 7) % OFFSETS;
        let mask = self.mask();
        let payload = &self.pattern[conn.offset..conn.offset + self.size];
        match conn.deflate.as_mut() {
            Some(deflate) => {
                deflate.compress(payload, &mut self.packed).or_else(fail)?;
                ws_wire::encode(&mut conn.out, self.opcode, true, &self.packed, mask);
            }
            None => ws_wire::encode(&mut conn.out, self.opcode, false, payload, mask),
        }
        conn.phase = Phase::Echoing;
        conn.sent_at = Instant::now();
        Ok(())
    }

    pub(super) fn send_control(&mut self, conn: &mut Connection, opcode: u8, payload: &[u8]) {
        let mask = self.mask();
        ws_wire::encode(&mut conn.out, opcode, false, payload, mask);
    }

    pub(super) fn start_close(&mut self, conn: &mut Connection) {
        self.send_control(conn, ws_wire::OP_CLOSE, &NORMAL_CLOSURE.to_be_bytes());
        conn.phase = Phase::Closing;
        conn.deadline = Instant::now() + CLOSE_TIMEOUT;
    }

    fn record_failure(&mut self, conn: &mut Connection, failure: Failure) {
        conn.phase = Phase::Failed;
        self.tally.failed += 1;
        self.tally.mismatches += u64::from(failure.mismatch);
        let message = format!("connection {}: {}", conn.id, failure.message);
        // Counted by the message without its connection number.
        let key = failure.message;
        let errors = &mut self.tally.errors;
        if let Some((_, count)) = errors.iter_mut().find(|(m, _)| m.ends_with(&key)) {
            *count += 1;
        } else if errors.len() < KEPT_ERRORS {
            errors.push((message, 1));
        }
    }

    fn timed_out(&mut self, conn: &mut Connection) {
        if matches!(conn.phase, Phase::Closing | Phase::CloseReceived) {
            conn.phase = Phase::Unclosed;
            self.tally.unclosed += 1;
        } else {
            let what = format!(
                "no progress for {} s (server stalled)",
                IO_TIMEOUT.as_secs()
            );
            self.record_failure(
                conn,
                Failure {
                    mismatch: false,
                    message: what,
                },
            );
        }
    }

    /// Make what progress the socket allows; `readable` when poll said so.
    fn service(&mut self, conn: &mut Connection, readable: bool) {
        if !matches!(conn.phase, Phase::Closing | Phase::CloseReceived) {
            conn.deadline = Instant::now() + IO_TIMEOUT;
        }
        let outcome = self.write(conn).and_then(|()| {
            if readable {
                self.read(conn)?;
                // A message queued by an echo just verified goes out now;
                // its own echo cannot be there yet, so no read follows.
                self.write(conn)?;
            }
            Ok(())
        });
        if let Err(failure) = outcome {
            self.record_failure(conn, failure);
        }
    }

    fn write(&mut self, conn: &mut Connection) -> Result<(), Failure> {
        while conn.out_at < conn.out.len() {
            match conn.stream.write(&conn.out[conn.out_at..]) {
                Ok(n) => conn.out_at += n,
                Err(e) if would_block(&e) => return Ok(()),
                // After the server's close it may be gone already.
                Err(_) if conn.phase == Phase::CloseReceived => break,
                Err(e) => return fail(format!("write: {e}")),
            }
        }
        conn.out.clear();
        conn.out_at = 0;
        Ok(())
    }

    fn read(&mut self, conn: &mut Connection) -> Result<(), Failure> {
        loop {
            if conn.start == conn.filled {
                conn.start = 0;
                conn.filled = 0;
            }
            if conn.filled == conn.inbuf.len() {
                if conn.start > 0 {
                    conn.inbuf.copy_within(conn.start..conn.filled, 0);
                    conn.filled -= conn.start;
                    conn.start = 0;
                } else {
                    // One frame larger than the buffer.
                    let grown = conn.inbuf.len() * 2;
                    conn.inbuf.resize(grown, 0);
                }
            }
            let room = &mut conn.inbuf[conn.filled..];
            match conn.stream.read(room) {
                Ok(0) => return self.eof(conn),
                Ok(n) => {
                    conn.filled += n;
                    self.frames(conn)?;
                    if matches!(conn.phase, Phase::Done | Phase::Failed) {
                        return Ok(());
                    }
                }
                Err(e) if would_block(&e) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return self.eof(conn),
                Err(e) => return fail(format!("read ({:?}): {e}", conn.phase)),
            }
        }
    }

    /// The server closed (or reset) the TCP connection: the end of the
    /// closing handshake after its close frame; after only ours, a close
    /// without a close frame (noted in `bad_close`, the echoes were right);
    /// otherwise a failure.
    fn eof(&mut self, conn: &mut Connection) -> Result<(), Failure> {
        match conn.phase {
            Phase::CloseReceived => {}
            Phase::Closing => self.tally.bad_close += 1,
            phase => return fail(format!("server closed the TCP connection ({phase:?})")),
        }
        conn.phase = Phase::Done;
        Ok(())
    }

    /// Handle every complete frame in the read buffer.
    fn frames(&mut self, conn: &mut Connection) -> Result<(), Failure> {
        loop {
            let buf = &conn.inbuf[conn.start..conn.filled];
            let Some(h) = ws_wire::parse_header(buf).or_else(fail)? else {
                return Ok(());
            };
            let total = h.header_len + h.payload_len;
            if buf.len() < total {
                if total > conn.inbuf.len() {
                    // Room for the whole frame, once compacted.
                    conn.inbuf.resize(total + READ_SLACK, 0);
                }
                return Ok(());
            }
            let (from, to) = (conn.start + h.header_len, conn.start + total);
            conn.start += total;
            if conn.phase == Phase::CloseReceived {
                return mismatch(format!(
                    "a frame (opcode {}) after the server's close",
                    h.opcode
                ));
            }
            match h.opcode {
                ws_wire::OP_PING => {
                    let payload = conn.inbuf[from..to].to_vec();
                    self.send_control(conn, ws_wire::OP_PONG, &payload);
                }
                ws_wire::OP_PONG => {
                    if conn.phase == Phase::Pinging {
                        if conn.inbuf[from..to] != conn.id.to_be_bytes() {
                            return mismatch("the pong does not carry the ping's payload");
                        }
                        conn.phase = Phase::Idle;
                    }
                }
                ws_wire::OP_CLOSE => self.close_frame(conn, from, to)?,
                ws_wire::OP_TEXT | ws_wire::OP_BINARY if conn.fragmented.is_none() => {
                    if h.fin {
                        self.message(conn, h.opcode, h.rsv1, (from, to))?;
                    } else {
                        conn.fragments.clear();
                        conn.fragments.extend_from_slice(&conn.inbuf[from..to]);
                        conn.fragmented = Some((h.opcode, h.rsv1));
                    }
                }
                ws_wire::OP_CONTINUATION if conn.fragmented.is_some() => {
                    conn.fragments.extend_from_slice(&conn.inbuf[from..to]);
                    if h.fin {
                        let (opcode, rsv1) = conn.fragmented.take().unwrap_or_default();
                        let whole = std::mem::take(&mut conn.fragments);
                        let outcome = self.verify(conn, opcode, rsv1, &whole);
                        conn.fragments = whole;
                        outcome?;
                        self.echoed(conn)?;
                    }
                }
                op => return mismatch(format!("unexpected frame, opcode {op}")),
            }
        }
    }

    fn close_frame(
        &mut self,
        conn: &mut Connection,
        from: usize,
        to: usize,
    ) -> Result<(), Failure> {
        let payload = &conn.inbuf[from..to];
        let code = (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
        if conn.phase != Phase::Closing {
            let reason = String::from_utf8_lossy(payload.get(2..).unwrap_or_default());
            return fail(format!(
                "server closed the WebSocket ({:?}, code {code:?} {reason:?})",
                conn.phase
            ));
        }
        if code != Some(NORMAL_CLOSURE) {
            self.tally.bad_close += 1;
        }
        conn.phase = Phase::CloseReceived;
        Ok(())
    }

    fn message(
        &mut self,
        conn: &mut Connection,
        opcode: u8,
        rsv1: bool,
        (from, to): (usize, usize),
    ) -> Result<(), Failure> {
        // Compared in place: no copy of a 256 KiB echo.
        let inbuf = std::mem::take(&mut conn.inbuf);
        let outcome = self.verify(conn, opcode, rsv1, &inbuf[from..to]);
        conn.inbuf = inbuf;
        outcome?;
        self.echoed(conn)
    }

    fn verify(
        &mut self,
        conn: &mut Connection,
        opcode: u8,
        rsv1: bool,
        payload: &[u8],
    ) -> Result<(), Failure> {
        if conn.phase != Phase::Echoing {
            return mismatch(format!("a data frame while {:?}", conn.phase));
        }
        if opcode != self.opcode {
            return mismatch(format!(
                "echo of message {} has opcode {opcode}, sent {}",
                conn.number, self.opcode
            ));
        }
        let got = if rsv1 {
            let Some(deflate) = conn.deflate.as_mut() else {
                return mismatch("RSV1 set without permessage-deflate");
            };
            self.packed.clear();
            self.packed.extend_from_slice(payload);
            deflate
                .decompress(&mut self.packed, &mut self.inflated, self.size)
                .or_else(mismatch)?;
            &self.inflated[..]
        } else {
            payload
        };
        let expected = &self.pattern[conn.offset..conn.offset + self.size];
        if got != expected {
            let at = got.iter().zip(expected).position(|(a, b)| a != b);
            return mismatch(format!(
                "echo of message {} differs from what was sent ({} bytes, sent {}; first difference at {})",
                conn.number,
                got.len(),
                expected.len(),
                at.unwrap_or(got.len().min(expected.len()))
            ));
        }
        Ok(())
    }

    fn echoed(&mut self, conn: &mut Connection) -> Result<(), Failure> {
        self.tally.verified += 1;
        if self.recording {
            let us = conn.sent_at.elapsed().as_micros().min(u32::MAX as u128) as u32;
            self.latencies_us.push(us);
        }
        conn.number += 1;
        if self.stopping {
            self.start_close(conn);
            Ok(())
        } else {
            self.send_message(conn)
        }
    }
}

pub(super) fn interest(conn: &Connection) -> i16 {
    let write = if conn.out_at < conn.out.len() {
        sys::POLLOUT
    } else {
        0
    };
    match conn.phase {
        Phase::Echoing | Phase::Pinging | Phase::Closing | Phase::CloseReceived => {
            sys::POLLIN | write
        }
        Phase::Idle => write,
        Phase::Done | Phase::Unclosed | Phase::Failed => 0,
    }
}

/// Poll and service connections until `done()` says so; `wake` gives extra
/// instants to wake at (the window's edges), `tick` runs at each wake-up.
pub(super) fn drive(
    client: &mut Client,
    conns: &mut [Connection],
    mut tick: impl FnMut(&mut Client, &mut [Connection], Instant) -> bool,
    wake: &[Instant],
) -> Result<(), String> {
    let mut fds: Vec<sys::PollFd> = Vec::with_capacity(conns.len());
    let mut live: Vec<usize> = Vec::with_capacity(conns.len());
    loop {
        let now = Instant::now();
        if !tick(client, conns, now) {
            return Ok(());
        }
        for conn in conns.iter_mut() {
            if interest(conn) & sys::POLLIN != 0 && now >= conn.deadline {
                client.timed_out(conn);
            }
        }
        fds.clear();
        live.clear();
        for (i, conn) in conns.iter().enumerate() {
            let events = interest(conn);
            if events != 0 {
                fds.push(sys::PollFd {
                    fd: conn.stream.as_raw_fd(),
                    events,
                    revents: 0,
                });
                live.push(i);
            }
        }
        let next_wake = wake
            .iter()
            .copied()
            .chain(live.iter().map(|&i| conns[i].deadline))
            .filter(|&t| t > now)
            .min()
            .unwrap_or(now + Duration::from_millis(10));
        sys::wait(&mut fds, next_wake - now).map_err(|e| format!("poll: {e}"))?;
        for (fd, &i) in fds.iter().zip(&live) {
            if fd.revents != 0 {
                client.service(&mut conns[i], fd.revents & !sys::POLLOUT != 0);
            }
        }
    }
}

pub(super) fn settled(conns: &[Connection]) -> bool {
    conns
        .iter()
        .all(|c| matches!(c.phase, Phase::Done | Phase::Unclosed | Phase::Failed))
}
