//! `cargo xtask ws-client`: the load generator of the WebSocket benchmark
//! (`bench/bench.py ws`, defined in bench/README.md).
//!
//! ```text
//! xtask ws-client --addr HOST:PORT [--path /ws] [--conns 10] [--size 64] [--text]
//!                 [--deflate] [--warmup 1] [--duration 5]
//! xtask ws-client --addr HOST:PORT --idle [--conns 1000] [--deflate]
//! ```
//!
//! **Echo** (the default): every connection keeps one message in flight:
//! send a masked binary (or `--text`) message of `size` bytes, read the
//! whole echo, compare every byte with what was sent, repeat. With
//! `--deflate` the handshake offers permessage-deflate; where the server
//! accepts it, every message is compressed by us and every compressed echo
//! inflated before the comparison. Round-trip times of the messages echoed
//! inside the measured window give the latency percentiles. When the window
//! closes, each connection finishes its message and starts the closing
//! handshake (close 1000); the server must answer with a close frame and
//! then close the TCP connection.
//!
//! **Idle** (`--idle`): open `conns` WebSockets (the handshake, then one
//! ping answered by a pong each, so each is known to be live), print
//! `{"event":"open"}`, hold them until stdin reaches EOF, then close them
//! all with the closing handshake. The harness reads the server's memory
//! while they are open.
//!
//! As in `echo_client.rs` one thread drives every connection with poll(2),
//! so the server never pays a thread wake-up of ours per message.
//!
//! Stdout is JSON lines: `measure_start` and `measure_end` (echo) or `open`
//! (idle) as they happen, then `result` with `messages`, `seconds`,
//! latency percentiles (`p50_us`, `p90_us`, `p99_us`, `max_us`),
//! `total_messages` (echoes verified over the whole run, for a cross-check
//! against the app's count), `deflate` (connections that negotiated it),
//! `errors`/`mismatches`, `unclosed` (no close frame or no TCP close within
//! a second) and `bad_close` (a close answered with another code). Exits 1
//! when any connection failed.

mod session;
#[cfg(test)]
mod tests;

use std::io::{self, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::echo_client::{error_list, event, json_string, random_bytes, seconds};
use crate::ws_wire;
use session::{drive, settled, text_pattern, Client, Connection, Phase, Tally};

const USAGE: &str = "usage: xtask ws-client --addr HOST:PORT [--path PATH] [--conns N] \
                     [--size BYTES] [--text] [--deflate] [--idle] [--warmup SECONDS] \
                     [--duration SECONDS]";

/// A server that makes no progress for this long is reported as stalled.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the closing handshake may take before the connection is noted
/// as `unclosed` (its echoes were right; see echo_client.rs).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
/// Messages are windows into one pattern at offsets that move with every
/// message, so a stale or another connection's echo does not compare equal.
const OFFSETS: usize = 251;
const KEPT_ERRORS: usize = 5;
/// Read buffer room beyond one message: frame headers, a deflate stream a
/// little larger than its input, a ping.
const READ_SLACK: usize = 16 * 1024;
/// Our closing handshake's code and what the server must echo.
const NORMAL_CLOSURE: u16 = 1000;

struct Options {
    addr: SocketAddr,
    path: String,
    conns: usize,
    size: usize,
    text: bool,
    deflate: bool,
    idle: bool,
    warmup: Duration,
    duration: Duration,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        path: "/ws".into(),
        conns: 10,
        size: 64,
        text: false,
        deflate: false,
        idle: false,
        warmup: Duration::from_secs(1),
        duration: Duration::from_secs(5),
    };
    let mut addr = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--text" => opts.text = true,
            "--deflate" => opts.deflate = true,
            "--idle" => opts.idle = true,
            _ => {
                let value = it
                    .next()
                    .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
                let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}\n{USAGE}");
                match flag.as_str() {
                    "--addr" => {
                        let mut found = value.to_socket_addrs().map_err(|e| bad(&e))?;
                        addr = Some(found.next().ok_or_else(|| bad(&"resolves to no address"))?);
                    }
                    "--path" => opts.path = value.clone(),
                    "--conns" => opts.conns = value.parse().map_err(|e| bad(&e))?,
                    "--size" => opts.size = value.parse().map_err(|e| bad(&e))?,
                    "--warmup" => opts.warmup = seconds(value).map_err(|e| bad(&e))?,
                    "--duration" => opts.duration = seconds(value).map_err(|e| bad(&e))?,
                    _ => return Err(format!("unknown option {flag}\n{USAGE}")),
                }
            }
        }
    }
    opts.addr = addr.ok_or_else(|| format!("--addr is required\n{USAGE}"))?;
    if opts.conns == 0 || opts.size == 0 || opts.duration.is_zero() {
        return Err(format!(
            "--conns, --size and --duration must be positive\n{USAGE}"
        ));
    }
    Ok(opts)
}

struct Report {
    messages: u64,
    seconds: f64,
    latencies_us: Vec<u32>,
    tally: Tally,
}

fn new_client(opts: &Options) -> Client {
    let pattern_len = opts.size + OFFSETS;
    Client {
        pattern: if opts.text {
            text_pattern(pattern_len)
        } else {
            random_bytes(pattern_len)
        },
        size: opts.size,
        opcode: if opts.text {
            ws_wire::OP_TEXT
        } else {
            ws_wire::OP_BINARY
        },
        stopping: false,
        recording: false,
        latencies_us: Vec::new(),
        packed: Vec::new(),
        inflated: Vec::new(),
        mask_state: 0x2545_F491_4F6C_DD1D,
        tally: Tally::default(),
    }
}

