//! Socket reads and writes for the stream transports, with the GIL kept.
//!
//! Python's `socket.send`/`recv_into` release and re-take the GIL around
//! every call. On a non-blocking socket the syscall never waits, so the
//! round trip through the GIL is pure overhead (two per echoed message);
//! these do the same syscalls without it. Errors are the `OSError`
//! subclasses the socket methods raise (`BlockingIOError`, …).
//!
//! [`ReadPump`] and [`WritePump`] are the stream transport's per-message
//! paths in Rust: the reader the loop calls for a plain `Protocol`, and the
//! transport's `write` while nothing is buffered. Each saves a Python frame
//! per message on the hottest path of every stream server; anything out of
//! the ordinary (EOF, errors, a partial send, a closing transport) goes
//! back to the Python transport (`_transport.py`), which owns the state.

use crate::errors::os_error;
use loop_transports::sys;
use pyo3::exceptions::{PyKeyboardInterrupt, PySystemExit};
use pyo3::ffi;
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};
use pyo3::PyTraverseError;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

fn send_slice(fd: RawFd, data: &[u8]) -> PyResult<usize> {
    sys::send(fd, data).map_err(|e| os_error(&e))
}

/// `sock.send(data)` on fd `fd`: the bytes sent. `data` is any contiguous
/// buffer, whatever its item format (an `array('i')` view sends its bytes,
/// as `socket.send` does).
#[pyfunction]
pub fn sock_send(fd: RawFd, data: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(bytes) = data.cast::<PyBytes>() {
        return send_slice(fd, bytes.as_bytes());
    }
    let view = ByteView::get(data, false)?;
    // SAFETY: the view is acquired (alive and unresized) while `view` lives.
    let slice = unsafe { std::slice::from_raw_parts(view.ptr(), view.len()) };
    send_slice(fd, slice)
}

/// `sock.recv_into(buffer)` on fd `fd`: the bytes received (0: EOF).
/// `buffer` is a bytearray (the transports' read buffer) or any writable,
/// contiguous buffer a `BufferedProtocol.get_buffer()` returns.
#[pyfunction]
pub fn sock_recv_into(fd: RawFd, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(bytearray) = buffer.cast::<PyByteArray>() {
        // SAFETY: no Python code runs while the slice is in use (the GIL is
        // held and recv calls back into nothing), so the bytearray cannot
        // be resized or freed under it.
        let slice = unsafe { bytearray.as_bytes_mut() };
        return recv_slice(fd, slice.as_mut_ptr(), slice.len());
    }
    let view = ByteView::get(buffer, true)?;
    recv_slice(fd, view.ptr(), view.len())
}

/// A contiguous buffer export seen as plain bytes (`PyBUF_SIMPLE`: no
/// format, so any item type), released on drop. pyo3's typed `PyBuffer<u8>`
/// refuses views whose items are not bytes.
struct ByteView(Box<ffi::Py_buffer>);

impl ByteView {
    fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Self> {
        let flags = if writable {
            ffi::PyBUF_SIMPLE | ffi::PyBUF_WRITABLE
        } else {
            ffi::PyBUF_SIMPLE
        };
        // SAFETY: Py_buffer is plain data that PyObject_GetBuffer fills in;
        // zeroed is a valid starting state.
        let mut view: Box<ffi::Py_buffer> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `obj` is a live object (GIL held) and `view` a writable
        // Py_buffer that outlives the export (released in Drop).
        if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) } == -1 {
            return Err(PyErr::fetch(obj.py()));
        }
        Ok(ByteView(view))
    }

    fn ptr(&self) -> *mut u8 {
        self.0.buf.cast()
    }

    fn len(&self) -> usize {
        usize::try_from(self.0.len).unwrap_or(0)
    }
}

impl Drop for ByteView {
    fn drop(&mut self) {
        // SAFETY: the view was filled by a successful PyObject_GetBuffer and
        // is released once; dropping happens with the GIL held (ByteView
        // never leaves the pyfunction that made it).
        unsafe { ffi::PyBuffer_Release(&mut *self.0) }
    }
}

