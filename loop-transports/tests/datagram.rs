//! DatagramCore over real UDP sockets on loopback and Unix datagram pairs.

mod common;

use common::LIMIT;
use loop_core::reactor::Reactor;
use loop_transports::socket::{self, UdpOptions};
use loop_transports::{DatagramConfig, DatagramCore, DatagramEvent, Error, IoFd, Recv, Send};
use socket2::{SockAddr, SockRef};
use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

fn udp(options: UdpOptions) -> DatagramCore {
    let fd = socket::udp_socket(&options).unwrap();
    DatagramCore::new(IoFd::owned(fd), &DatagramConfig::default()).unwrap()
}

fn local() -> UdpOptions {
    UdpOptions {
        local: Some("127.0.0.1:0".parse().unwrap()),
        ..UdpOptions::default()
    }
}

/// Wait (bounded) until `core` receives something, returning datagrams and
/// errors seen in the first event that had any.
fn recv_some(core: &mut DatagramCore) -> (Vec<(Vec<u8>, SockAddr)>, Vec<Error>) {
    let mut reactor: Reactor<()> = Reactor::new().unwrap();
    reactor.register(core.fd(), core.interest(), ()).unwrap();
    let deadline = Instant::now() + LIMIT;
    let mut ready = Vec::new();
    while Instant::now() < deadline {
        ready.clear();
        reactor.poll(50, &mut ready).unwrap();
        if ready.is_empty() {
            continue;
        }
        core.begin_read_event();
        let (mut got, mut errors) = (Vec::new(), Vec::new());
        let mut buf = vec![0u8; loop_transports::read_buf::READ_SIZE];
        loop {
            match core.recv_into(&mut buf) {
                Recv::Datagram(n, addr) => got.push((buf[..n].to_vec(), addr)),
                Recv::Error(e) => errors.push(e),
                Recv::Done => break,
            }
        }
        if !got.is_empty() || !errors.is_empty() {
            reactor.deregister(core.fd());
            return (got, errors);
        }
    }
    panic!("nothing received");
}

#[test]
fn udp_send_and_receive_with_addresses() {
    let mut a = udp(local());
    let mut b = udp(local());
    let a_addr = a.local_addr().unwrap();
    let b_addr = b.local_addr().unwrap();
    assert!(a.peer().is_none());
    assert_eq!(a.send_to(b"one", Some(&b_addr)).unwrap(), Send::Accepted);
    assert_eq!(a.send_to(b"", Some(&b_addr)).unwrap(), Send::Accepted);
    assert_eq!(a.send_to(b"three", Some(&b_addr)).unwrap(), Send::Accepted);
    let mut got = Vec::new();
    while got.len() < 3 {
        let (more, errors) = recv_some(&mut b);
        assert!(errors.is_empty());
        got.extend(more);
    }
    let payloads: Vec<&[u8]> = got.iter().map(|(d, _)| &d[..]).collect();
    assert_eq!(payloads, [&b"one"[..], b"", b"three"]);
    assert!(got.iter().all(|(_, from)| *from == a_addr));
    // And back.
    b.send_to(b"reply", Some(&a_addr)).unwrap();
    let (back, _) = recv_some(&mut a);
    assert_eq!(back[0].0, b"reply");
    assert_eq!(a.get_write_buffer_size(), 0);
    assert!(a.next_event().is_none());
}