fn open_all(client: &mut Client, opts: &Options) -> Result<Vec<Connection>, String> {
    (0..opts.conns)
        .map(|id| {
            client
                .open(id, opts)
                .map_err(|e| format!("connection {id} to {}{}: {e}", opts.addr, opts.path))
        })
        .collect()
}

/// The echo run: warm-up, the measured window, the closing handshakes.
fn run_echo(opts: &Options, mut on_event: impl FnMut(&str)) -> Result<Report, String> {
    let mut client = new_client(opts);
    let mut conns = open_all(&mut client, opts)?;
    for conn in conns.iter_mut() {
        client.start_echo(conn);
    }
    let measure_start = Instant::now() + opts.warmup;
    let measure_end = measure_start + opts.duration;
    let mut window_start: Option<(Instant, u64)> = None;
    let mut window_end: Option<(Instant, u64)> = None;
    drive(
        &mut client,
        &mut conns,
        |client, conns, now| {
            if window_start.is_none() && now >= measure_start {
                window_start = Some((now, client.tally.verified));
                client.recording = true;
                on_event("measure_start");
            }
            if window_end.is_none() && now >= measure_end {
                window_end = Some((now, client.tally.verified));
                client.recording = false;
                client.stopping = true;
                on_event("measure_end");
            }
            !(window_end.is_some() && settled(conns))
        },
        &[measure_start, measure_end],
    )?;
    let (start, before) = window_start.ok_or("the window never opened")?;
    let (end, after) = window_end.ok_or("the window never closed")?;
    Ok(Report {
        messages: after - before,
        seconds: (end - start).as_secs_f64(),
        latencies_us: client.latencies_us,
        tally: client.tally,
    })
}

/// The idle run: open and ping every connection, say so, hold them until
/// `hold()` returns, close them all.
fn run_idle(
    opts: &Options,
    on_open: impl FnOnce(&Tally),
    hold: impl FnOnce(),
) -> Result<Report, String> {
    let mut client = new_client(opts);
    let mut conns = open_all(&mut client, opts)?;
    for conn in conns.iter_mut() {
        client.send_control(conn, ws_wire::OP_PING, &conn.id.to_be_bytes());
        conn.phase = Phase::Pinging;
    }
    let pinged = |_: &mut Client, conns: &mut [Connection], _| {
        conns
            .iter()
            .any(|c| matches!(c.phase, Phase::Pinging) || c.out_at < c.out.len())
    };
    drive(&mut client, &mut conns, pinged, &[])?;
    on_open(&client.tally);
    hold();
    for conn in conns.iter_mut() {
        if conn.phase == Phase::Idle {
            client.start_close(conn);
        }
    }
    drive(&mut client, &mut conns, |_, conns, _| !settled(conns), &[])?;
    Ok(Report {
        messages: 0,
        seconds: 0.0,
        latencies_us: Vec::new(),
        tally: client.tally,
    })
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn main(args: &[String]) -> Result<(), String> {
    let opts = parse(args)?;
    let mut report = if opts.idle {
        run_idle(
            &opts,
            |tally| {
                let mut out = io::stdout().lock();
                let _ = writeln!(
                    out,
                    "{{\"event\":\"open\",\"conns\":{},\"deflate\":{},\"failed\":{}}}",
                    opts.conns, tally.deflate, tally.failed
                );
                let _ = out.flush();
            },
            || {
                // Held until the harness closes our stdin.
                let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
            },
        )?
    } else {
        run_echo(&opts, event)?
    };
    report.latencies_us.sort_unstable();
    let lat = &report.latencies_us;
    let tally = &report.tally;
    let errors = error_list(&tally.errors);
    let params = tally.deflate_params.map_or("null".to_string(), |p| {
        json_string(&format!(
            "server_no_context_takeover={} client_no_context_takeover={} server_max_window_bits={} client_max_window_bits={}",
            p.server_no_context_takeover, p.client_no_context_takeover, p.server_max_window_bits, p.client_max_window_bits
        ))
    });
    println!(
        "{{\"event\":\"result\",\"addr\":\"{}\",\"conns\":{},\"size\":{},\"text\":{},\"idle\":{},\
         \"messages\":{},\"bytes\":{},\"seconds\":{:.6},\"total_messages\":{},\
         \"p50_us\":{},\"p90_us\":{},\"p99_us\":{},\"max_us\":{},\
         \"deflate\":{},\"deflate_params\":{params},\"errors\":{},\"mismatches\":{},\
         \"unclosed\":{},\"bad_close\":{},\"error_messages\":[{}]}}",
        opts.addr,
        opts.conns,
        opts.size,
        opts.text,
        opts.idle,
        report.messages,
        report.messages * opts.size as u64,
        report.seconds,
        tally.verified,
        percentile(lat, 50.0),
        percentile(lat, 90.0),
        percentile(lat, 99.0),
        lat.last().copied().unwrap_or(0),
        tally.deflate,
        tally.failed,
        tally.mismatches,
        tally.unclosed,
        tally.bad_close,
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
