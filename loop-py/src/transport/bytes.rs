//! Bytes-like objects seen as byte slices: `bytes` and `bytearray`
//! directly, anything else through the buffer protocol as plain bytes
//! (`PyBUF_SIMPLE`: no item format, so an `array('i')` or a cast memoryview
//! sends its bytes, as `socket.send` does).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

/// A contiguous buffer export, released on drop.
pub(crate) struct ByteView(Box<ffi::Py_buffer>);

impl ByteView {
    /// Export `obj`'s buffer (writable ones only, when `writable`).
    pub(crate) fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Self> {
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

    pub(crate) fn len(&self) -> usize {
        usize::try_from(self.0.len).unwrap_or(0)
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        if self.len() == 0 {
            return &[];
        }
        // SAFETY: the export is alive and unresizable while `self` lives, and
        // `buf` points at `len` bytes.
        unsafe { std::slice::from_raw_parts(self.0.buf.cast::<u8>(), self.len()) }
    }

    /// The bytes, writable: only for a view made with `writable`.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.len() == 0 {
            return &mut [];
        }
        // SAFETY: as `as_slice`, and the export was requested writable
        // (PyBUF_WRITABLE), so writing through it is allowed.
        unsafe { std::slice::from_raw_parts_mut(self.0.buf.cast::<u8>(), self.len()) }
    }
}

impl Drop for ByteView {
    fn drop(&mut self) {
        // SAFETY: the view was filled by a successful PyObject_GetBuffer and
        // is released once; ByteView never leaves the GIL-holding code that
        // made it.
        unsafe { ffi::PyBuffer_Release(&mut *self.0) }
    }
}

/// A bytes-like argument's bytes, borrowed for the duration of a call.
pub(crate) enum Bytes<'a, 'py> {
    Immutable(&'a Bound<'py, PyBytes>),
    Array(&'a Bound<'py, PyByteArray>),
    View(ByteView),
}

impl<'a, 'py> Bytes<'a, 'py> {
    /// `obj` as bytes, or `None` when it is not bytes-like.
    pub(crate) fn of(obj: &'a Bound<'py, PyAny>) -> Option<Self> {
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Some(Bytes::Immutable(b));
        }
        if let Ok(b) = obj.cast::<PyByteArray>() {
            return Some(Bytes::Array(b));
        }
        ByteView::get(obj, false).ok().map(Bytes::View)
    }

    /// The bytes. No Python code may run while the slice is in use (a
    /// `bytearray` could be resized under it).
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Immutable(b) => b.as_bytes(),
            // SAFETY: the caller runs no Python code while the slice lives
            // (this type's contract), so the bytearray is not resized.
            Bytes::Array(b) => unsafe { b.as_bytes() },
            Bytes::View(v) => v.as_slice(),
        }
    }
}
