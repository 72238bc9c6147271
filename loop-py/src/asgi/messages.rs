//! Decoding the app's `send()` messages into Rust values.
//!
//! Everything that can run Python code (a mapping's `__getitem__`, an
//! iterable of headers, a body's buffer export) runs here, before the
//! connection is borrowed.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

pub(super) type Headers<'py> = Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>;

/// A body as sent: `bytes` is used in place; other buffers are copied out.
pub(super) enum Body<'py> {
    Bytes(Bound<'py, PyBytes>),
    Copied(Vec<u8>),
}

impl Body<'_> {
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Body::Bytes(b) => b.as_bytes(),
            Body::Copied(v) => v,
        }
    }
}

pub(super) enum Message<'py> {
    Start {
        status: u16,
        headers: Headers<'py>,
        trailers: bool,
    },
    Body {
        body: Body<'py>,
        more: bool,
    },
    Trailers {
        headers: Headers<'py>,
        more: bool,
    },
}

/// A decoded message and its `type`, for error messages.
pub(super) struct Decoded<'py> {
    pub kind: Bound<'py, PyString>,
    pub message: Message<'py>,
}

pub(super) fn decode<'py>(message: &Bound<'py, PyAny>) -> PyResult<Decoded<'py>> {
    let py = message.py();
    let kind = field(message, intern!(py, "type"))?
        .ok_or_else(|| PyTypeError::new_err("ASGI message has no 'type'"))?;
    let kind = kind
        .cast_into::<PyString>()
        .map_err(|_| PyTypeError::new_err("ASGI message 'type' must be a str"))?;
    let message = match kind.to_str()? {
        "http.response.start" => {
            let status = field(message, intern!(py, "status"))?
                .ok_or_else(|| PyTypeError::new_err("'http.response.start' needs a 'status'"))?;
            let status: i64 = status
                .extract()
                .map_err(|_| PyTypeError::new_err("response 'status' must be an int"))?;
            let status = u16::try_from(status)
                .map_err(|_| PyValueError::new_err(format!("invalid response status {status}")))?;
            let headers = header_list(field(message, intern!(py, "headers"))?)?;
            let trailers = flag(message, intern!(py, "trailers"))?;
            Message::Start {
                status,
                headers,
                trailers,
            }
        }
        "http.response.body" => {
            let body = body(field(message, intern!(py, "body"))?)?;
            let more = flag(message, intern!(py, "more_body"))?;
            Message::Body { body, more }
        }
        "http.response.trailers" => {
            let headers = header_list(field(message, intern!(py, "headers"))?)?;
            let more = flag(message, intern!(py, "more_trailers"))?;
            Message::Trailers { headers, more }
        }
        other => {
            return Err(PyRuntimeError::new_err(format!(
                "Unexpected ASGI message type '{other}' for an HTTP connection"
            )))
        }
    };
    Ok(Decoded { kind, message })
}

fn flag(message: &Bound<'_, PyAny>, key: &Bound<'_, PyString>) -> PyResult<bool> {
    match field(message, key)? {
        Some(v) => v.is_truthy(),
        None => Ok(false),
    }
}

/// The bytes of a body value (bytes, bytearray, memoryview, any buffer).
fn body(value: Option<Bound<'_, PyAny>>) -> PyResult<Body<'_>> {
    let Some(value) = value else {
        return Ok(Body::Copied(Vec::new()));
    };
    let value = match value.cast_into::<PyBytes>() {
        Ok(bytes) => return Ok(Body::Bytes(bytes)),
        Err(e) => e.into_inner(),
    };
    let buffer = PyBuffer::<u8>::get(&value).map_err(|e| {
        // Not a buffer at all: say what is expected. An error raised by
        // the object's own buffer export is the app's: keep it.
        if e.is_instance_of::<PyTypeError>(value.py()) {
            PyTypeError::new_err("response 'body' must be bytes")
        } else {
            e
        }
    })?;
    Ok(Body::Copied(buffer.to_vec(value.py())?))
}

/// `message[key]`, or None when absent (dicts fast, any mapping works).
fn field<'py>(
    message: &Bound<'py, PyAny>,
    key: &Bound<'py, PyString>,
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
fn header_list(obj: Option<Bound<'_, PyAny>>) -> PyResult<Headers<'_>> {
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
                        return Err(not_bytes());
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
        let (Ok(name), Ok(value)) = (name?.cast_into::<PyBytes>(), value?.cast_into::<PyBytes>())
        else {
            return Err(not_bytes());
        };
        out.push((name, value));
    }
    Ok(out)
}

fn not_bytes() -> PyErr {
    PyTypeError::new_err("header names and values must be bytes")
}
