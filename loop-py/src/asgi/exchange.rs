//! One request/response exchange as the ASGI app sees it: the native
//! `receive()` and `send()` callables and the response state machine.
//!
//! `receive` and `send` carry the exchange id: once the connection moved on
//! to the next request, an old exchange's `receive()` answers
//! `http.disconnect` and its `send()` raises instead of touching the new one.

use super::connection::{client_disconnected, protocol_error, HttpConnection, Phase, Progress};
use super::scope;
use super::server::HttpServer;
use crate::event_loop::Loop;
use loop_http::{RequestHead, RequestInfo, ResponseEncoder, CONTINUE_RESPONSE};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

pub(super) enum ResponseState {
    NotStarted,
    Started(ResponseEncoder),
    /// Body complete; trailers declared and not all sent yet.
    Trailers(ResponseEncoder, Vec<(Vec<u8>, Vec<u8>)>),
    Done,
}

pub(super) struct Exchange {
    pub id: u64,
    pub head: RequestHead,
    pub info: RequestInfo,
    pub expect_continue: bool,
    /// `100 Continue` went out.
    pub continue_sent: bool,
    /// The app called `receive()`: for an `Expect: 100-continue` request the
    /// body is read only from then on.
    pub body_wanted: bool,
    /// Body received, not yet handed to the app.
    pub body: Vec<u8>,
    pub body_done: bool,
    /// The `more_body: False` message went out.
    final_delivered: bool,
    pub receive_waiter: Option<Py<PyAny>>,
    send_waiter: Option<Py<PyAny>>,
    pub response: ResponseState,
    trailers_declared: bool,
    pub status: u16,
    pub task: Option<Py<PyAny>>,
    pub disconnected: bool,
    /// Seconds spent waiting for body bytes (the body-rate rule).
    pub body_wait: f64,
    /// When the sweep last saw the server waiting for body bytes; `None`
    /// while it is not (the first sweep of a wait credits nothing, so the
    /// rule never fires before its grace period).
    pub body_checked_at: Option<f64>,
}

impl Exchange {
    pub fn new(id: u64, head: RequestHead) -> Self {
        let info = RequestInfo::of(&head);
        let body_done = matches!(head.body, loop_http::BodyFraming::Empty);
        Exchange {
            id,
            expect_continue: head.expect_continue && !body_done,
            info,
            head,
            continue_sent: false,
            body_wanted: false,
            body: Vec::new(),
            body_done,
            final_delivered: false,
            receive_waiter: None,
            send_waiter: None,
            response: ResponseState::NotStarted,
            trailers_declared: false,
            status: 0,
            task: None,
            disconnected: false,
            body_wait: 0.0,
            body_checked_at: None,
        }
    }

    pub fn response_progress(&self) -> Progress {
        match self.response {
            ResponseState::NotStarted => Progress::NotStarted,
            ResponseState::Done => Progress::Complete,
            _ => Progress::Started,
        }
    }

