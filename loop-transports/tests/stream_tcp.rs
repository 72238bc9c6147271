//! StreamCore over real loopback TCP sockets, bare and under the tests' driver.

mod common;

use common::*;
use loop_transports::socket::{self, ConnectStatus};
use loop_transports::{
    Error, IoFd, Read as CoreRead, StreamConfig, StreamCore, StreamEvent, WaterMarks,
    Write as CoreWrite,
};
use socket2::SockRef;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener};
use std::sync::Arc;
use std::time::Duration;

fn driver() -> Driver {
    Driver::new(64 * 1024).unwrap()
}

#[test]
fn large_payloads_round_trip_both_directions() {
    let mut d = driver();
    let (t, log, peer) = driven_pair(&mut d, &StreamConfig::default(), |r| {
        r.keep_open_on_eof = true;
    });
    let ours = pattern(8 << 20, 1);
    let theirs = pattern(6 << 20, 2);
    let reader = read_to_end_in_thread(peer.try_clone().unwrap());
    let writer = write_in_thread(peer, theirs.clone());

    t.write(&ours).unwrap();
    t.write_eof().unwrap();
    let done = d
        .run_until(LIMIT, || log.borrow().count("eof") == 1)
        .unwrap();
    assert!(done, "peer EOF not seen");
    writer.join().unwrap();
    assert!(log.borrow().data == theirs, "received bytes differ");
    // Our write side was half-closed after the buffer drained.
    assert!(reader.join().unwrap() == ours, "peer received bytes differ");
    assert_eq!(t.get_write_buffer_size(), 0);
    t.close();
    assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
    let log = log.borrow();
    // 8 MiB outgoing crosses the water marks: pause and resume alternate.
    assert_eq!(log.count("pause"), log.count("resume"));
    let mut lifecycle: Vec<_> = log
        .calls
        .iter()
        .filter(|c| !matches!(**c, "pause" | "resume"))
        .collect();
    lifecycle.dedup();
    assert_eq!(lifecycle, [&"made", &"data", &"eof", &"lost"]);
    assert!(log.lost.as_ref().unwrap().is_none());
    assert!(d.is_empty());
}

#[test]
fn backpressure_pauses_once_and_resumes_once() {
    let mut d = driver();
    let (t, log, mut peer) = driven_pair(&mut d, &StreamConfig::default(), |_| {});
    small_buffers(&t, &peer);
    assert_eq!(t.get_write_buffer_limits(), (16 * 1024, 64 * 1024));
    let data = pattern(1 << 20, 3);
    // The kernel takes a little; the rest goes above the high water mark.
    for chunk in data.chunks(100 * 1024) {
        t.write(chunk).unwrap();
    }
    d.turn(Some(Duration::ZERO)).unwrap();
    assert!(t.get_write_buffer_size() > 64 * 1024);
    assert_eq!(log.borrow().count("pause"), 1, "paused exactly once");
    // Still above: more writes do not pause again.
    t.write(b"more").unwrap();
    d.turn(Some(Duration::ZERO)).unwrap();
    assert_eq!(log.borrow().count("pause"), 1);
    assert_eq!(log.borrow().count("resume"), 0);

    // The peer reads; the buffer drains and the protocol resumes once.
    let total = data.len() + 4;
    let reader = std::thread::spawn(move || {
        let mut got = vec![0; total];
        peer.read_exact(&mut got).unwrap();
        got
    });
    assert!(d
        .run_until(LIMIT, || t.get_write_buffer_size() == 0)
        .unwrap());
    let got = reader.join().unwrap();
    assert!(got[..data.len()] == data[..] && &got[data.len()..] == b"more");
    assert_eq!(log.borrow().count("pause"), 1);
    assert_eq!(log.borrow().count("resume"), 1, "resumed exactly once");
    let calls = &log.borrow().calls;
    let p = calls.iter().position(|c| *c == "pause").unwrap();
    let r = calls.iter().position(|c| *c == "resume").unwrap();
    assert!(p < r);
}

