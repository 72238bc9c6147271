//! One HTTP exchange as the ASGI app sees it: the native `receive()` and
//! `send()` callables, the futures they wait on, and what the driver's
//! events do to them. What the messages mean for HTTP is the driver's (and
//! `loop_http::ServerConnection`'s) to decide.
//!
//! `receive` and `send` carry the connection and exchange ids: once the
//! connection moved on to the next request, an old exchange's `receive()`
//! answers `http.disconnect` and its `send()` raises instead of touching
//! the new one.

use crate::asgi::bridge::{self, reentered, with_driver, HttpServer};
use crate::asgi::messages::{self, FileBody, Message, Sent};
use crate::asgi::{scope, ClientDisconnected};
use crate::event_loop::Loop;
use crate::future_ops;
use loop_http::{BodyRead, ResponsePart, SendError};
use loop_server::{ConnId, ExchangeId, SendRefused};
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;

pub(in crate::asgi) fn client_disconnected() -> PyErr {
    ClientDisconnected::new_err("the client disconnected")
}

fn protocol_error(message: String) -> PyErr {
    PyRuntimeError::new_err(message)
}

/// Resolve `waiter` unless the app cancelled it.
fn resolve(waiter: &Bound<'_, PyAny>, value: Bound<'_, PyAny>) -> PyResult<bool> {
    future_ops::resolve_if_pending(waiter, &value)
}

/// [`Event::Body`](loop_server::Event::Body): hand received body to the
/// waiting `receive()`.
pub(in crate::asgi) fn deliver(
    server: &Bound<'_, HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
) -> PyResult<()> {
    let py = server.py();
    let waiter = with_driver(server, |d| {
        d.exchange_app(conn, ex).and_then(|x| x.receive.take())
    });
    let live = match &waiter {
        Some(w) => !future_ops::is_done(w.bind(py))?,
        None => false,
    };
    let (Some(waiter), true) = (waiter, live) else {
        // Cancelled by the app: the data stays for its next receive().
        with_driver(server, |d| d.reader_left(conn));
        return Ok(());
    };
    let taken = with_driver(server, |d| d.take_body(conn));
    let msg = match taken {
        Some((body, more)) => scope::request_message(py, &body, more)?,
        None => scope::disconnect_message(py)?,
    };
    resolve(waiter.bind(py), msg.into_any())?;
    Ok(())
}

/// [`Event::Ended`](loop_server::Event::Ended): the exchange is over for
/// the app (response done, or the client gone): a waiting `receive()` gets
/// `http.disconnect`, a waiting `send()` returns (raising when
/// `disconnected`).
pub(in crate::asgi) fn ended(
    server: &Bound<'_, HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
    disconnected: bool,
) -> PyResult<()> {
    let py = server.py();
    let (receive, send) = with_driver(server, |d| match d.exchange_app(conn, ex) {
        Some(x) => (x.receive.take(), x.send.take()),
        None => (None, None),
    });
    if let Some(waiter) = receive {
        resolve(waiter.bind(py), scope::disconnect_message(py)?.into_any())?;
    }
    if let Some(waiter) = send {
        fail_or_release(waiter.bind(py), disconnected)?;
    }
    Ok(())
}

/// A waiting `send()`: it raises `ClientDisconnected`, or returns.
pub(in crate::asgi) fn fail_or_release(
    waiter: &Bound<'_, PyAny>,
    disconnected: bool,
) -> PyResult<()> {
    let py = waiter.py();
    if future_ops::is_done(waiter)? {
        return Ok(());
    }
    if disconnected {
        waiter.call_method1(
            intern!(py, "set_exception"),
            (client_disconnected().into_value(py),),
        )?;
    } else {
        future_ops::set_result(waiter, &py.None().into_bound(py))?;
    }
    Ok(())
}

/// [`Event::Writable`](loop_server::Event::Writable): a `send()` that waited
/// for the write buffer (or its file) returns.
pub(in crate::asgi) fn writable(
    server: &Bound<'_, HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
) -> PyResult<()> {
    let py = server.py();
    let waiter = with_driver(server, |d| {
        d.exchange_app(conn, ex).and_then(|x| x.send.take())
    });
    if let Some(waiter) = waiter {
        resolve(waiter.bind(py), py.None().into_bound(py))?;
    }
    Ok(())
}

fn new_future<'py>(server: &Bound<'py, HttpServer>) -> PyResult<Bound<'py, PyAny>> {
    let event_loop = server.borrow().event_loop.clone_ref(server.py());
    Loop::create_future(event_loop.bind(server.py()))
}

