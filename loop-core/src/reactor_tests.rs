//! The reactor on every backend this build has (epoll and io_uring on
//! Linux, `polling` with `--cfg ferroloop_force_polling`), then what only
//! the io_uring backend has to get right.

use super::*;
use crate::poller::testable_backends;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

fn poll_now<S>(reactor: &mut Reactor<S>) -> Vec<Ready> {
    let mut out = Vec::new();
    reactor.poll(0, &mut out).expect("poll");
    out
}

/// Run `test` on a fresh reactor of each backend, naming the backend if it
/// fails.
fn on_each_backend<S>(test: impl Fn(Reactor<S>)) {
    for choice in testable_backends() {
        eprintln!("backend: {}", choice.name());
        test(Reactor::with_backend(choice).expect("reactor"));
    }
}

#[test]
fn readiness_on_a_socketpair() {
    on_each_backend(|mut reactor| {
        let (a, mut b) = UnixStream::pair().unwrap();
        reactor
            .register(a.as_raw_fd(), Interest::READABLE, "a")
            .unwrap();
        assert!(poll_now(&mut reactor).is_empty());
        b.write_all(b"x").unwrap();
        let ready = poll_now(&mut reactor);
        assert_eq!(
            ready,
            vec![Ready {
                fd: a.as_raw_fd(),
                readable: true,
                writable: false
            }]
        );
        // Level-triggered: still ready until read, tick after tick.
        assert_eq!(poll_now(&mut reactor).len(), 1);
        assert_eq!(poll_now(&mut reactor).len(), 1);
        reactor.set_interest(a.as_raw_fd(), Interest::BOTH).unwrap();
        let ready = poll_now(&mut reactor);
        assert!(ready[0].readable && ready[0].writable);
        // Read it all: no longer readable.
        let mut buf = [0u8; 8];
        assert_eq!((&a).read(&mut buf).unwrap(), 1);
        reactor
            .set_interest(a.as_raw_fd(), Interest::READABLE)
            .unwrap();
        assert!(poll_now(&mut reactor).is_empty());
        assert_eq!(reactor.len(), 1);
        assert_eq!(reactor.deregister(a.as_raw_fd()), Some("a"));
        b.write_all(b"y").unwrap();
        assert!(poll_now(&mut reactor).is_empty());
        assert!(reactor.is_empty());
    });
}

#[test]
fn stale_event_after_fd_reuse_is_dropped() {
    on_each_backend(|mut reactor| {
        let (old, mut old_peer) = UnixStream::pair().unwrap();
        let fd = old.as_raw_fd();
        reactor.register(fd, Interest::READABLE, "old").unwrap();
        // Keep the old file alive through a dup, so the kernel keeps its
        // registration (keyed by the old generation), then free the number.
        // SAFETY: plain dup of an fd we own; result checked.
        let keep = unsafe { libc::dup(fd) };
        assert!(keep >= 0);
        drop(old);
        // The next socket gets the freed fd number.
        let (new, _new_peer) = UnixStream::pair().unwrap();
        assert_eq!(new.as_raw_fd(), fd, "fd number was reused");
        let previous = reactor.register(fd, Interest::READABLE, "new").unwrap();
        assert_eq!(previous, Some("old"));
        // Readiness of the old file must not reach the new owner.
        old_peer.write_all(b"old data").unwrap();
        assert!(poll_now(&mut reactor).is_empty());
        // SAFETY: closing the dup made above.
        unsafe { libc::close(keep) };
    });
}

#[test]
fn reregister_after_close_without_deregister() {
    on_each_backend(|mut reactor| {
        let (a, _pa) = UnixStream::pair().unwrap();
        let fd = a.as_raw_fd();
        reactor.register(fd, Interest::READABLE, 1).unwrap();
        assert!(poll_now(&mut reactor).is_empty());
        drop(a);
        let (b, mut pb) = UnixStream::pair().unwrap();
        assert_eq!(b.as_raw_fd(), fd);
        // Interest change on the reused number watches the new file.
        reactor.set_interest(fd, Interest::BOTH).unwrap();
        pb.write_all(b"y").unwrap();
        let ready = poll_now(&mut reactor);
        assert_eq!(ready.len(), 1);
        assert!(ready[0].readable);
    });
}

#[test]
fn notifier_wakes_a_blocking_poll_from_another_thread() {
    on_each_backend(|mut reactor: Reactor<()>| {
        for _ in 0..3 {
            let notifier = reactor.notifier();
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                notifier.notify().unwrap();
            });
            let start = Instant::now();
            let mut out = Vec::new();
            let mut wait = reactor.poll(10_000, &mut out).unwrap();
            // A wait may end early without the wake-up (a completion the
            // ring had for nothing); the wake-up then comes with the next.
            if !wait.woken {
                wait = reactor.poll(10_000, &mut out).unwrap();
            }
            assert!(wait.woken);
            assert!(start.elapsed() < Duration::from_secs(5));
            t.join().unwrap();
            // Acknowledged: the next zero-timeout poll is not woken.
            let wait = reactor.poll(0, &mut out).unwrap();
            assert!(!wait.woken || cfg!(ferroloop_force_polling));
        }
    });
}