/// A close waiting for the buffer to drain does not lose what the protocol
/// writes from `resume_writing` (asyncio checks the buffer after that call).
#[test]
fn writes_from_resume_writing_go_out_before_a_pending_close() {
    let config = StreamConfig {
        water_marks: loop_transports::WaterMarks::new(Some(20_000), Some(5_000)).unwrap(),
        ..StreamConfig::default()
    };
    let (mut core, mut peer) = tcp_core_pair(&config);
    let fd = core.fd();
    // SAFETY: `core` keeps the fd open for this test.
    let ours = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    SockRef::from(&ours).set_send_buffer_size(4096).unwrap();
    SockRef::from(&peer).set_recv_buffer_size(4096).unwrap();
    let mut sent = 0;
    while core.get_write_buffer_size() <= 20_000 {
        core.write(&[7u8; 3000]).unwrap();
        sent += 3000;
    }
    assert!(matches!(core.next_event(), Some(StreamEvent::PauseWriting)));
    core.close();
    assert!(core.next_event().is_none(), "closing waits for the buffer");
    let mut received = 0;
    let mut sink = vec![0u8; 65536];
    peer.set_nonblocking(true).unwrap();
    let mut extra_written = false;
    let mut closed = false;
    for _ in 0..100_000 {
        if let Ok(n) = peer.read(&mut sink) {
            if n == 0 {
                break;
            }
            received += n;
        }
        core.on_writable();
        while let Some(ev) = core.next_event() {
            match ev {
                StreamEvent::ResumeWriting if !extra_written => {
                    // The protocol's resume_writing writes more.
                    core.write(&[9u8; 1000]).unwrap();
                    sent += 1000;
                    extra_written = true;
                }
                StreamEvent::Closed(None) => closed = true,
                _ => {}
            }
        }
        if closed {
            core.close_fd();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(extra_written && closed);
    assert_eq!(
        received, sent,
        "everything written before the close arrived"
    );
}

#[test]
fn resume_happens_at_the_low_water_mark_not_before() {
    // Drive the core by hand to watch the buffer size at the resume.
    let config = StreamConfig {
        water_marks: loop_transports::WaterMarks::new(Some(20_000), Some(5_000)).unwrap(),
        ..StreamConfig::default()
    };
    let (mut core, mut peer) = tcp_core_pair(&config);
    SockRef::from(&peer).set_recv_buffer_size(4096).unwrap();
    let fd = core.fd();
    // SAFETY: `core` keeps the fd open for this test.
    let ours = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    SockRef::from(&ours).set_send_buffer_size(4096).unwrap();
    while core.get_write_buffer_size() <= 20_000 {
        core.write(&[7u8; 3000]).unwrap();
    }
    assert!(matches!(core.next_event(), Some(StreamEvent::PauseWriting)));
    assert!(core.next_event().is_none());
    assert!(core.interest().writable);
    let mut sink = vec![0u8; 65536];
    peer.set_nonblocking(true).unwrap();
    let mut resumed_at = None;
    for _ in 0..100_000 {
        let _ = peer.read(&mut sink);
        core.on_writable();
        if let Some(ev) = core.next_event() {
            assert!(matches!(ev, StreamEvent::ResumeWriting));
            resumed_at = Some(core.get_write_buffer_size());
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let at = resumed_at.expect("never resumed");
    assert!(at <= 5_000, "resumed with {at} bytes buffered");
    assert!(!core.is_writing_paused());
}

#[test]
fn writes_while_blocked_flush_in_one_writev() {
    let (mut core, mut peer) = tcp_core_pair(&StreamConfig::default());
    peer.set_nonblocking(true).unwrap();
    let chunk = vec![5u8; 5000];
    let mut written = 0;
    // Fill the kernel buffer until a write is (partly) buffered.
    while core.get_write_buffer_size() == 0 {
        core.write(&chunk).unwrap();
        written += chunk.len();
    }
    for _ in 0..3 {
        core.write(&chunk).unwrap();
        written += chunk.len();
    }
    assert_eq!(core.buffered_chunks(), 4);
    let buffered = core.get_write_buffer_size();
    assert!(buffered > 15_000 && buffered <= 20_000, "{buffered}");
    // The peer makes room, then one writable event flushes all four chunks.
    let mut received = 0;
    let mut sink = vec![0u8; 1 << 20];
    while received < written - buffered {
        match peer.read(&mut sink) {
            Ok(n) => received += n,
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    let before = core.stats().write_calls;
    core.on_writable();
    assert_eq!(core.get_write_buffer_size(), 0);
    assert_eq!(core.stats().write_calls - before, 1, "one writev syscall");

    // writelines on an empty buffer is one syscall too.
    let before = core.stats().write_calls;
    core.write_vectored(&[b"ab", b"cd", b"ef"]).unwrap();
    assert_eq!(core.stats().write_calls - before, 1);
    assert_eq!(core.get_write_buffer_size(), 0);
}

#[test]
fn write_eof_half_closes_and_peer_can_still_send() {
    let mut d = driver();
    let (t, log, mut peer) = driven_pair(&mut d, &StreamConfig::default(), |_| {});
    t.write(b"hello").unwrap();
    t.write_eof().unwrap();
    assert!(matches!(t.write(b"x"), Err(Error::WriteAfterEof)));
    d.turn(Some(Duration::ZERO)).unwrap();
    let mut got = Vec::new();
    peer.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"hello");
    // The other direction still works.
    peer.write_all(b"world").unwrap();
    assert!(d
        .run_until(LIMIT, || log.borrow().data == b"world")
        .unwrap());
    peer.shutdown(Shutdown::Write).unwrap();
    // eof_received returns false: the transport closes.
    assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
    assert_eq!(log.borrow().calls, ["made", "data", "eof", "lost"]);
}

#[test]
fn peer_eof_reaches_eof_received_and_we_can_still_write() {
    let mut d = driver();
    let (t, log, mut peer) = driven_pair(&mut d, &StreamConfig::default(), |r| {
        r.keep_open_on_eof = true;
        r.on_eof = Some(Box::new(|t| {
            t.write(b"bye").unwrap();
        }));
    });
    peer.write_all(b"last words").unwrap();
    peer.shutdown(Shutdown::Write).unwrap();
    assert!(d
        .run_until(LIMIT, || log.borrow().count("eof") == 1)
        .unwrap());
    assert_eq!(log.borrow().data, b"last words");
    assert!(!t.is_closing());
    t.close();
    assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
    let mut got = Vec::new();
    peer.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"bye");
}

#[test]
fn orderly_close_with_pending_data_delivers_everything_then_closes() {
    let mut d = driver();
    let (t, log, peer) = driven_pair(&mut d, &StreamConfig::default(), |_| {});
    small_buffers(&t, &peer);
    let data = pattern(2 << 20, 4);
    t.write(&data).unwrap();
    assert!(t.get_write_buffer_size() > 0);
    t.close();
    t.close();
    assert!(t.is_closing());
    d.turn(Some(Duration::ZERO)).unwrap();
    assert!(!log.borrow().is_lost(), "lost before the buffer drained");
    let reader = read_to_end_in_thread(peer);
    assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
    assert!(log.borrow().lost.as_ref().unwrap().is_none());
    assert!(reader.join().unwrap() == data);
    assert!(d.is_empty());
}

#[test]
fn abort_drops_buffered_data() {
    let mut d = driver();
    let (t, log, peer) = driven_pair(&mut d, &StreamConfig::default(), |_| {});
    small_buffers(&t, &peer);
    let data = pattern(2 << 20, 5);
    t.write(&data).unwrap();
    let buffered = t.get_write_buffer_size();
    assert!(buffered > 0);
    t.abort();
    assert_eq!(t.get_write_buffer_size(), 0);
    d.turn(Some(Duration::ZERO)).unwrap();
    assert!(log.borrow().is_lost());
    assert!(log.borrow().lost.as_ref().unwrap().is_none());
    let got = read_to_end_in_thread(peer).join().unwrap();
    assert!(got.len() <= data.len() - buffered, "buffered data was sent");
    // Writes after abort are ignored and counted; asyncio warns from the 5th.
    let mut warned = Vec::new();
    for _ in 0..7 {
        match t.write(b"late").unwrap() {
            CoreWrite::Ignored { warn, .. } => warned.push(warn),
            CoreWrite::Accepted => panic!("write after abort accepted"),
        }
    }
    assert_eq!(warned, [false, false, false, false, true, true, true]);
}

#[test]
fn reset_by_peer_is_connection_lost_with_connection_reset() {
    let mut d = driver();
    let (_t, log, peer) = driven_pair(&mut d, &StreamConfig::default(), |_| {});
    // SO_LINGER 0 makes close() send an RST.
    SockRef::from(&peer)
        .set_linger(Some(Duration::ZERO))
        .unwrap();
    drop(peer);
    assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
    let log = log.borrow();
    let err = log.lost.as_ref().unwrap().as_ref().expect("an error");
    assert!(err.is_connection_reset(), "{err:?}");
    assert_eq!(err.op(), Some(loop_transports::Op::Read));
    assert_eq!(log.count("eof"), 0);
}

#[test]
fn write_to_reset_peer_is_connection_lost() {
    let (mut core, peer) = tcp_core_pair(&StreamConfig::default());
    SockRef::from(&peer)
        .set_linger(Some(Duration::ZERO))
        .unwrap();
    drop(peer);
    std::thread::sleep(Duration::from_millis(20));
    core.write(b"into the void").unwrap();
    match core.next_event() {
        Some(StreamEvent::Closed(Some(err))) => {
            assert!(err.is_connection_reset() || err.is_broken_pipe(), "{err:?}");
            assert_eq!(err.op(), Some(loop_transports::Op::Write));
        }
        other => panic!("expected Closed(err), got {other:?}"),
    }
    assert!(core.is_closed());
    assert_eq!(core.interest(), loop_core::Interest::NONE);
}

#[test]
fn connect_refused_is_reported() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut d = driver();
    let (rec, log) = Recorder::new();
    match d.connect_tcp(port, &StreamConfig::default(), rec) {
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::ECONNREFUSED)),
        Ok(_) => {
            assert!(d
                .run_until(LIMIT, || log.borrow().connect_failed.is_some())
                .unwrap());
            let log = log.borrow();
            let err = log.connect_failed.as_ref().unwrap();
            assert_eq!(err.raw_os_error(), Some(libc::ECONNREFUSED));
            assert_eq!(err.op(), Some(loop_transports::Op::Connect));
            assert_eq!(log.calls, ["connect_failed"]);
        }
    }
    assert!(d.is_empty());
}

#[test]
fn connect_in_progress_then_established() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (fd, status) = socket::tcp_connect(addr, None).unwrap();
    let core = StreamCore::from_connect(IoFd::owned(fd), status, &StreamConfig::default()).unwrap();
    let mut d = driver();
    let (rec, log) = Recorder::new();
    let t = d.add_stream(core, rec);
    if status == ConnectStatus::InProgress {
        assert!(log.borrow().calls.is_empty(), "made before connected");
        // Written while connecting: buffered, sent once connected.
        t.write(b"early").unwrap();
    } else {
        t.write(b"early").unwrap();
    }
    let (mut peer, _) = listener.accept().unwrap();
    peer.set_read_timeout(Some(LIMIT)).unwrap();
    assert!(d
        .run_until(LIMIT, || log.borrow().count("made") == 1)
        .unwrap());
    let mut got = [0u8; 5];
    // The flush may need one more turn after the connect completes.
    d.turn(Some(Duration::from_millis(10))).unwrap();
    peer.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"early");
    assert_eq!(
        t.peer_addr().unwrap().as_socket(),
        Some(addr),
        "peer address"
    );
}