#[test]
fn connected_udp_gets_icmp_errors_as_error_received() {
    // A port with nothing behind it: bind, note, close.
    let dead = {
        let probe = udp(local());
        probe.local_addr().unwrap().as_socket().unwrap()
    };
    let mut c = udp(UdpOptions {
        remote: Some(dead),
        ..local()
    });
    assert_eq!(c.peer().and_then(|p| p.as_socket()), Some(dead));
    // A different address than the connected one is refused.
    let other: SockAddr = "127.0.0.1:9"
        .parse::<std::net::SocketAddr>()
        .unwrap()
        .into();
    assert!(matches!(
        c.send_to(b"x", Some(&other)),
        Err(Error::AddressMismatch { .. })
    ));
    c.send_to(b"ping", None).unwrap();
    // The ICMP port-unreachable comes back as ECONNREFUSED: on the next
    // send or on receive, depending on timing; either way not fatal.
    let mut refused = false;
    let deadline = Instant::now() + LIMIT;
    while !refused && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        c.begin_read_event();
        while let Recv::Error(e) = c.recv_into(&mut [0u8; 64]) {
            refused |= e.raw_os_error() == Some(libc::ECONNREFUSED);
        }
        while let Some(ev) = c.next_event() {
            if let DatagramEvent::ErrorReceived(e) = ev {
                refused |= e.raw_os_error() == Some(libc::ECONNREFUSED);
            }
        }
        if !refused {
            c.send_to(b"ping", None).unwrap();
        }
    }
    assert!(refused, "no ECONNREFUSED reported");
    assert!(!c.is_closing(), "ICMP errors are not fatal");
}

#[test]
fn sends_are_queued_on_eagain_and_flushed_when_writable() {
    let (a, b) = UnixDatagram::pair().unwrap();
    SockRef::from(&a).set_send_buffer_size(4096).unwrap();
    let config = DatagramConfig {
        water_marks: loop_transports::WaterMarks::new(Some(20_000), Some(1_000)).unwrap(),
        ..DatagramConfig::default()
    };
    let mut core = DatagramCore::new(IoFd::owned(a.into()), &config).unwrap();
    let datagram = [3u8; 1000];
    let mut sent = 0;
    while core.queued_datagrams() == 0 {
        core.send_to(&datagram, None).unwrap();
        sent += 1;
        assert!(sent < 10_000, "never blocked");
    }
    for _ in 0..30 {
        core.send_to(&datagram, None).unwrap();
        sent += 1;
    }
    assert_eq!(core.get_write_buffer_size(), core.queued_datagrams() * 1000);
    assert!(core.interest().writable);
    assert!(matches!(
        core.next_event(),
        Some(DatagramEvent::PauseWriting)
    ));
    // Receive everything while flushing.
    b.set_nonblocking(true).unwrap();
    let mut received = 0;
    let mut buf = [0u8; 2000];
    let deadline = Instant::now() + LIMIT;
    while received < sent && Instant::now() < deadline {
        while let Ok(n) = b.recv(&mut buf) {
            assert_eq!(n, 1000);
            received += 1;
        }
        core.on_writable();
    }
    assert_eq!(received, sent);
    assert_eq!(core.get_write_buffer_size(), 0);
    assert!(matches!(
        core.next_event(),
        Some(DatagramEvent::ResumeWriting)
    ));
    // Close with an empty queue is immediate; later sends are ignored.
    core.close();
    assert!(matches!(
        core.next_event(),
        Some(DatagramEvent::Closed(None))
    ));
    assert!(matches!(
        core.send_to(b"late", None).unwrap(),
        Send::Ignored { warn: false, .. }
    ));
    assert_eq!(core.interest(), loop_core::Interest::NONE);
}

#[test]
fn close_waits_for_the_queue_and_abort_drops_it() {
    for abort in [false, true] {
        let (a, b) = UnixDatagram::pair().unwrap();
        SockRef::from(&a).set_send_buffer_size(4096).unwrap();
        let mut core =
            DatagramCore::new(IoFd::owned(a.into()), &DatagramConfig::default()).unwrap();
        while core.queued_datagrams() < 3 {
            core.send_to(&[1u8; 500], None).unwrap();
        }
        if abort {
            core.abort();
            assert_eq!(core.queued_datagrams(), 0);
            assert!(matches!(
                core.next_event(),
                Some(DatagramEvent::Closed(None))
            ));
            continue;
        }
        core.close();
        assert!(core.is_closing() && !core.is_closed());
        assert!(!core.interest().readable);
        b.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 1000];
        let deadline = Instant::now() + LIMIT;
        while !core.is_closed() && Instant::now() < deadline {
            while b.recv(&mut buf).is_ok() {}
            core.on_writable();
        }
        assert!(core.is_closed());
        let mut closed = false;
        while let Some(ev) = core.next_event() {
            closed |= matches!(ev, DatagramEvent::Closed(None));
        }
        assert!(closed);
    }
}