fn receive<'py>(
    server: &Bound<'py, HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
) -> PyResult<Bound<'py, PyAny>> {
    let py = server.py();
    let pending = {
        let mut me = server.try_borrow_mut().map_err(reentered)?;
        me.driver
            .exchange_app(conn, ex)
            .and_then(|x| x.receive.as_ref().map(|w| w.clone_ref(py)))
    };
    let busy = match pending {
        Some(w) => !future_ops::is_done(w.bind(py))?,
        None => false,
    };
    let future = new_future(server)?;
    let read = with_driver(server, |d| d.read_body(conn, ex));
    match read {
        BodyRead::Disconnect => {
            future_ops::set_result(&future, scope::disconnect_message(py)?.as_any())?;
        }
        BodyRead::Data(body, more) => {
            future_ops::set_result(&future, scope::request_message(py, &body, more)?.as_any())?;
        }
        BodyRead::Wait { .. } if busy => {
            return Err(protocol_error(
                "receive() called while another receive() is pending".into(),
            ));
        }
        BodyRead::Wait { .. } => {
            let old = with_driver(server, |d| {
                d.exchange_app(conn, ex)
                    .and_then(|x| x.receive.replace(future.clone().unbind()))
            });
            // A cancelled earlier wait, dropped unborrowed.
            drop(old);
        }
    }
    bridge::pump(server, false)?;
    Ok(future)
}

fn send<'py>(
    server: &Bound<'py, HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
    message: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = server.py();
    {
        let mut me = server.try_borrow_mut().map_err(reentered)?;
        if let Some(x) = me.driver.exchange_app(conn, ex) {
            if x.sending {
                return Err(protocol_error(
                    "send() called from inside another send() (a response body's buffer export?)"
                        .into(),
                ));
            }
            x.sending = true;
        }
    }
    let decoded = messages::decode(message);
    with_driver(server, |d| {
        if let Some(x) = d.exchange_app(conn, ex) {
            x.sending = false;
        }
    });
    let messages::Decoded { kind, message } = decoded?;
    let message = match message {
        Sent::File(body) => return send_file(server, conn, ex, kind.to_str()?, body),
        Sent::Message(message) => message,
    };
    let sent = with_driver(server, |d| match &message {
        Message::Start {
            status,
            headers,
            trailers,
        } => d.send(
            conn,
            ex,
            ResponsePart::Start {
                status: *status,
                headers: headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
                trailers: *trailers,
            },
        ),
        Message::Body { body, more } => d.send(conn, ex, body_part(body.as_slice(), *more)),
        Message::Trailers { headers, more } => d.send(
            conn,
            ex,
            ResponsePart::Trailers {
                headers: headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
                more: *more,
            },
        ),
    });
    drop(message);
    let result = match sent {
        Ok(true) => {
            let future = new_future(server)?;
            let old = with_driver(server, |d| {
                d.exchange_app(conn, ex)
                    .and_then(|x| x.send.replace(future.clone().unbind()))
            });
            drop(old);
            Ok(future)
        }
        Ok(false) => Ok(server.borrow().done_future.bind(py).clone()),
        Err(err) => Err(send_error(err, kind.to_str()?)),
    };
    bridge::pump(server, false)?;
    result
}

/// A body message (its header type is never used).
fn body_part(
    data: &[u8],
    more: bool,
) -> ResponsePart<'_, std::iter::Empty<(&'static [u8], &'static [u8])>> {
    ResponsePart::Body { data, more }
}

/// A response body from a file (`pathsend`, `zerocopysend`): the driver
/// sends it with `sendfile(2)` as the client reads; the `send()` waits
/// until it is out (or raises `ClientDisconnected`).
fn send_file<'py>(
    server: &Bound<'py, HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
    kind: &str,
    body: FileBody,
) -> PyResult<Bound<'py, PyAny>> {
    let py = server.py();
    // Made before the file is framed: a failure after it would leave the
    // connection with a body announced and never sent.
    let future = new_future(server)?;
    let FileBody {
        file,
        offset,
        count,
        more,
        reposition,
    } = body;
    let sent = with_driver(server, |d| {
        d.send_file(conn, ex, file, offset, count, more, reposition)
    });
    let result = match sent {
        // It waits on the future: the exchange's `send` waiter.
        Ok(true) => {
            let old = with_driver(server, |d| {
                d.exchange_app(conn, ex)
                    .and_then(|x| x.send.replace(future.clone().unbind()))
            });
            drop(old);
            Ok(future)
        }
        Ok(false) => Ok(server.borrow().done_future.bind(py).clone()),
        Err(err) => Err(send_error(err, kind)),
    };
    bridge::pump(server, false)?;
    result
}

/// The ASGI error for a refused message of type `kind`.
pub(in crate::asgi) fn send_error(err: SendRefused, kind: &str) -> PyErr {
    let err = match err {
        SendRefused::FileInFlight => {
            return protocol_error(
                "send() called while a file of the response is still being sent".into(),
            )
        }
        SendRefused::Http(err) => err,
    };
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
    server: Py<HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
}

impl Receive {
    pub(super) fn new(server: Py<HttpServer>, conn: ConnId, ex: ExchangeId) -> Self {
        Receive { server, conn, ex }
    }
}

#[pymethods]
impl Receive {
    fn __call__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        receive(self.server.bind(py), self.conn, self.ex)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.server)
    }
}

/// The `send` callable handed to the app.
#[pyclass(frozen, module = "ferroloop._native")]
pub struct Send {
    server: Py<HttpServer>,
    conn: ConnId,
    ex: ExchangeId,
}

impl Send {
    pub(super) fn new(server: Py<HttpServer>, conn: ConnId, ex: ExchangeId) -> Self {
        Send { server, conn, ex }
    }
}

#[pymethods]
impl Send {
    fn __call__<'py>(&self, message: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        send(self.server.bind(message.py()), self.conn, self.ex, message)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.server)
    }
}