#[test]
fn protocol_writes_and_closes_reentrantly_from_data_received() {
    let mut d = driver();
    let (_t, log, mut peer) = driven_pair(&mut d, &StreamConfig::default(), |r| {
        r.on_data = Some(Box::new(|data, t| {
            t.write(data).unwrap();
            if data.ends_with(b"quit") {
                t.close();
                // Calls after close are harmless.
                t.pause_reading();
                t.close();
            }
        }));
    });
    peer.write_all(b"abc").unwrap();
    let mut got = [0u8; 3];
    while d.turn(Some(Duration::from_millis(10))).unwrap() == 0 {}
    peer.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"abc");
    peer.write_all(b"quit").unwrap();
    assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
    let mut rest = Vec::new();
    peer.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, b"quit");
}

#[test]
fn pause_reading_holds_data_until_resumed() {
    let mut d = driver();
    let (t, log, mut peer) = driven_pair(&mut d, &StreamConfig::default(), |_| {});
    t.pause_reading();
    assert!(!t.is_reading());
    peer.write_all(b"waiting").unwrap();
    for _ in 0..5 {
        d.turn(Some(Duration::from_millis(5))).unwrap();
    }
    assert!(log.borrow().data.is_empty());
    t.resume_reading();
    assert!(t.is_reading());
    assert!(d
        .run_until(LIMIT, || log.borrow().data == b"waiting")
        .unwrap());
}

