//! Unix-domain sockets (path and abstract) and accept batching.

mod common;

use common::*;
use loop_transports::listener::DEFAULT_ACCEPT_BATCH;
use loop_transports::socket::{self, ListenOptions, UnixAddr};
use loop_transports::{AcceptStop, IoFd, ListenerCore, StreamConfig, StreamCore};
use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::rc::Rc;

/// Echoes everything and closes on EOF.
struct Echo;

impl StreamProtocol for Echo {
    fn connection_made(&mut self, _t: &Transport) {}
    fn data_received(&mut self, data: &[u8], t: &Transport) {
        t.write(data).unwrap();
    }
    fn connection_lost(&mut self, _err: Option<loop_transports::Error>) {}
}

/// Serve `Echo` on `listener_fd` and talk to it from a driven client made
/// by `connect`; returns what the client got back.
fn echo_through(addr: &UnixAddr) -> Vec<u8> {
    let mut d = Driver::new(64 * 1024).unwrap();
    let lfd = socket::unix_listen(addr, 16).unwrap();
    let listener = ListenerCore::new(IoFd::owned(lfd), DEFAULT_ACCEPT_BATCH).unwrap();
    let local = listener.local_addr().unwrap();
    match addr {
        UnixAddr::Path(p) => assert_eq!(local.as_pathname(), Some(p.as_path())),
        UnixAddr::Abstract(name) => assert_eq!(local.as_abstract_namespace(), Some(&name[..])),
    }
    d.listen(listener, StreamConfig::default(), |_peer| Box::new(Echo))
        .unwrap();

    let (fd, status) = socket::unix_connect(addr).unwrap();
    let core = StreamCore::from_connect(IoFd::owned(fd), status, &StreamConfig::default()).unwrap();
    let (rec, log) = Recorder::new();
    let t = d.add_stream(core, rec);
    let payload = pattern(300_000, 11);
    t.write(&payload).unwrap();
    assert!(d
        .run_until(LIMIT, || log.borrow().data.len() >= payload.len())
        .unwrap());
    t.close();
    assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
    assert_eq!(log.borrow().data, payload);
    let data = std::mem::take(&mut log.borrow_mut().data);
    data
}

#[test]
fn unix_path_socket_round_trip() {
    let dir = std::env::temp_dir().join(format!("ferroloop-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("echo.sock");
    let _ = std::fs::remove_file(&path);
    let got = echo_through(&UnixAddr::Path(path.clone()));
    assert_eq!(got.len(), 300_000);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn unix_abstract_socket_round_trip() {
    let name = format!(
        "ferroloop-test-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    );
    let got = echo_through(&UnixAddr::Abstract(name.into_bytes()));
    assert_eq!(got.len(), 300_000);
}

#[test]
fn accept_takes_at_most_a_batch_per_event() {
    let lfd =
        socket::tcp_listen("127.0.0.1:0".parse().unwrap(), &ListenOptions::default()).unwrap();
    let mut listener = ListenerCore::new(IoFd::owned(lfd), 4).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    let clients: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let mut out = Vec::new();
    assert!(matches!(
        listener.accept_batch(&mut out),
        AcceptStop::BatchFull
    ));
    assert_eq!(out.len(), 4);
    assert!(matches!(
        listener.accept_batch(&mut out),
        AcceptStop::BatchFull
    ));
    assert_eq!(out.len(), 8);
    assert!(matches!(
        listener.accept_batch(&mut out),
        AcceptStop::Drained
    ));
    assert_eq!(out.len(), 10);
    assert_eq!(listener.accepted_count(), 10);
    let client_ports: Vec<u16> = clients
        .iter()
        .map(|c| c.local_addr().unwrap().port())
        .collect();
    for a in &out {
        // Accepted fds are non-blocking and close-on-exec already.
        // SAFETY: fcntl queries on fds we own.
        let fl = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&a.fd), libc::F_GETFL) };
        // SAFETY: as above.
        let fdfl = unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&a.fd), libc::F_GETFD) };
        assert!(fl & libc::O_NONBLOCK != 0 && fdfl & libc::FD_CLOEXEC != 0);
        let port = a.peer.as_socket().unwrap().port();
        assert!(client_ports.contains(&port));
    }
    listener.pause();
    assert!(listener.interest().is_empty());
    assert!(matches!(
        listener.accept_batch(&mut out),
        AcceptStop::Drained
    ));
}

#[test]
fn driven_server_echoes_for_many_clients() {
    let mut d = Driver::new(64 * 1024).unwrap();
    let lfd =
        socket::tcp_listen("127.0.0.1:0".parse().unwrap(), &ListenOptions::default()).unwrap();
    let listener = ListenerCore::new(IoFd::owned(lfd), 8).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    let served = Rc::new(RefCell::new(0usize));
    let counter = Rc::clone(&served);
    let id = d
        .listen(listener, StreamConfig::default(), move |peer| {
            assert!(peer.as_socket().is_some());
            *counter.borrow_mut() += 1;
            Box::new(Echo)
        })
        .unwrap();
    let clients: Vec<_> = (0..20u8)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(addr).unwrap();
                c.set_read_timeout(Some(LIMIT)).unwrap();
                let msg = pattern(10_000 + usize::from(i), i);
                c.write_all(&msg).unwrap();
                c.shutdown(std::net::Shutdown::Write).unwrap();
                let mut back = Vec::new();
                c.read_to_end(&mut back).unwrap();
                back == msg
            })
        })
        .collect();
    let finished = || clients.iter().all(|c| c.is_finished());
    assert!(d.run_until(LIMIT, finished).unwrap());
    for c in clients {
        assert!(c.join().unwrap(), "echo mismatch");
    }
    assert_eq!(*served.borrow(), 20);
    assert!(d.take_errors().is_empty());
    d.close_listener(id);
    assert!(d
        .run_until(std::time::Duration::from_millis(50), || false)
        .is_ok());
    assert!(d.is_empty(), "all connections and the listener are gone");
}
