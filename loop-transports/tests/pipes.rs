//! Read and write pipes over real `pipe2` fds.

mod common;

use common::*;
use loop_transports::pipe::pipe;
use loop_transports::{
    Error, IoFd, Read as CoreRead, StreamConfig, StreamCore, StreamEvent, StreamKind,
};
use std::fs::File;
use std::io::{Read, Write};
use std::time::Duration;

#[test]
fn data_flows_through_a_pipe_pair_and_eof_ends_the_reader() {
    let (r, w) = pipe().unwrap();
    let config = StreamConfig::default();
    let mut d = Driver::new(64 * 1024).unwrap();
    let reader = StreamCore::read_pipe(IoFd::owned(r), &config).unwrap();
    let writer = StreamCore::write_pipe(IoFd::owned(w), &config).unwrap();
    assert_eq!(writer.kind(), StreamKind::WritePipe);
    let (rrec, rlog) = Recorder::new();
    let (wrec, wlog) = Recorder::new();
    let rt = d.add_stream(reader, rrec);
    let wt = d.add_stream(writer, wrec);
    assert!(matches!(rt.write(b"x"), Err(Error::NotWritable)));
    assert!(!rt.can_write_eof() && wt.can_write_eof());
    let payload = pattern(3 << 20, 12);
    wt.write(&payload).unwrap();
    // On a write pipe write_eof is close: flush, then connection_lost(None).
    wt.write_eof().unwrap();
    assert!(wt.is_closing());
    assert!(d
        .run_until(LIMIT, || rlog.borrow().is_lost() && wlog.borrow().is_lost())
        .unwrap());
    assert!(rlog.borrow().data == payload);
    // asyncio's read pipe: eof_received, then connection_lost(None).
    let calls = rlog.borrow().calls.clone();
    assert_eq!(calls.last().copied(), Some("lost"));
    assert_eq!(calls[calls.len() - 2], "eof");
    assert!(rlog.borrow().lost.as_ref().unwrap().is_none());
    assert!(wlog.borrow().lost.as_ref().unwrap().is_none());
    assert!(d.is_empty());
}

#[test]
fn reader_closing_with_data_buffered_is_broken_pipe() {
    let (r, w) = pipe().unwrap();
    let mut d = Driver::new(64 * 1024).unwrap();
    let (rec, log) = Recorder::new();
    let t = d.add_stream(
        StreamCore::write_pipe(IoFd::owned(w), &StreamConfig::default()).unwrap(),
        rec,
    );
    // Fill the pipe so data stays buffered, then close the read end.
    t.write(&pattern(1 << 20, 13)).unwrap();
    assert!(t.get_write_buffer_size() > 0);
    d.turn(Some(Duration::ZERO)).unwrap();
    drop(r);
    assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
    let log = log.borrow();
    let err = log.lost.as_ref().unwrap().as_ref().expect("an error");
    assert!(err.is_broken_pipe(), "{err:?}");
}

#[test]
fn reader_closing_with_nothing_buffered_is_a_clean_close() {
    let (r, w) = pipe().unwrap();
    let mut d = Driver::new(64 * 1024).unwrap();
    let (rec, log) = Recorder::new();
    let _t = d.add_stream(
        StreamCore::write_pipe(IoFd::owned(w), &StreamConfig::default()).unwrap(),
        rec,
    );
    drop(r);
    // The hang-up shows as readability of the write end.
    assert!(d.run_until(LIMIT, || log.borrow().is_lost()).unwrap());
    assert!(log.borrow().lost.as_ref().unwrap().is_none());
}

#[test]
fn writing_after_the_reader_left_is_epipe() {
    let (r, w) = pipe().unwrap();
    let mut core = StreamCore::write_pipe(IoFd::owned(w), &StreamConfig::default()).unwrap();
    drop(r);
    core.write(b"nobody listens").unwrap();
    match core.next_event() {
        Some(StreamEvent::Closed(Some(e))) => assert!(e.is_broken_pipe(), "{e:?}"),
        other => panic!("expected EPIPE, got {other:?}"),
    }
    // Further writes are ignored (a write pipe also ignores them while closing).
    assert!(matches!(
        core.write(b"again").unwrap(),
        loop_transports::Write::Ignored { .. }
    ));
}

#[test]
fn read_pipe_sees_eof_when_the_writer_closes() {
    let (r, w) = pipe().unwrap();
    let mut core = StreamCore::read_pipe(IoFd::owned(r), &StreamConfig::default()).unwrap();
    let mut w = File::from(w);
    w.write_all(b"tail").unwrap();
    drop(w);
    core.begin_read_event();
    assert_eq!(core.read(), CoreRead::Data(b"tail"));
    core.begin_read_event();
    assert_eq!(core.read(), CoreRead::Eof);
    assert!(matches!(core.next_event(), Some(StreamEvent::Closed(None))));
    assert_eq!(core.interest(), loop_core::Interest::NONE);
}

#[test]
fn borrowed_pipe_fd_is_not_closed_by_the_core() {
    let (r, w) = pipe().unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&w);
    {
        // SAFETY: `w` stays open for the whole scope of the core.
        let borrowed = unsafe { IoFd::borrow_raw(fd) };
        let mut core = StreamCore::write_pipe(borrowed, &StreamConfig::default()).unwrap();
        core.write(b"via core").unwrap();
        core.close();
        core.close_fd();
    }
    // Still open: the owner can write, and the reader sees both writes.
    let mut w = File::from(w);
    w.write_all(b" and owner").unwrap();
    drop(w);
    let mut got = String::new();
    let mut r = File::from(r);
    // The pipe is non-blocking; everything is already in it.
    r.read_to_string(&mut got).unwrap();
    assert_eq!(got, "via core and owner");
}