#[test]
fn read_budget_bounds_reads_per_event() {
    let config = StreamConfig {
        read_buffer_size: 1000,
        reads_per_event: 3,
        ..StreamConfig::default()
    };
    let (mut core, mut peer) = tcp_core_pair(&config);
    peer.write_all(&pattern(10_000, 6)).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let mut got = Vec::new();
    let mut events = 0;
    while got.len() < 10_000 && events < 100 {
        events += 1;
        core.begin_read_event();
        let mut reads = 0;
        loop {
            match core.read() {
                CoreRead::Data(d) => {
                    reads += 1;
                    got.extend_from_slice(d);
                }
                CoreRead::Eof => panic!("unexpected EOF"),
                CoreRead::Done => break,
            }
        }
        assert!(reads <= 3, "{reads} reads in one event");
    }
    assert_eq!(got, pattern(10_000, 6));
    assert!(events >= 4, "budget ended each event early");
}

#[test]
fn limits_and_direction_errors() {
    let (mut core, _peer) = tcp_core_pair(&StreamConfig::default());
    assert!(matches!(
        core.set_write_buffer_limits(Some(10), Some(20)),
        Err(Error::InvalidWaterMarks { high: 10, low: 20 })
    ));
    core.set_write_buffer_limits(None, Some(100)).unwrap();
    assert_eq!(core.get_write_buffer_limits(), (100, 400));
    let mut empty = [0u8; 0];
    assert!(matches!(
        core.read_into(&mut empty),
        Err(Error::EmptyBuffer)
    ));
    assert!(core.can_write_eof());
    assert_eq!(core.write(b"").unwrap(), CoreWrite::Accepted);
}

