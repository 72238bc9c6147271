//! Shared test helpers: a recording protocol, loopback pairs, peers.
#![allow(dead_code)]

use loop_transports::socket::{self, ConnectStatus};
pub mod harness;

pub use harness::driver::Driver;
pub use harness::protocol::StreamProtocol;
pub use harness::transport::Transport;
use loop_transports::{Error, IoFd, StreamConfig, StreamCore};
use socket2::SockRef;
use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;
use std::time::Duration;

/// Upper bound for any wait in a test.
pub const LIMIT: Duration = Duration::from_secs(20);

/// What a [`Recorder`] saw.
#[derive(Debug, Default)]
pub struct Log {
    pub calls: Vec<&'static str>,
    pub data: Vec<u8>,
    pub lost: Option<Option<Error>>,
    pub connect_failed: Option<Error>,
}

impl Log {
    pub fn count(&self, name: &str) -> usize {
        self.calls.iter().filter(|c| **c == name).count()
    }

    pub fn is_lost(&self) -> bool {
        self.lost.is_some()
    }
}

pub type Hook = Box<dyn FnMut(&[u8], &Transport)>;
pub type TransportHook = Box<dyn FnMut(&Transport)>;

/// A protocol that records every callback, with optional behaviour.
pub struct Recorder {
    pub log: Rc<RefCell<Log>>,
    pub keep_open_on_eof: bool,
    pub on_data: Option<Hook>,
    pub on_eof: Option<TransportHook>,
    pub on_resume: Option<TransportHook>,
}

impl Recorder {
    pub fn new() -> (Recorder, Rc<RefCell<Log>>) {
        let log = Rc::new(RefCell::new(Log::default()));
        (
            Recorder {
                log: Rc::clone(&log),
                keep_open_on_eof: false,
                on_data: None,
                on_eof: None,
                on_resume: None,
            },
            log,
        )
    }
}

impl StreamProtocol for Recorder {
    fn connection_made(&mut self, _t: &Transport) {
        self.log.borrow_mut().calls.push("made");
    }

    fn data_received(&mut self, data: &[u8], t: &Transport) {
        {
            let mut log = self.log.borrow_mut();
            if log.calls.last() != Some(&"data") {
                log.calls.push("data");
            }
            log.data.extend_from_slice(data);
        }
        if let Some(hook) = self.on_data.as_mut() {
            hook(data, t);
        }
    }

    fn eof_received(&mut self, t: &Transport) -> bool {
        self.log.borrow_mut().calls.push("eof");
        if let Some(hook) = self.on_eof.as_mut() {
            hook(t);
        }
        self.keep_open_on_eof
    }

    fn connection_lost(&mut self, err: Option<Error>) {
        let mut log = self.log.borrow_mut();
        log.calls.push("lost");
        log.lost = Some(err);
    }

    fn pause_writing(&mut self, _t: &Transport) {
        self.log.borrow_mut().calls.push("pause");
    }

    fn resume_writing(&mut self, t: &Transport) {
        self.log.borrow_mut().calls.push("resume");
        if let Some(hook) = self.on_resume.as_mut() {
            hook(t);
        }
    }

    fn connect_failed(&mut self, err: Error) {
        let mut log = self.log.borrow_mut();
        log.calls.push("connect_failed");
        log.connect_failed = Some(err);
    }
}

/// A connected TCP pair on loopback: our core (not yet driven) and a
/// blocking std peer with read/write timeouts.
pub fn tcp_core_pair(config: &StreamConfig) -> (StreamCore, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (fd, status) = socket::tcp_connect(addr, None).unwrap();
    let (peer, _) = listener.accept().unwrap();
    peer.set_read_timeout(Some(LIMIT)).unwrap();
    peer.set_write_timeout(Some(LIMIT)).unwrap();
    let mut core = StreamCore::from_connect(IoFd::owned(fd), status, config).unwrap();
    if status == ConnectStatus::InProgress {
        // The handshake is done once accept returned; let the core see it.
        core.on_writable();
        assert!(matches!(
            core.next_event(),
            Some(loop_transports::StreamEvent::Connected)
        ));
    }
    (core, peer)
}

/// A driven TCP connection with a [`Recorder`] (tweaked by `setup`).
pub fn driven_pair(
    driver: &mut Driver,
    config: &StreamConfig,
    setup: impl FnOnce(&mut Recorder),
) -> (Transport, Rc<RefCell<Log>>, TcpStream) {
    let (core, peer) = tcp_core_pair(config);
    let (mut rec, log) = Recorder::new();
    setup(&mut rec);
    let transport = driver.add_stream(core, rec);
    (transport, log, peer)
}

/// Shrink kernel buffers so backpressure shows up with little data.
pub fn small_buffers(ours: &Transport, peer: &TcpStream) {
    let fd = ours.fd();
    // SAFETY: the fd is open for as long as the transport lives.
    let ours = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    // Tiny receive windows make loopback crawl (delayed ACKs), so keep the
    // peer's at 64 KiB: enough to buffer on our side with modest payloads.
    SockRef::from(&ours).set_send_buffer_size(8192).unwrap();
    SockRef::from(peer).set_recv_buffer_size(65536).unwrap();
}

/// Deterministic test bytes.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8 ^ seed)
        .collect()
}

/// Read from `peer` until EOF (or timeout), in a thread.
pub fn read_to_end_in_thread(mut peer: TcpStream) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = peer.read_to_end(&mut out);
        out
    })
}

/// Write `data` to `peer` in a thread, then shut down its write side.
pub fn write_in_thread(mut peer: TcpStream, data: Vec<u8>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        peer.write_all(&data).unwrap();
        peer.shutdown(std::net::Shutdown::Write).unwrap();
    })
}
