//! One request/response exchange as the ASGI app sees it: the native
//! `receive()` and `send()` callables and the futures they wait on. What
//! the messages mean for HTTP is `loop_http::ServerConnection`'s to decide.
//!
//! `receive` and `send` carry the exchange id: once the connection moved on
//! to the next request, an old exchange's `receive()` answers
//! `http.disconnect` and its `send()` raises instead of touching the new one.

use super::connection::HttpConnection;
use crate::asgi::messages::{self, Message, Sent};
use crate::asgi::{scope, ClientDisconnected};
use crate::event_loop::Loop;
use crate::future_ops;
use loop_core::clock;
use loop_http::{BodyRead, ResponsePart, SendError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pycell::PyBorrowMutError;

pub(in crate::asgi) fn client_disconnected() -> PyErr {
    ClientDisconnected::new_err("the client disconnected")
}

pub(super) fn protocol_error(message: String) -> PyErr {
    PyRuntimeError::new_err(message)
}

/// A `receive()`/`send()` made while the connection is in use further up
/// the stack (from a `__del__` or a buffer export that runs inside it).
fn reentered(_: PyBorrowMutError) -> PyErr {
    protocol_error("ASGI receive()/send() called re-entrantly, from inside the server".into())
}

/// Resolve `waiter` unless the app cancelled it.
fn resolve(waiter: &Bound<'_, PyAny>, value: Bound<'_, PyAny>) -> PyResult<bool> {
    future_ops::resolve_if_pending(waiter, &value)
}

/// Hand received body to the waiting `receive()`.
pub(in crate::asgi) fn deliver(conn: &Bound<'_, HttpConnection>) -> PyResult<()> {
    let py = conn.py();
    let waiter = conn.borrow_mut().waiters.receive.take();
    let live = match &waiter {
        Some(w) => !future_ops::is_done(w.bind(py))?,
        None => false,
    };
    let (Some(waiter), true) = (waiter, live) else {
        // Cancelled by the app: the data stays for its next receive().
        conn.borrow_mut().http.reader_left();
        return Ok(());
    };
    let taken = conn.borrow_mut().http.take_delivery();
    let msg = match taken {
        Some((body, more)) => scope::request_message(py, &body, more)?,
        None => scope::disconnect_message(py)?,
    };
    resolve(waiter.bind(py), msg.into_any())?;
    Ok(())
}

/// The exchange is over for the app (response done or connection gone):
/// wake a waiting `receive()` with `http.disconnect` and a waiting `send()`.
pub(in crate::asgi) fn end_for_app(conn: &Bound<'_, HttpConnection>) -> PyResult<()> {
    let py = conn.py();
    let (receive, send, disconnected) = {
        let mut me = conn.borrow_mut();
        let closed = me.http.is_closed();
        let Some((over, abandoned)) = me
            .http
            .exchange()
            .map(|ex| (ex.is_over(), ex.is_abandoned()))
        else {
            return Ok(());
        };
        if !(closed || over) {
            return Ok(());
        }
        (
            me.waiters.receive.take(),
            me.waiters.send.take(),
            closed || abandoned,
        )
    };
    if let Some(waiter) = receive {
        resolve(waiter.bind(py), scope::disconnect_message(py)?.into_any())?;
    }
    if let Some(waiter) = send {
        let waiter = waiter.bind(py);
        if !future_ops::is_done(waiter)? {
            if disconnected {
                waiter.call_method1(
                    intern!(py, "set_exception"),
                    (client_disconnected().into_value(py),),
                )?;
            } else {
                future_ops::set_result(waiter, &py.None().into_bound(py))?;
            }
        }
    }
    Ok(())
}

/// Wake a `send()` waiting for the write buffer to drain.
pub(in crate::asgi) fn release_writer(conn: &Bound<'_, HttpConnection>) -> PyResult<()> {
    let py = conn.py();
    let waiter = {
        let mut me = conn.borrow_mut();
        // A file's send() waits for the file, not for the buffer.
        let waits = me.file.is_some() || !me.under_low_water();
        if waits && !me.http.is_closed() {
            return Ok(());
        }
        me.waiters.send.take()
    };
    if let Some(waiter) = waiter {
        resolve(waiter.bind(py), py.None().into_bound(py))?;
    }
    Ok(())
}

fn receive<'py>(conn: &Bound<'py, HttpConnection>, id: u64) -> PyResult<Bound<'py, PyAny>> {
    let py = conn.py();
    drop(conn.try_borrow_mut().map_err(reentered)?);
    // Body bytes that arrived with the head are still unparsed when the
    // app's first step asks for them: parse them now, so the app gets them
    // at once instead of waiting a loop turn on a future.
    if conn.borrow().http.has_unparsed_body(id) {
        HttpConnection::process(conn)?;
    }
    let pending = conn
        .borrow()
        .waiters
        .receive
        .as_ref()
        .map(|w| w.clone_ref(py));
    let busy = match pending {
        Some(w) => !future_ops::is_done(w.bind(py))?,
        None => false,
    };
    let read = {
        let mut me = conn.borrow_mut();
        me.with_output(|http, out| http.read_body(id, out))
    };
    let event_loop = conn.borrow().event_loop.clone_ref(py);
    let future = Loop::create_future(event_loop.bind(py))?;
    match read {
        BodyRead::Disconnect => {
            future_ops::set_result(&future, scope::disconnect_message(py)?.as_any())?;
        }
        BodyRead::Data(body, more) => {
            future_ops::set_result(&future, scope::request_message(py, &body, more)?.as_any())?;
            // Room in the body buffer again: parse what is pending.
            HttpConnection::process(conn)?;
        }
        BodyRead::Wait { .. } if busy => {
            return Err(protocol_error(
                "receive() called while another receive() is pending".into(),
            ));
        }
        BodyRead::Wait { continue_written } => {
            let old = conn
                .borrow_mut()
                .waiters
                .receive
                .replace(future.clone().unbind());
            // A cancelled earlier wait, dropped unborrowed.
            drop(old);
            if continue_written {
                HttpConnection::flush(conn)?;
            }
            HttpConnection::process(conn)?;
        }
    }
    Ok(future)
}