#[test]
fn set_limits_below_buffered_size_pauses_the_protocol() {
    let mut d = driver();
    let (t, log, peer) = driven_pair(&mut d, &StreamConfig::default(), |_| {});
    small_buffers(&t, &peer);
    while t.get_write_buffer_size() < 1000 {
        t.write(&[1u8; 1000]).unwrap();
    }
    d.turn(Some(Duration::ZERO)).unwrap();
    assert!(t.get_write_buffer_size() <= 64 * 1024);
    assert_eq!(log.borrow().count("pause"), 0);
    t.set_write_buffer_limits(Some(100), None).unwrap();
    assert_eq!(t.get_write_buffer_limits(), (25, 100));
    d.turn(Some(Duration::ZERO)).unwrap();
    assert_eq!(log.borrow().count("pause"), 1);
    // Raising the limits again does not resume (asyncio only pauses here).
    t.set_write_buffer_limits(None, None).unwrap();
    d.turn(Some(Duration::ZERO)).unwrap();
    assert_eq!(log.borrow().count("resume"), 0);
    drop(peer);
}

#[test]
fn owned_chunks_are_written_intact() {
    let mut d = driver();
    let (t, log, peer) = driven_pair(&mut d, &StreamConfig::default(), |_| {});
    small_buffers(&t, &peer);
    let a = pattern(300_000, 9);
    let b: Arc<[u8]> = pattern(100_000, 10).into();
    t.write_chunk(a.clone()).unwrap();
    t.write_chunk(Arc::clone(&b)).unwrap();
    t.write_chunk(&b"static tail"[..]).unwrap();
    t.close();
    let reader = read_to_end_in_thread(peer);
    assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
    let got = reader.join().unwrap();
    let mut want = a;
    want.extend_from_slice(&b);
    want.extend_from_slice(b"static tail");
    assert!(got == want);
}

