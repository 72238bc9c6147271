//! The app's `send()` messages of a `websocket` session as Rust values.
//! Everything that can run Python code (a mapping's `__getitem__`, a
//! header iterable, a buffer export) runs here, before the session is
//! borrowed.

use crate::asgi::messages::{body, field, flag, header_list, Body, Headers};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// The payload of `websocket.send`.
pub(super) enum Data<'py> {
    Bytes(Bound<'py, PyBytes>),
    Copied(Vec<u8>),
    Text(Bound<'py, PyString>),
}

pub(super) enum WsMessage<'py> {
    Accept {
        subprotocol: Option<String>,
        headers: Headers<'py>,
    },
    Send(Data<'py>),
    /// Before accept only the type counts (FastAPI passes its validation
    /// errors, a list, as the reason of the `403`): the fields' errors
    /// wait until they matter.
    Close {
        code: PyResult<u16>,
        reason: PyResult<String>,
    },
    ResponseStart {
        status: u16,
        headers: Headers<'py>,
    },
    ResponseBody {
        body: Body<'py>,
        more: bool,
    },
}

/// A decoded message and its `type`, for error messages.
pub(super) struct Decoded<'py> {
    pub kind: Bound<'py, PyString>,
    pub message: WsMessage<'py>,
}

/// `message[key]`, None when absent or None.
fn optional<'py>(
    message: &Bound<'py, PyAny>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(field(message, key)?.filter(|v| !v.is_none()))
}

pub(super) fn decode<'py>(message: &Bound<'py, PyAny>) -> PyResult<Decoded<'py>> {
    let py = message.py();
    let kind = field(message, intern!(py, "type"))?
        .ok_or_else(|| PyTypeError::new_err("ASGI message has no 'type'"))?;
    let kind = kind
        .cast_into::<PyString>()
        .map_err(|_| PyTypeError::new_err("ASGI message 'type' must be a str"))?;
    let decoded = match kind.to_str()? {
        "websocket.send" => WsMessage::Send(data(message)?),
        "websocket.accept" => {
            let subprotocol = match optional(message, intern!(py, "subprotocol"))? {
                Some(v) => Some(v.extract::<String>().map_err(|_| {
                    PyTypeError::new_err("'websocket.accept' 'subprotocol' must be a str")
                })?),
                None => None,
            };
            let headers = header_list(field(message, intern!(py, "headers"))?)?;
            WsMessage::Accept {
                subprotocol,
                headers,
            }
        }
        "websocket.close" => {
            let code = match optional(message, intern!(py, "code"))? {
                Some(v) => v.extract::<u16>().map_err(|_| {
                    PyValueError::new_err("'websocket.close' 'code' must be an int in 0..65536")
                }),
                None => Ok(1000),
            };
            let reason = match optional(message, intern!(py, "reason"))? {
                Some(v) => v
                    .extract::<String>()
                    .map_err(|_| PyTypeError::new_err("'websocket.close' 'reason' must be a str")),
                None => Ok(String::new()),
            };
            WsMessage::Close { code, reason }
        }
        "websocket.http.response.start" => {
            let status = field(message, intern!(py, "status"))?.ok_or_else(|| {
                PyTypeError::new_err("'websocket.http.response.start' needs a 'status'")
            })?;
            let status: i64 = status
                .extract()
                .map_err(|_| PyTypeError::new_err("response 'status' must be an int"))?;
            let status = u16::try_from(status)
                .ok()
                .filter(|s| (100..600).contains(s))
                .ok_or_else(|| {
                    PyRuntimeError::new_err(format!(
                        "Invalid HTTP status code '{status}' in response."
                    ))
                })?;
            let headers = header_list(field(message, intern!(py, "headers"))?)?;
            WsMessage::ResponseStart { status, headers }
        }
        "websocket.http.response.body" => WsMessage::ResponseBody {
            body: body(field(message, intern!(py, "body"))?)?,
            more: flag(message, intern!(py, "more_body"))?,
        },
        other => {
            return Err(PyRuntimeError::new_err(format!(
                "Unexpected ASGI message type '{other}' for a WebSocket connection"
            )))
        }
    };
    Ok(Decoded {
        kind,
        message: decoded,
    })
}

/// `websocket.send`'s payload: exactly one of `bytes` and `text`.
fn data<'py>(message: &Bound<'py, PyAny>) -> PyResult<Data<'py>> {
    let py = message.py();
    let bytes = optional(message, intern!(py, "bytes"))?;
    let text = optional(message, intern!(py, "text"))?;
    match (bytes, text) {
        (Some(b), None) => match b.cast_into::<PyBytes>() {
            Ok(b) => Ok(Data::Bytes(b)),
            Err(e) => {
                let value = e.into_inner();
                let buffer = PyBuffer::<u8>::get(&value).map_err(|e| {
                    if e.is_instance_of::<PyTypeError>(py) {
                        PyTypeError::new_err("'websocket.send' 'bytes' must be bytes")
                    } else {
                        e
                    }
                })?;
                Ok(Data::Copied(buffer.to_vec(py)?))
            }
        },
        (None, Some(t)) => t
            .cast_into::<PyString>()
            .map(Data::Text)
            .map_err(|_| PyTypeError::new_err("'websocket.send' 'text' must be a str")),
        (Some(_), Some(_)) => Err(PyValueError::new_err(
            "'websocket.send' has both 'bytes' and 'text': exactly one of them must be set",
        )),
        (None, None) => Err(PyValueError::new_err(
            "'websocket.send' needs 'bytes' or 'text'",
        )),
    }
}