fn send<'py>(
    conn: &Bound<'py, HttpConnection>,
    id: u64,
    message: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = conn.py();
    {
        let mut me = conn.try_borrow_mut().map_err(reentered)?;
        if me.file.is_some() {
            return Err(super::file_body::busy());
        }
        if me.sending {
            return Err(protocol_error(
                "send() called from inside another send() (a response body's buffer export?)"
                    .into(),
            ));
        }
        me.sending = true;
    }
    let decoded = messages::decode(message);
    conn.borrow_mut().sending = false;
    let messages::Decoded { kind, message } = decoded?;
    let message = match message {
        Sent::File(body) => return super::file_body::send(conn, id, kind.to_str()?, body),
        Sent::Message(message) => message,
    };
    // The head waits for the first body message: a whole small response
    // then leaves in one send(2) (one TCP segment, not two).
    let is_start = matches!(message, Message::Start { .. });
    let server = conn.borrow().shared.clone_ref(py);
    let outcome = {
        let mut me = conn.borrow_mut();
        let mut srv = server.bind(py).borrow_mut();
        let settings = me.settings.clone();
        let date = if settings.date_header {
            Some(srv.date())
        } else {
            None
        };
        let server_header = settings.server_header.as_deref();
        let now = clock::monotonic();
        me.with_output(|http, out| match &message {
            Message::Start {
                status,
                headers,
                trailers,
            } => http.send(
                id,
                out,
                ResponsePart::Start {
                    status: *status,
                    headers: headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
                    trailers: *trailers,
                },
                date,
                server_header,
                now,
            ),
            Message::Body { body, more } => http.send(
                id,
                out,
                body_part(body.as_slice(), *more),
                date,
                server_header,
                now,
            ),
            Message::Trailers { headers, more } => http.send(
                id,
                out,
                ResponsePart::Trailers {
                    headers: headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
                    more: *more,
                },
                date,
                server_header,
                now,
            ),
        })
    };
    let completed = match outcome {
        Ok(completed) => completed.is_some(),
        Err(err) => return Err(send_error(err, kind.to_str()?)),
    };
    // A completed response is flushed by `response_complete`, after it
    // decided whether the connection stays open.
    if completed {
        HttpConnection::response_complete(conn)?;
    } else if !is_start {
        HttpConnection::flush(conn)?;
    }
    // Once the response is complete the exchange may be replaced by a
    // pipelined one at any moment: its send() never waits.
    let must_wait = !completed && {
        let me = conn.borrow();
        me.over_high_water() && !me.http.is_closed()
    };
    if must_wait {
        let event_loop = conn.borrow().event_loop.clone_ref(py);
        let future = Loop::create_future(event_loop.bind(py))?;
        let old = conn
            .borrow_mut()
            .waiters
            .send
            .replace(future.clone().unbind());
        drop(old);
        return Ok(future);
    }
    Ok(server.bind(py).borrow().done_future.bind(py).clone())
}

/// A body message (its header type is never used).
fn body_part(
    data: &[u8],
    more: bool,
) -> ResponsePart<'_, std::iter::Empty<(&'static [u8], &'static [u8])>> {
    ResponsePart::Body { data, more }
}

/// The ASGI error for a refused message of type `kind`.
pub(super) fn send_error(err: SendError, kind: &str) -> PyErr {
    protocol_error(match err {
        SendError::Disconnected => return client_disconnected(),
        SendError::Completed => {
            format!("Unexpected ASGI message '{kind}' sent, after response already completed.")
        }
        SendError::NotStarted => {
            format!("Expected ASGI message 'http.response.start', but got '{kind}'.")
        }
        SendError::AlreadyStarted => "Unexpected ASGI message 'http.response.start' sent, \
                                      after response already started."
            .into(),
        SendError::TrailersNotDeclared => format!(
            "Unexpected ASGI message '{kind}': trailers were not declared in 'http.response.start'"
        ),
        SendError::ExpectedTrailers => {
            format!("Expected ASGI message 'http.response.trailers', but got '{kind}'.")
        }
        SendError::NoUpgrade => {
            "Invalid HTTP response: status 101 answers only a request asking for an Upgrade".into()
        }
        SendError::Invalid(e) => format!("Invalid HTTP response: {e}"),
    })
}

/// The `receive` callable handed to the app.
#[pyclass(frozen, module = "ferroloop._native")]
pub struct Receive {
    conn: Py<HttpConnection>,
    id: u64,
}

impl Receive {
    pub fn new(conn: Py<HttpConnection>, id: u64) -> Self {
        Receive { conn, id }
    }
}

#[pymethods]
impl Receive {
    fn __call__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        receive(self.conn.bind(py), self.id)
    }
}

/// The `send` callable handed to the app.
#[pyclass(frozen, module = "ferroloop._native")]
pub struct Send {
    conn: Py<HttpConnection>,
    id: u64,
}

impl Send {
    pub fn new(conn: Py<HttpConnection>, id: u64) -> Self {
        Send { conn, id }
    }
}

#[pymethods]
impl Send {
    fn __call__<'py>(&self, message: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        send(self.conn.bind(message.py()), self.id, message)
    }
}