#[test]
fn adopted_socket_is_borrowed_nonblocking_and_nodelay() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (accepted, _) = listener.accept().unwrap();
    assert!(!SockRef::from(&accepted).tcp_nodelay().unwrap());
    let raw = std::os::fd::AsRawFd::as_raw_fd(&accepted);
    {
        // SAFETY: `accepted` outlives the core and is closed by its owner.
        let fd = unsafe { IoFd::borrow_raw(raw) };
        let mut core = StreamCore::socket(fd, &StreamConfig::default()).unwrap();
        assert!(SockRef::from(&accepted).tcp_nodelay().unwrap());
        assert!(SockRef::from(&accepted).nonblocking().unwrap());
        core.write(b"from core").unwrap();
        core.close();
        assert!(matches!(core.next_event(), Some(StreamEvent::Closed(None))));
        core.close_fd();
    }
    // The owner's socket is still open and usable.
    (&accepted).write_all(b", then owner").unwrap();
    drop(accepted);
    client.set_read_timeout(Some(LIMIT)).unwrap();
    let mut got = String::new();
    client.read_to_string(&mut got).unwrap();
    assert_eq!(got, "from core, then owner");
}

#[test]
fn a_cork_holds_writes_counts_them_for_flow_control_and_uncork_sends_them() {
    let config = StreamConfig {
        water_marks: WaterMarks::new(Some(8), Some(2)).unwrap(),
        ..StreamConfig::default()
    };
    let (mut core, mut peer) = tcp_core_pair(&config);
    core.cork();
    assert!(core.is_corked());
    core.write(b"HTTP/1.1 200 OK\r\n").unwrap();
    core.write(b"\r\n").unwrap();
    // Held: nothing sent, no writability wanted, and above the high mark.
    assert_eq!(core.stats().write_calls, 0);
    assert_eq!(core.get_write_buffer_size(), 19);
    assert!(!core.interest().writable);
    assert!(core.is_writing_paused());
    assert!(matches!(core.next_event(), Some(StreamEvent::PauseWriting)));
    core.uncork();
    // One send for both writes, and the flow control resumed.
    assert_eq!(core.stats().write_calls, 1);
    assert_eq!(core.get_write_buffer_size(), 0);
    assert!(!core.is_writing_paused());
    assert!(matches!(
        core.next_event(),
        Some(StreamEvent::ResumeWriting)
    ));
    let mut got = [0u8; 19];
    peer.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"HTTP/1.1 200 OK\r\n\r\n");
    // A close sends what a cork held before ending the stream.
    core.cork();
    core.write(b"bye").unwrap();
    core.close();
    assert!(core.interest().writable);
    core.on_writable();
    let mut rest = Vec::new();
    core.close_fd();
    peer.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, b"bye");
}