fn recv_slice(fd: RawFd, ptr: *mut u8, len: usize) -> PyResult<usize> {
    // SAFETY: the caller passes a live, writable region of `len` bytes that
    // stays valid (buffer export or GIL held) for the duration of the call.
    let buf = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
    sys::recv(fd, buf).map_err(|e| os_error(&e))
}

/// The stream transport's reader for a plain `Protocol`: per readable event
/// one read into the loop's reusable buffer and a bytes copy handed to
/// `protocol.data_received`; EOF and errors go to the transport's `_on_eof`
/// and `_fatal_error`. (A `BufferedProtocol` keeps the Python reader:
/// `get_buffer` decides where the bytes go.)
#[pyclass(frozen, module = "ferroloop._native")]
pub struct ReadPump {
    fd: RawFd,
    /// The `SocketTransport`: told of EOF and errors.
    transport: Py<PyAny>,
    /// The loop's reusable read buffer.
    buffer: Py<PyByteArray>,
    /// The protocol's bound `data_received` (a new pump per protocol).
    data_received: Py<PyAny>,
    /// The last read was big: read straight into a bytes object of the
    /// size waiting (see `read_direct`).
    bulk: AtomicBool,
}

/// Reads of at least this much switch a pump to `read_direct`.
const BULK_READ: usize = 64 * 1024;

impl ReadPump {
    /// Into the loop's buffer, then a bytes copy of what arrived.
    fn read_via_buffer<'py>(&self, py: Python<'py>) -> io::Result<Bound<'py, PyBytes>> {
        let buffer = self.buffer.bind(py);
        // SAFETY: no Python code runs while the slice is in use (recv and
        // PyBytes::new call back into nothing that could resize or free the
        // bytearray); the bytes object is a copy.
        let slice = unsafe { buffer.as_bytes_mut() };
        sys::recv(self.fd, slice).map(|n| PyBytes::new(py, &slice[..n]))
    }

    /// Into a bytes object sized by `FIONREAD`: for a big read the ioctl
    /// costs less than the copy it saves (7 % of an echo server's CPU at
    /// 100 KiB messages).
    fn read_direct<'py>(&self, py: Python<'py>) -> PyResult<io::Result<Bound<'py, PyBytes>>> {
        let cap = self.buffer.bind(py).len();
        // A socket that cannot say (no FIONREAD) is read the usual way.
        let waiting = sys::pending_input(self.fd).map_or(0, |n| n.min(cap));
        if waiting < BULK_READ {
            return Ok(self.read_via_buffer(py));
        }
        // SAFETY: a NULL source asks for an uninitialised bytes object of
        // `waiting` bytes (documented C API); it is filled below before any
        // Python code can see it, and owned (or the error fetched) at once.
        let bytes = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyBytes_FromStringAndSize(std::ptr::null(), waiting as ffi::Py_ssize_t),
            )?
            .cast_into_unchecked::<PyBytes>()
        };
        // SAFETY: the object is a fresh bytes of `waiting` bytes that no one
        // else refers to yet; recv writes at most that many.
        let dst = unsafe {
            std::slice::from_raw_parts_mut(
                ffi::PyBytes_AsString(bytes.as_ptr()).cast::<u8>(),
                waiting,
            )
        };
        Ok(match sys::recv(self.fd, dst) {
            // Only more can arrive after FIONREAD, so this is the rule.
            Ok(n) if n == waiting => Ok(bytes),
            Ok(n) => Ok(PyBytes::new(py, &dst[..n])),
            Err(e) => Err(e),
        })
    }
}

