//! Accepting when the process is out of fds. This binary holds a single
//! test because it lowers `RLIMIT_NOFILE` for the whole process.

mod common;

use common::*;
use loop_transports::socket::{self, ListenOptions};
use loop_transports::{AcceptStop, IoFd, ListenerCore, StreamConfig};
use std::cell::Cell;
use std::fs::File;
use std::net::TcpStream;
use std::rc::Rc;
use std::time::Duration;

struct Limit {
    saved: libc::rlimit,
}

impl Limit {
    /// Lower the soft fd limit to a little above the highest open fd.
    fn lower() -> Limit {
        let mut saved = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `saved` is a valid out-pointer.
        assert_eq!(
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut saved) },
            0
        );
        let highest = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
            .max()
            .unwrap_or(64);
        let lowered = libc::rlimit {
            rlim_cur: (highest + 16).min(saved.rlim_cur),
            rlim_max: saved.rlim_max,
        };
        // SAFETY: a valid rlimit no higher than the current one.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
        Limit { saved }
    }
}

impl Drop for Limit {
    fn drop(&mut self) {
        // SAFETY: restoring the limits read in `lower`.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &self.saved) };
    }
}

/// Open files until the table is full.
fn fill_fd_table() -> Vec<File> {
    let mut fillers = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(f) => fillers.push(f),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::EMFILE));
                return fillers;
            }
        }
        assert!(fillers.len() < 100_000, "fd limit not in force");
    }
}

#[test]
fn accept_reports_emfile_and_recovers_once_fds_are_freed() {
    // --- the core: EMFILE is reported distinctly, accept works afterwards.
    let lfd =
        socket::tcp_listen("127.0.0.1:0".parse().unwrap(), &ListenOptions::default()).unwrap();
    let mut listener = ListenerCore::new(IoFd::owned(lfd), 16).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    let clients: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();

    // The driver's epoll fd must exist before the table is full.
    let mut d = Driver::new(16 * 1024).unwrap();
    let limit = Limit::lower();
    let fillers = fill_fd_table();
    let mut out = Vec::new();
    match listener.accept_batch(&mut out) {
        AcceptStop::ResourceLimit(e) => {
            assert_eq!(e.raw_os_error(), Some(libc::EMFILE));
            assert!(e.is_resource_limit());
        }
        other => panic!("expected ResourceLimit, got {other:?}"),
    }
    assert!(out.is_empty());
    listener.pause();
    assert!(listener.interest().is_empty());
    drop(fillers);
    listener.resume();
    assert!(matches!(
        listener.accept_batch(&mut out),
        AcceptStop::Drained
    ));
    assert_eq!(out.len(), 3);
    drop(out);
    drop(clients);

    // --- the driver: pauses the listener, then resumes after the delay.
    let accepted = Rc::new(Cell::new(0usize));
    let counter = Rc::clone(&accepted);
    d.listen(listener, StreamConfig::default(), move |_| {
        counter.set(counter.get() + 1);
        let (rec, _log) = Recorder::new();
        Box::new(rec)
    })
    .unwrap();
    let mut fillers = fill_fd_table();
    // The client needs an fd too: free exactly one for it.
    fillers.pop();
    let _client = TcpStream::connect(addr).unwrap();
    let mut errors = Vec::new();
    for _ in 0..200 {
        d.turn(Some(Duration::from_millis(10))).unwrap();
        errors.extend(d.take_errors());
        if !errors.is_empty() {
            break;
        }
    }
    assert!(
        errors
            .iter()
            .any(|e| e.raw_os_error() == Some(libc::EMFILE)),
        "{errors:?}"
    );
    assert_eq!(accepted.get(), 0);
    drop(fillers);
    drop(limit);
    // After the retry delay (ACCEPT_RETRY_DELAY) the pending connection is
    // accepted.
    assert!(d.run_until(LIMIT, || accepted.get() == 1).unwrap());
    assert!(d.take_errors().is_empty());
}