#[test]
fn a_wait_times_out() {
    on_each_backend(|mut reactor: Reactor<()>| {
        let (a, _b) = UnixStream::pair().unwrap();
        reactor
            .register(a.as_raw_fd(), Interest::READABLE, ())
            .unwrap();
        let start = Instant::now();
        let mut out = Vec::new();
        reactor.poll(30, &mut out).unwrap();
        assert!(out.is_empty());
        assert!(start.elapsed() >= Duration::from_millis(25));
    });
}

#[test]
fn a_hung_up_fd_without_interest_does_not_end_polls() {
    on_each_backend(|mut reactor| {
        let (a, b) = UnixStream::pair().unwrap();
        reactor
            .register(a.as_raw_fd(), Interest::READABLE, ())
            .unwrap();
        reactor.set_interest(a.as_raw_fd(), Interest::NONE).unwrap();
        drop(b); // the peer hangs up: epoll would report EPOLLHUP forever
        let start = Instant::now();
        let mut out = Vec::new();
        let wait = reactor.poll(60, &mut out).unwrap();
        assert!(out.is_empty());
        assert!(!wait.woken || cfg!(ferroloop_force_polling));
        assert!(
            start.elapsed() >= Duration::from_millis(50),
            "the poll waited instead of returning at once"
        );
        // Interest again: the hang-up is reported as readable.
        reactor
            .set_interest(a.as_raw_fd(), Interest::READABLE)
            .unwrap();
        assert_eq!(poll_now(&mut reactor).len(), 1);
    });
}

#[test]
fn close_releases_the_poller() {
    // (That the fds are really gone is checked through /proc/self/fd by
    // the Python fd-leak tests; here parallel tests would race a count.)
    on_each_backend(|mut reactor: Reactor<()>| {
        let notifier = reactor.notifier();
        reactor.close();
        // A notifier outliving the poller is harmless.
        notifier.notify().unwrap();
        let mut out = Vec::new();
        if cfg!(not(ferroloop_force_polling)) {
            assert!(
                reactor.poll(0, &mut out).is_err(),
                "a closed poller cannot be waited on"
            );
        }
    });
}

#[test]
fn negative_fd_is_rejected() {
    on_each_backend(|mut reactor| {
        assert!(matches!(
            reactor.register(-1, Interest::READABLE, ()),
            Err(Error::InvalidFd(-1))
        ));
    });
}

#[test]
fn closed_fds_and_regular_files_are_refused_as_epoll_refuses_them() {
    on_each_backend(|mut reactor| {
        let (a, _b) = UnixStream::pair().unwrap();
        let fd = a.as_raw_fd();
        drop(a);
        let err = reactor.register(fd, Interest::READABLE, ()).unwrap_err();
        assert_eq!(io::Error::from(err).raw_os_error(), Some(libc::EBADF));
        let file = std::fs::File::open("/proc/self/exe").unwrap();
        let err = reactor
            .register(file.as_raw_fd(), Interest::READABLE, ())
            .unwrap_err();
        if cfg!(not(ferroloop_force_polling)) {
            assert_eq!(io::Error::from(err).raw_os_error(), Some(libc::EPERM));
        }
    });
}

#[test]
fn reinit_keeps_registrations() {
    on_each_backend(|mut reactor| {
        let (a, mut b) = UnixStream::pair().unwrap();
        reactor
            .register(a.as_raw_fd(), Interest::READABLE, ())
            .unwrap();
        assert!(poll_now(&mut reactor).is_empty());
        reactor.reinit_after_fork().unwrap();
        b.write_all(b"z").unwrap();
        assert_eq!(poll_now(&mut reactor).len(), 1);
        assert_eq!(poll_now(&mut reactor).len(), 1);
    });
}

#[test]
fn changes_within_a_tick_are_coalesced() {
    on_each_backend(|mut reactor| {
        let (a, mut b) = UnixStream::pair().unwrap();
        b.write_all(b"x").unwrap();
        let fd = a.as_raw_fd();
        reactor.register(fd, Interest::READABLE, ()).unwrap();
        reactor.set_interest(fd, Interest::BOTH).unwrap();
        reactor.set_interest(fd, Interest::WRITABLE).unwrap();
        let ready = poll_now(&mut reactor);
        assert_eq!(ready.len(), 1);
        assert!(ready[0].writable && !ready[0].readable);
        reactor.set_interest(fd, Interest::READABLE).unwrap();
        reactor.deregister(fd);
        assert!(poll_now(&mut reactor).is_empty());
    });
}