    /// Hand received body to a waiting `receive()`.
    pub fn deliver(conn: &Bound<'_, HttpConnection>) -> PyResult<()> {
        let py = conn.py();
        let Some(waiter) = conn
            .borrow_mut()
            .exchange
            .as_mut()
            .and_then(|ex| ex.receive_waiter.take())
        else {
            return Ok(());
        };
        let waiter = waiter.into_bound(py);
        if waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
            // Cancelled by the app: the data stays for its next receive().
            return Ok(());
        }
        let taken = {
            let mut me = conn.borrow_mut();
            me.exchange.as_mut().map(|ex| {
                let more = !ex.body_done;
                if !more {
                    ex.final_delivered = true;
                }
                (std::mem::take(&mut ex.body), more)
            })
        };
        let msg = match taken {
            Some((body, more)) => scope::request_message(py, &body, more)?,
            None => scope::disconnect_message(py)?,
        };
        waiter.call_method1(intern!(py, "set_result"), (msg,))?;
        Ok(())
    }

    /// The exchange is over for the app (response done or connection
    /// gone): wake a waiting `receive()` with `http.disconnect` and a
    /// waiting `send()`.
    pub fn end_for_app(conn: &Bound<'_, HttpConnection>) -> PyResult<()> {
        let py = conn.py();
        let (receive, send, disconnected) = {
            let mut me = conn.borrow_mut();
            let closed = me.phase == Phase::Closed;
            match me.exchange.as_mut() {
                Some(ex) => {
                    let over =
                        closed || ex.disconnected || matches!(ex.response, ResponseState::Done);
                    if !over {
                        return Ok(());
                    }
                    (
                        ex.receive_waiter.take(),
                        ex.send_waiter.take(),
                        closed || ex.disconnected,
                    )
                }
                None => return Ok(()),
            }
        };
        if let Some(waiter) = receive {
            let waiter = waiter.bind(py);
            if !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
                waiter
                    .call_method1(intern!(py, "set_result"), (scope::disconnect_message(py)?,))?;
            }
        }
        if let Some(waiter) = send {
            let waiter = waiter.bind(py);
            if !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
                if disconnected {
                    waiter.call_method1(
                        intern!(py, "set_exception"),
                        (client_disconnected().into_value(py),),
                    )?;
                } else {
                    waiter.call_method1(intern!(py, "set_result"), (py.None(),))?;
                }
            }
        }
        Ok(())
    }

    /// Wake a `send()` waiting for the write buffer to drain.
    pub fn release_writer(conn: &Bound<'_, HttpConnection>) -> PyResult<()> {
        let py = conn.py();
        let waiter = {
            let mut me = conn.borrow_mut();
            if !me.under_low_water() && !me.is_closed() {
                return Ok(());
            }
            match me.exchange.as_mut() {
                Some(ex) => ex.send_waiter.take(),
                None => None,
            }
        };
        if let Some(waiter) = waiter {
            let waiter = waiter.bind(py);
            if !waiter.call_method0(intern!(py, "done"))?.is_truthy()? {
                waiter.call_method1(intern!(py, "set_result"), (py.None(),))?;
            }
        }
        Ok(())
    }

    fn receive<'py>(conn: &Bound<'py, HttpConnection>, id: u64) -> PyResult<Bound<'py, PyAny>> {
        let py = conn.py();
        // Body bytes that arrived with the head are still unparsed when the
        // app's first step asks for them: parse them now, so the app gets
        // them at once instead of waiting a loop turn on a future.
        if conn.borrow().has_unparsed_body(id) {
            HttpConnection::process(conn)?;
        }
        enum Next {
            Disconnect,
            Message(Vec<u8>, bool),
            Wait { sent_continue: bool },
        }
        let next = {
            let mut me = conn.borrow_mut();
            let closed = me.phase == Phase::Closed;
            let mut sent_continue = false;
            let next = match me.exchange.as_mut().filter(|ex| ex.id == id) {
                None => Next::Disconnect,
                Some(ex)
                    if closed || ex.disconnected || matches!(ex.response, ResponseState::Done) =>
                {
                    Next::Disconnect
                }
                Some(ex) if !ex.body.is_empty() || (ex.body_done && !ex.final_delivered) => {
                    let more = !ex.body_done;
                    if !more {
                        ex.final_delivered = true;
                    }
                    Next::Message(std::mem::take(&mut ex.body), more)
                }
                Some(ex) => {
                    if let Some(w) = &ex.receive_waiter {
                        if !w.bind(py).call_method0(intern!(py, "done"))?.is_truthy()? {
                            return Err(protocol_error(
                                "receive() called while another receive() is pending".into(),
                            ));
                        }
                    }
                    // RFC 9110 §10.1.1: 100 Continue only for 1.1 clients
                    // that asked, and only once the app wants the body (not
                    // after a final response started: the client then
                    // sends the body on its own or not at all).
                    if ex.expect_continue && !ex.body_wanted {
                        ex.body_wanted = true;
                        if matches!(ex.response, ResponseState::NotStarted) && !ex.final_delivered {
                            ex.continue_sent = true;
                            sent_continue = true;
                        }
                    }
                    Next::Wait { sent_continue }
                }
            };
            if sent_continue {
                me.out_buffer().extend_from_slice(CONTINUE_RESPONSE);
            }
            next
        };
        let event_loop = conn.borrow().event_loop.clone_ref(py);
        let future = Loop::create_future(event_loop.bind(py))?;
        match next {
            Next::Disconnect => {
                future
                    .call_method1(intern!(py, "set_result"), (scope::disconnect_message(py)?,))?;
            }
            Next::Message(body, more) => {
                future.call_method1(
                    intern!(py, "set_result"),
                    (scope::request_message(py, &body, more)?,),
                )?;
                // Room in the body buffer again: parse what is pending.
                HttpConnection::process(conn)?;
            }
            Next::Wait { sent_continue } => {
                if let Some(ex) = conn.borrow_mut().exchange.as_mut() {
                    ex.receive_waiter = Some(future.clone().unbind());
                }
                if sent_continue {
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
        let kind = field(message, intern!(py, "type"))?
            .ok_or_else(|| PyTypeError::new_err("ASGI message has no 'type'"))?;
        let kind = kind
            .cast_into::<PyString>()
            .map_err(|_| PyTypeError::new_err("ASGI message 'type' must be a str"))?;
        let kind = kind.to_str()?;
        let msg = match kind {
            "http.response.start" => {
                let status = field(message, intern!(py, "status"))?.ok_or_else(|| {
                    PyTypeError::new_err("'http.response.start' needs a 'status'")
                })?;
                let status: i64 = status
                    .extract()
                    .map_err(|_| PyTypeError::new_err("response 'status' must be an int"))?;
                let status = u16::try_from(status).map_err(|_| {
                    PyValueError::new_err(format!("invalid response status {status}"))
                })?;
                let headers = header_list(field(message, intern!(py, "headers"))?)?;
                let trailers = match field(message, intern!(py, "trailers"))? {
                    Some(t) => t.is_truthy()?,
                    None => false,
                };
                Message::Start {
                    status,
                    headers,
                    trailers,
                }
            }
            "http.response.body" => {
                let body = field(message, intern!(py, "body"))?;
                let more = match field(message, intern!(py, "more_body"))? {
                    Some(m) => m.is_truthy()?,
                    None => false,
                };
                Message::Body { body, more }
            }
            "http.response.trailers" => {
                let headers = header_list(field(message, intern!(py, "headers"))?)?;
                let more = match field(message, intern!(py, "more_trailers"))? {
                    Some(m) => m.is_truthy()?,
                    None => false,
                };
                Message::Trailers { headers, more }
            }
            other => {
                return Err(protocol_error(format!(
                    "Unexpected ASGI message type '{other}' for an HTTP connection"
                )))
            }
        };
        // The head waits for the first body message: a whole small response
        // then leaves in one send(2) (one TCP segment, not two).
        let is_start = matches!(msg, Message::Start { .. });
        let server = conn.borrow().server.clone_ref(py);
        let outcome = {
            let mut me = conn.borrow_mut();
            let closed = me.phase == Phase::Closed;
            let current = me.exchange.as_ref().is_some_and(|ex| ex.id == id);
            let done = !current
                || me
                    .exchange
                    .as_ref()
                    .is_some_and(|ex| matches!(ex.response, ResponseState::Done));
            if done {
                let dropped = me.exchange.as_ref().is_some_and(|ex| ex.disconnected);
                if closed && (!current || dropped) {
                    return Err(client_disconnected());
                }
                return Err(protocol_error(format!(
                    "Unexpected ASGI message '{kind}' sent, after response already completed."
                )));
            }
            if closed || me.exchange.as_ref().is_some_and(|ex| ex.disconnected) {
                return Err(client_disconnected());
            }
            let mut srv = server.bind(py).borrow_mut();
            let mut ex = me.exchange.take().ok_or_else(client_disconnected)?;
            let result = apply(&mut ex, &mut me, &mut srv, msg, kind);
            me.exchange = Some(ex);
            result?
        };
        // A completed response is flushed by `response_complete`, after it
        // decided whether the connection stays open.
        if !is_start && outcome.is_none() {
            HttpConnection::flush(conn)?;
        }
        if let Some(keep_alive) = outcome {
            HttpConnection::response_complete(conn, keep_alive)?;
        }
        // Once the response is complete the exchange may be replaced by a
        // pipelined one at any moment: its send() never waits.
        let must_wait = outcome.is_none() && {
            let me = conn.borrow();
            me.over_high_water() && !me.is_closed()
        };
        if must_wait {
            let event_loop = conn.borrow().event_loop.clone_ref(py);
            let future = Loop::create_future(event_loop.bind(py))?;
            if let Some(ex) = conn.borrow_mut().exchange.as_mut() {
                ex.send_waiter = Some(future.clone().unbind());
            }
            return Ok(future);
        }
        Ok(server.bind(py).borrow().done_future.bind(py).clone())
    }
}

enum Message<'py> {
    Start {
        status: u16,
        headers: Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>,
        trailers: bool,
    },
    Body {
        body: Option<Bound<'py, PyAny>>,
        more: bool,
    },
    Trailers {
        headers: Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>,
        more: bool,
    },
}

