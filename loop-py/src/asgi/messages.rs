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

/// What a `send()` carries: a message for the HTTP state machine, or a
/// body from a file (`http.response.pathsend` / `zerocopysend`).
pub(super) enum Sent<'py> {
    Message(Message<'py>),
    File(FileBody),
}

/// A body sent from a file, opened (or duplicated) while decoding so the
/// app's `send()` raises the `OSError` of a missing or unreadable one.
pub(super) struct FileBody {
    pub file: std::fs::File,
    pub offset: u64,
    /// Bytes from `offset`, at most what the file has there.
    pub count: u64,
    pub more: bool,
    /// zerocopysend without an `offset`: the region started at the file's
    /// position, which moves past it once sent (as `sendfile(2)` without
    /// an offset does).
    pub reposition: bool,
}

/// A decoded message and its `type`, for error messages.
pub(super) struct Decoded<'py> {
    pub kind: Bound<'py, PyString>,
    pub message: Sent<'py>,
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
        "http.response.pathsend" => return file_message(kind, file::pathsend(message)?),
        "http.response.zerocopysend" => return file_message(kind, file::zerocopysend(message)?),
        other => {
            return Err(PyRuntimeError::new_err(format!(
                "Unexpected ASGI message type '{other}' for an HTTP connection"
            )))
        }
    };
    Ok(Decoded {
        kind,
        message: Sent::Message(message),
    })
}

fn file_message(kind: Bound<'_, PyString>, body: FileBody) -> PyResult<Decoded<'_>> {
    Ok(Decoded {
        kind,
        message: Sent::File(body),
    })
}

/// The file messages' fields (the ASGI path-send and zero-copy-send
/// extensions).
mod file {
    use super::{field, flag, FileBody};
    use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
    use pyo3::intern;
    use pyo3::prelude::*;
    use std::fs::File;
    use std::io::Seek;
    use std::os::fd::{BorrowedFd, RawFd};
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::PathBuf;

    /// `{"path": str}`: the whole file at that path; ends the body.
    pub(in crate::asgi) fn pathsend(message: &Bound<'_, PyAny>) -> PyResult<FileBody> {
        let py = message.py();
        let path = field(message, intern!(py, "path"))?
            .ok_or_else(|| PyTypeError::new_err("'http.response.pathsend' needs a 'path'"))?;
        let path: PathBuf = path
            .extract()
            .map_err(|_| PyTypeError::new_err("'http.response.pathsend' 'path' must be a str"))?;
        // The spec asks for an absolute path, but Starlette's FileResponse
        // sends its path as the app gave it, and the app stat()ed it from
        // the working directory: a relative path is opened from there too
        // (refusing it would break FileResponse("static/x") that works on
        // uvicorn, which does not advertise pathsend).
        // Non-blocking, so a FIFO cannot hang the loop in open(2); it is
        // refused below with anything else that is not a regular file.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| os_error(py, &e, Some(&path)))?;
        let meta = file.metadata().map_err(|e| os_error(py, &e, Some(&path)))?;
        if meta.is_dir() {
            let e = std::io::Error::from_raw_os_error(libc::EISDIR);
            return Err(os_error(py, &e, Some(&path)));
        }
        if !meta.is_file() {
            return Err(PyValueError::new_err(format!(
                "'http.response.pathsend' 'path' is not a regular file: {:?}",
                path.display().to_string()
            )));
        }
        Ok(FileBody {
            file,
            offset: 0,
            count: meta.len(),
            more: false,
            reposition: false,
        })
    }

    /// `{"file": file object, "offset": int?, "count": int?, "more_body":
    /// bool}`: a region of an open file, through a duplicate of its fd (the
    /// app may close its own as soon as `send()` returns).
    pub(in crate::asgi) fn zerocopysend(message: &Bound<'_, PyAny>) -> PyResult<FileBody> {
        let py = message.py();
        let obj = field(message, intern!(py, "file"))?
            .ok_or_else(|| PyTypeError::new_err("'http.response.zerocopysend' needs a 'file'"))?;
        let fd: RawFd = obj.call_method0(intern!(py, "fileno"))?.extract()?;
        if fd < 0 {
            return Err(PyValueError::new_err(
                "'http.response.zerocopysend' file is closed",
            ));
        }
        // SAFETY: `fd` is the file object's, which `obj` keeps open for
        // this call; it is only borrowed to duplicate it.
        let file = File::from(
            unsafe { BorrowedFd::borrow_raw(fd) }
                .try_clone_to_owned()
                .map_err(|e| os_error(py, &e, None))?,
        );
        let meta = file.metadata().map_err(|e| os_error(py, &e, None))?;
        if !meta.is_file() {
            return Err(PyValueError::new_err(
                "'http.response.zerocopysend' 'file' is not a regular file",
            ));
        }
        let number = |key: &Bound<'_, pyo3::types::PyString>| -> PyResult<Option<u64>> {
            match field(message, key)? {
                None => Ok(None),
                Some(v) if v.is_none() => Ok(None),
                Some(v) => v.extract::<u64>().map(Some).map_err(|_| {
                    PyValueError::new_err(format!(
                        "'http.response.zerocopysend' '{key}' must be an int >= 0"
                    ))
                }),
            }
        };
        let offset = number(intern!(py, "offset"))?;
        let count = number(intern!(py, "count"))?;
        let reposition = offset.is_none();
        let offset = match offset {
            Some(n) => n,
            // The duplicate shares the file position with the app's fd.
            None => (&file)
                .stream_position()
                .map_err(|e| os_error(py, &e, None))?,
        };
        let available = meta.len().saturating_sub(offset);
        Ok(FileBody {
            file,
            offset,
            count: count.map_or(available, |n| n.min(available)),
            more: flag(message, intern!(py, "more_body"))?,
            reposition,
        })
    }

    /// The `OSError` subclass Python raises for `err` (`FileNotFoundError`,
    /// `PermissionError`, `IsADirectoryError`, …), with the path.
    fn os_error(py: Python<'_>, err: &std::io::Error, path: Option<&PathBuf>) -> PyErr {
        let Some(errno) = err.raw_os_error() else {
            return PyOSError::new_err(err.to_string());
        };
        let text = py
            .import(intern!(py, "os"))
            .and_then(|os| os.call_method1(intern!(py, "strerror"), (errno,)))
            .and_then(|s| s.extract::<String>())
            .unwrap_or_else(|_| err.to_string());
        match path {
            // OSError(errno, text, filename) picks the subclass by errno.
            Some(path) => PyOSError::new_err((errno, text, path.clone())),
            None => PyOSError::new_err((errno, text)),
        }
    }
}

pub(super) fn flag(message: &Bound<'_, PyAny>, key: &Bound<'_, PyString>) -> PyResult<bool> {
    match field(message, key)? {
        Some(v) => v.is_truthy(),
        None => Ok(false),
    }
}

/// The bytes of a body value (bytes, bytearray, memoryview, any buffer).
pub(super) fn body(value: Option<Bound<'_, PyAny>>) -> PyResult<Body<'_>> {
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
pub(super) fn field<'py>(
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
pub(super) fn header_list(obj: Option<Bound<'_, PyAny>>) -> PyResult<Headers<'_>> {
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