#[pymethods]
impl ReadPump {
    #[new]
    fn new(
        fd: RawFd,
        transport: Py<PyAny>,
        buffer: Py<PyByteArray>,
        data_received: Py<PyAny>,
    ) -> Self {
        ReadPump {
            fd,
            transport,
            buffer,
            data_received,
            bulk: AtomicBool::new(false),
        }
    }

    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let read = if self.bulk.load(Ordering::Relaxed) {
            self.read_direct(py)?
        } else {
            self.read_via_buffer(py)
        };
        if let Ok(data) = &read {
            let len = data.as_bytes().len();
            self.bulk.store(len >= BULK_READ, Ordering::Relaxed);
        }
        let transport = self.transport.bind(py);
        let data = match read {
            Ok(data) => data,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => {
                let exc = os_error(&e).into_value(py);
                transport.call_method1(
                    intern!(py, "_fatal_error"),
                    (exc, "Fatal read error on socket transport"),
                )?;
                return Ok(());
            }
        };
        if data.as_bytes().is_empty() {
            transport.call_method0(intern!(py, "_on_eof"))?;
            return Ok(());
        }
        match self.data_received.bind(py).call1((data,)) {
            Ok(_) => Ok(()),
            Err(err)
                if err.is_instance_of::<PySystemExit>(py)
                    || err.is_instance_of::<PyKeyboardInterrupt>(py) =>
            {
                Err(err)
            }
            Err(err) => {
                transport.call_method1(
                    intern!(py, "_fatal_error"),
                    (
                        err.into_value(py),
                        "Fatal error: protocol.data_received() call failed.",
                    ),
                )?;
                Ok(())
            }
        }
    }

    /// The pump and its transport refer to each other (the transport keeps
    /// it as its reader): the collector must see the cycle.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.transport)?;
        visit.call(&self.buffer)?;
        visit.call(&self.data_received)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let target = self
            .data_received
            .bind(py)
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_default();
        format!("<ReadPump fd={} to {target}>", self.fd)
    }
}

/// The stream transport's `write` (an instance attribute shadowing the
/// class's Python method) while `direct` is on: nothing buffered, no EOF
/// written, no sendfile waiting, the connection not lost. Then a write is
/// one `send(2)`; a partial send hands the rest to the transport's
/// `_write_rest`, and with `direct` off every write goes to the Python
/// `write`, which the transport keeps `direct` in step with.
#[pyclass(frozen, module = "ferroloop._native")]
pub struct WritePump {
    fd: RawFd,
    transport: Py<PyAny>,
    /// The class's Python `write`, called as `write(transport, data)`.
    slow: Py<PyAny>,
    direct: AtomicBool,
}

#[pymethods]
impl WritePump {
    #[new]
    fn new(fd: RawFd, transport: Py<PyAny>, slow: Py<PyAny>) -> Self {
        WritePump {
            fd,
            transport,
            slow,
            direct: AtomicBool::new(true),
        }
    }

    fn __call__(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        if !self.direct.load(Ordering::Relaxed) {
            return self.call_slow(py, data);
        }
        let bytearray;
        let bytes: &[u8] = if let Ok(b) = data.cast::<PyBytes>() {
            b.as_bytes()
        } else if let Ok(b) = data.cast::<PyByteArray>() {
            bytearray = b;
            // SAFETY: no Python code runs while the slice is in use.
            unsafe { bytearray.as_bytes() }
        } else {
            // memoryview and the rest: the Python path checks and converts.
            return self.call_slow(py, data);
        };
        if bytes.is_empty() {
            return Ok(());
        }
        let sent = sys::send(self.fd, bytes).map(|n| (n, bytes.len()));
        match sent {
            Ok((n, len)) if n == len => Ok(()),
            Ok((n, _)) => self.rest(py, data, n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.rest(py, data, 0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => self.rest(py, data, 0),
            Err(e) => {
                let exc = os_error(&e).into_value(py);
                self.transport.bind(py).call_method1(
                    intern!(py, "_fatal_error"),
                    (exc, "Fatal write error on socket transport"),
                )?;
                Ok(())
            }
        }
    }

    /// Whether writes may go straight to the socket (the transport's call).
    fn set_direct(&self, direct: bool) {
        self.direct.store(direct, Ordering::Relaxed);
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.transport)?;
        visit.call(&self.slow)
    }

    fn __repr__(&self) -> String {
        format!(
            "<WritePump fd={} direct={}>",
            self.fd,
            self.direct.load(Ordering::Relaxed)
        )
    }
}

impl WritePump {
    fn call_slow(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.slow
            .bind(py)
            .call1((self.transport.bind(py), data))
            .map(drop)
    }

    fn rest(&self, py: Python<'_>, data: &Bound<'_, PyAny>, sent: usize) -> PyResult<()> {
        self.transport
            .bind(py)
            .call_method1(intern!(py, "_write_rest"), (data, sent))
            .map(drop)
    }
}