#[test]
fn more_registrations_in_one_tick_than_the_ring_has_entries() {
    on_each_backend(|mut reactor| {
        // 300 > the ring's 256 submission entries: the queue is handed to
        // the kernel early, and every registration still reports.
        let mut pairs = Vec::new();
        for _ in 0..300 {
            let (a, mut b) = UnixStream::pair().unwrap();
            b.write_all(b"x").unwrap();
            reactor
                .register(a.as_raw_fd(), Interest::READABLE, ())
                .unwrap();
            pairs.push((a, b));
        }
        let mut seen = std::collections::HashSet::new();
        let start = Instant::now();
        while seen.len() < pairs.len() && start.elapsed() < Duration::from_secs(5) {
            let mut out = Vec::new();
            reactor.poll(100, &mut out).unwrap();
            seen.extend(out.iter().map(|r| r.fd));
        }
        assert_eq!(seen.len(), pairs.len());
    });
}

/// io_uring: a poll op in flight holds its file, so `deregister` must have
/// the kernel drop the op before it returns, or the `close` that follows
/// would not close (no EOF for the peer).
#[test]
fn deregister_then_close_really_closes() {
    on_each_backend(|mut reactor| {
        let (a, mut peer) = UnixStream::pair().unwrap();
        peer.set_nonblocking(true).unwrap();
        reactor
            .register(a.as_raw_fd(), Interest::READABLE, ())
            .unwrap();
        assert!(poll_now(&mut reactor).is_empty()); // the poll op is armed
        reactor.deregister(a.as_raw_fd());
        drop(a);
        let mut buf = [0u8; 4];
        assert_eq!(peer.read(&mut buf).unwrap(), 0, "the peer sees EOF");
    });
}

#[cfg(all(target_os = "linux", not(ferroloop_force_polling)))]
mod uring {
    use super::*;
    use crate::poller::{Backend, BackendChoice};

    fn ring_reactor() -> Reactor<u32> {
        let reactor = Reactor::with_backend(BackendChoice::IoUring).unwrap();
        assert_eq!(reactor.backend(), Backend::IoUring);
        reactor
    }

    #[test]
    fn a_refused_enter_is_retried() {
        let mut reactor = ring_reactor();
        let (a, mut b) = UnixStream::pair().unwrap();
        reactor
            .register(a.as_raw_fd(), Interest::READABLE, 7)
            .unwrap();
        b.write_all(b"x").unwrap();
        reactor.poller_mut().inject_enter_errors(libc::EAGAIN, 2);
        let mut out = Vec::new();
        reactor.poll(1000, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(reactor.backend(), Backend::IoUring);
        assert!(reactor.fallback_reason().is_none());
    }

    #[test]
    fn a_ring_that_keeps_failing_falls_back_to_epoll() {
        let mut reactor = ring_reactor();
        let (a, mut b) = UnixStream::pair().unwrap();
        let (c, _d) = UnixStream::pair().unwrap();
        reactor
            .register(a.as_raw_fd(), Interest::READABLE, 1)
            .unwrap();
        reactor
            .register(c.as_raw_fd(), Interest::READABLE, 2)
            .unwrap();
        assert!(poll_now(&mut reactor).is_empty());
        let notifier = reactor.notifier();
        reactor.poller_mut().inject_enter_errors(libc::ENOMEM, 100);
        let mut out = Vec::new();
        let wait = reactor.poll(10, &mut out).unwrap();
        assert!(wait.fell_back);
        assert_eq!(reactor.backend(), Backend::Epoll);
        assert!(reactor.fallback_reason().unwrap().contains("epoll"));
        // Registrations moved over; the old notifier still wakes it.
        b.write_all(b"x").unwrap();
        let ready = poll_now(&mut reactor);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].fd, a.as_raw_fd());
        notifier.notify().unwrap();
        assert!(reactor.poll(1000, &mut out).unwrap().woken);
    }

    #[test]
    fn wake_ups_keep_coming() {
        // The eventfd's multishot poll reports every notify, and the
        // counter is never read.
        let mut reactor = ring_reactor();
        let notifier = reactor.notifier();
        let mut out = Vec::new();
        for _ in 0..100 {
            notifier.notify().unwrap();
            assert!(reactor.poll(1000, &mut out).unwrap().woken);
            assert!(!reactor.poll(0, &mut out).unwrap().woken);
        }
    }

    #[test]
    fn a_zero_timeout_poll_with_nothing_to_submit_makes_no_system_call() {
        // Indirectly: completions already posted are read without entering
        // (the fd is reported again only after the re-arm is submitted).
        let mut reactor = ring_reactor();
        let (a, mut b) = UnixStream::pair().unwrap();
        reactor
            .register(a.as_raw_fd(), Interest::READABLE, 1)
            .unwrap();
        b.write_all(b"x").unwrap();
        assert_eq!(poll_now(&mut reactor).len(), 1);
        assert_eq!(poll_now(&mut reactor).len(), 1);
    }
}
