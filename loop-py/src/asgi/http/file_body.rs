//! A response body from a file (`http.response.pathsend`,
//! `http.response.zerocopysend`): `loop_http` frames it as body bytes the
//! glue writes itself ([`ResponsePart::File`]), and
//! `loop_transports::FileSend` puts them on the socket with `sendfile(2)`
//! (through the layer, a bounded chunk at a time, when there is one) as
//! fast as the client reads. No byte of the file is held in memory.
//!
//! The app's `send()` completes once the whole region is with the kernel
//! (or the connection is gone: `ClientDisconnected`), so a slow reader
//! holds back the app as a full write buffer does for a body; what it waits
//! on is the socket, never a copy of the file.

use super::connection::HttpConnection;
use super::exchange::{client_disconnected, protocol_error, send_error};
use crate::asgi::messages::FileBody;
use crate::asgi::shared::ServerShared;
use crate::event_loop::Loop;
use crate::future_ops;
use loop_core::clock;
use loop_http::ResponsePart;
use loop_transports::{FileProgress, FileSend};
use pyo3::prelude::*;
use std::io::{Seek, SeekFrom};

type NoHeaders = std::iter::Empty<(&'static [u8], &'static [u8])>;

/// A file region on its way to the client.
pub(in crate::asgi) struct InFlight {
    pub(super) send: FileSend,
    /// The exchange it answers.
    id: u64,
    /// The body goes on after the file (zerocopysend's `more_body`).
    more: bool,
    /// Move the file's position past the region once sent.
    reposition: bool,
}

/// The app's `send()` of a file message of type `kind`.
pub(super) fn send<'py>(
    conn: &Bound<'py, HttpConnection>,
    id: u64,
    kind: &str,
    body: FileBody,
) -> PyResult<Bound<'py, PyAny>> {
    let py = conn.py();
    // Made before the file is framed: a failure after it would leave the
    // connection with a body announced and never sent.
    let event_loop = conn.borrow().event_loop.clone_ref(py);
    let future = Loop::create_future(event_loop.bind(py))?;
    let now = clock::monotonic();
    let framed = {
        let mut me = conn.borrow_mut();
        let len = me.http.file_len(id, body.count);
        let part: ResponsePart<'_, NoHeaders> = ResponsePart::File { len };
        me.with_output(|http, out| http.send(id, out, part, None, None, now))
            .map(|_| len)
    };
    let len = framed.map_err(|e| send_error(e, kind))?;
    if len == 0 {
        // HEAD, 304, an empty file: nothing to send, the body ends (or goes
        // on) as an empty body message would.
        return finish(conn, id, body.more, kind)?;
    }
    let old = {
        let mut me = conn.borrow_mut();
        me.file = Some(InFlight {
            send: FileSend::new(body.file, body.offset, len),
            id,
            more: body.more,
            reposition: body.reposition,
        });
        me.waiters.send.replace(future.clone().unbind())
    };
    drop(old);
    // The head (and a chunk header) first, then the file as it fits.
    HttpConnection::flush(conn)?;
    Ok(future)
}

/// Send what the socket takes of the file in flight; at its end, complete
/// the response or wake the app for more body.
pub(super) fn pump(conn: &Bound<'_, HttpConnection>) -> PyResult<()> {
    let Some(progress) = conn.borrow_mut().advance_file() else {
        return Ok(());
    };
    match progress {
        FileProgress::Pending => Ok(()),
        FileProgress::Done => {
            let Some(file) = conn.borrow_mut().file.take() else {
                return Ok(());
            };
            if file.reposition {
                // The app's fd shares this position; failing to move it
                // leaves the region to be sent again, not a broken response.
                let mut shared = file.send.file();
                let _ = shared.seek(SeekFrom::Start(file.send.offset()));
            }
            let InFlight { id, more, .. } = file;
            // A refused end already closed the connection, which woke the
            // waiting send() with ClientDisconnected.
            finish(conn, id, more, "http.response.zerocopysend").map(drop)
        }
        // Closed first, then logged: a failing log call leaves nothing open.
        FileProgress::Short => {
            HttpConnection::lose(conn)?;
            warn(
                conn,
                "the file ended before its response body did: connection closed",
            )
        }
        FileProgress::Failed(err) => {
            HttpConnection::lose(conn)?;
            let message = format!("reading the response file failed ({err}): connection closed");
            warn(conn, &message)
        }
        FileProgress::Lost => HttpConnection::lose(conn),
    }
}

/// The file's bytes are all sent: end the body (`more` false) or let the
/// app go on. The app's waiting `send()` is resolved; `Ok(Err(_))` is the
/// error for a `send()` that did not wait (the connection is closed then).
fn finish<'py>(
    conn: &Bound<'py, HttpConnection>,
    id: u64,
    more: bool,
    kind: &str,
) -> PyResult<Result<Bound<'py, PyAny>, PyErr>> {
    let py = conn.py();
    let done = conn
        .borrow()
        .shared
        .bind(py)
        .borrow()
        .done_future
        .clone_ref(py);
    if more {
        go_on(conn)?;
        return Ok(Ok(done.into_bound(py)));
    }
    let now = clock::monotonic();
    let end: ResponsePart<'_, NoHeaders> = ResponsePart::Body {
        data: b"",
        more: false,
    };
    let outcome = conn
        .borrow_mut()
        .with_output(|http, out| http.send(id, out, end, None, None, now));
    match outcome {
        // `response_complete` resolves a waiting send() (end_for_app).
        Ok(Some(_)) => HttpConnection::response_complete(conn)?,
        // Declared trailers come next.
        Ok(None) => go_on(conn)?,
        Err(loop_http::SendError::Invalid(loop_http::ResponseError::TooShort)) => {
            HttpConnection::lose(conn)?;
            warn(
                conn,
                "the response file is shorter than its content-length: connection closed",
            )?;
            return Ok(Err(client_disconnected()));
        }
        Err(e) => {
            HttpConnection::lose(conn)?;
            return Ok(Err(send_error(e, kind)));
        }
    }
    Ok(Ok(done.into_bound(py)))
}

/// The response goes on after the file: wake the app's `send()`.
fn go_on(conn: &Bound<'_, HttpConnection>) -> PyResult<()> {
    let py = conn.py();
    let waiter = conn.borrow_mut().waiters.send.take();
    if let Some(waiter) = waiter {
        future_ops::resolve_if_pending(waiter.bind(py), &py.None().into_bound(py))?;
    }
    HttpConnection::flush(conn)
}

fn warn(conn: &Bound<'_, HttpConnection>, message: &str) -> PyResult<()> {
    let shared = conn.borrow().shared.clone_ref(conn.py());
    ServerShared::log_warning(shared.bind(conn.py()), message)
}

/// A `send()` while a file is on its way: refused, nothing written.
pub(super) fn busy() -> PyErr {
    protocol_error("send() called while a file of the response is still being sent".into())
}