/// Apply one `send()` message to the response; `Some(keep_alive)` when it
/// completed the response.
fn apply(
    ex: &mut Exchange,
    conn: &mut HttpConnection,
    server: &mut HttpServer,
    msg: Message<'_>,
    kind: &str,
) -> PyResult<Option<bool>> {
    let settings = conn.settings.clone();
    let out = conn.out_buffer();
    let mark = out.len();
    let state = std::mem::replace(&mut ex.response, ResponseState::Done);
    let (state, result) = match (state, msg) {
        (ResponseState::NotStarted, Message::Start { status, headers, trailers }) => {
            let pairs = headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
            let date = if settings.date_header { Some(server.date()) } else { None };
            match ResponseEncoder::start(
                out,
                ex.info,
                status,
                pairs,
                trailers,
                date,
                settings.server_header.as_deref(),
            ) {
                Ok(enc) => {
                    ex.status = status;
                    ex.trailers_declared = trailers;
                    (ResponseState::Started(enc), Ok(None))
                }
                Err(e) => (ResponseState::NotStarted, Err(invalid_response(e))),
            }
        }
        (ResponseState::Started(mut enc), Message::Body { body, more }) => {
            let result = with_bytes(body.as_ref(), |data| enc.body(out, data).map_err(invalid_response));
            match result {
                Err(e) => (ResponseState::Started(enc), Err(e)),
                Ok(()) if more => (ResponseState::Started(enc), Ok(None)),
                Ok(()) if ex.trailers_declared => (ResponseState::Trailers(enc, Vec::new()), Ok(None)),
                Ok(()) => match enc.finish(out, std::iter::empty()) {
                    Ok(()) => (ResponseState::Done, Ok(Some(enc.keep_alive()))),
                    Err(e) => (ResponseState::Started(enc), Err(invalid_response(e))),
                },
            }
        }
        (ResponseState::Trailers(mut enc, mut held), Message::Trailers { headers, more }) => {
            held.extend(headers.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec())));
            if more {
                (ResponseState::Trailers(enc, held), Ok(None))
            } else {
                let pairs = held.iter().map(|(n, v)| (n.as_slice(), v.as_slice()));
                match enc.finish(out, pairs) {
                    Ok(()) => (ResponseState::Done, Ok(Some(enc.keep_alive()))),
                    Err(e) => (ResponseState::Trailers(enc, held), Err(invalid_response(e))),
                }
            }
        }
        (state @ ResponseState::NotStarted, _) => (
            state,
            Err(protocol_error(format!(
                "Expected ASGI message 'http.response.start', but got '{kind}'."
            ))),
        ),
        (state @ ResponseState::Started(_), Message::Start { .. }) => (
            state,
            Err(protocol_error(
                "Unexpected ASGI message 'http.response.start' sent, after response already started."
                    .into(),
            )),
        ),
        (state @ ResponseState::Started(_), _) => (
            state,
            Err(protocol_error(format!(
                "Unexpected ASGI message '{kind}': trailers were not declared in 'http.response.start'"
            ))),
        ),
        (state @ ResponseState::Trailers(..), _) => (
            state,
            Err(protocol_error(format!(
                "Expected ASGI message 'http.response.trailers', but got '{kind}'."
            ))),
        ),
        (ResponseState::Done, _) => (
            ResponseState::Done,
            Err(protocol_error(format!(
                "Unexpected ASGI message '{kind}' sent, after response already completed."
            ))),
        ),
    };
    ex.response = state;
    if result.is_err() {
        // Nothing of a rejected message reaches the client.
        conn.out_buffer().truncate(mark);
    }
    result
}

