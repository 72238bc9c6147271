//! Socket reads and writes for the transports, with the GIL kept.
//!
//! Python's `socket.send`/`recv_into` release and re-take the GIL around
//! every call. On a non-blocking socket the syscall never waits, so the
//! round trip through the GIL is pure overhead (two per echoed message);
//! these do the same syscalls without it. Errors are the `OSError`
//! subclasses the socket methods raise (`BlockingIOError`, …).

use crate::errors::os_error;
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};
use std::os::fd::RawFd;

fn send_slice(fd: RawFd, data: &[u8]) -> PyResult<usize> {
    crate::net::send(fd, data).map_err(|e| os_error(&e))
}

/// `sock.send(data)` on fd `fd`: the bytes sent.
#[pyfunction]
pub fn sock_send(fd: RawFd, data: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(bytes) = data.cast::<PyBytes>() {
        return send_slice(fd, bytes.as_bytes());
    }
    let buffer = PyBuffer::<u8>::get(data)?;
    if !buffer.is_c_contiguous() {
        return Err(pyo3::exceptions::PyBufferError::new_err(
            "a contiguous buffer is required",
        ));
    }
    // SAFETY: the buffer is C-contiguous and stays acquired (and so alive
    // and unresized) while `buffer` lives; we only read it.
    let slice =
        unsafe { std::slice::from_raw_parts(buffer.buf_ptr() as *const u8, buffer.len_bytes()) };
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
    let view = PyBuffer::<u8>::get(buffer)?;
    if view.readonly() || !view.is_c_contiguous() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "a writable contiguous buffer is required",
        ));
    }
    recv_slice(fd, view.buf_ptr() as *mut u8, view.len_bytes())
}

fn recv_slice(fd: RawFd, ptr: *mut u8, len: usize) -> PyResult<usize> {
    // SAFETY: the caller passes a live, writable region of `len` bytes that
    // stays valid (buffer export or GIL held) for the duration of the call.
    let buf = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
    crate::net::recv(fd, buf).map_err(|e| os_error(&e))
}