fn invalid_response(err: loop_http::ResponseError) -> PyErr {
    protocol_error(format!("Invalid HTTP response: {err}"))
}

/// Run `f` on the bytes of a body value (bytes, bytearray, memoryview).
fn with_bytes<R>(
    body: Option<&Bound<'_, PyAny>>,
    f: impl FnOnce(&[u8]) -> PyResult<R>,
) -> PyResult<R> {
    let Some(body) = body else {
        return f(&[]);
    };
    if let Ok(bytes) = body.cast::<PyBytes>() {
        return f(bytes.as_bytes());
    }
    let buffer = PyBuffer::<u8>::get(body)
        .map_err(|_| PyTypeError::new_err("response 'body' must be bytes"))?;
    let data = buffer.to_vec(body.py())?;
    f(&data)
}

/// `message[key]`, or None when absent (dicts fast, any mapping works).
fn field<'py>(
    message: &Bound<'py, PyAny>,
    key: &Bound<'py, pyo3::types::PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Ok(dict) = message.cast::<PyDict>() {
        return dict.get_item(key);
    }
    match message.get_item(key) {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyKeyError>(message.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

/// An ASGI header list: an iterable of `[name, value]` byte strings.
fn header_list(
    obj: Option<Bound<'_, PyAny>>,
) -> PyResult<Vec<(Bound<'_, PyBytes>, Bound<'_, PyBytes>)>> {
    let Some(obj) = obj else {
        return Ok(Vec::new());
    };
    // The usual shape, a list of 2-tuples of bytes, without the iterator
    // protocol.
    if let Ok(list) = obj.cast::<PyList>() {
        let mut out = Vec::with_capacity(list.len());
        let mut simple = true;
        for item in list.iter() {
            match item.cast::<PyTuple>() {
                Ok(pair) if pair.len() == 2 => {
                    let (Ok(name), Ok(value)) = (
                        pair.get_item(0)?.cast_into::<PyBytes>(),
                        pair.get_item(1)?.cast_into::<PyBytes>(),
                    ) else {
                        return Err(PyTypeError::new_err(
                            "header names and values must be bytes",
                        ));
                    };
                    out.push((name, value));
                }
                _ => {
                    simple = false;
                    break;
                }
            }
        }
        if simple {
            return Ok(out);
        }
    }
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        let mut parts = item.try_iter()?;
        let (Some(name), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(PyValueError::new_err(
                "each header must be a [name, value] pair",
            ));
        };
        let (name, value) = (name?, value?);
        let (Ok(name), Ok(value)) = (name.cast_into::<PyBytes>(), value.cast_into::<PyBytes>())
        else {
            return Err(PyTypeError::new_err(
                "header names and values must be bytes",
            ));
        };
        out.push((name, value));
    }
    Ok(out)
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
        Exchange::receive(self.conn.bind(py), self.id)
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
        Exchange::send(self.conn.bind(message.py()), self.id, message)
    }
}
