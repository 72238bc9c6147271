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

extern "C" {
    /// CPython's in-place resize of a `bytes` no one else refers to (public
    /// in `cpython/bytesobject.h` on every supported version; pyo3 does not
    /// export its binding). On failure the object is released and set to
    /// NULL, with an exception set.
    fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, size: ffi::Py_ssize_t) -> std::ffi::c_int;
}

/// A new `bytes` whose contents are written in Rust before any Python code
/// sees it: a read straight into the object handed to the protocol.
pub(crate) struct UninitBytes<'py> {
    /// Owned; only this struct refers to it until `finish`.
    obj: Bound<'py, PyBytes>,
    len: usize,
}

impl<'py> UninitBytes<'py> {
    pub(crate) fn new(py: Python<'py>, len: usize) -> PyResult<Self> {
        let size = ffi::Py_ssize_t::try_from(len)
            .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("read size too large"))?;
        // SAFETY: a NULL source asks for an uninitialised bytes object of
        // `size` bytes (documented C API); it is owned (or the error fetched)
        // at once, and filled before Python code can see it (`finish`).
        let obj = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyBytes_FromStringAndSize(std::ptr::null(), size),
            )?
            .cast_into_unchecked::<PyBytes>()
        };
        Ok(UninitBytes { obj, len })
    }

    /// The object's bytes, to be written.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: a fresh bytes object of `len` bytes that nothing else
        // refers to (`obj` is the only reference until `finish`).
        unsafe {
            std::slice::from_raw_parts_mut(
                ffi::PyBytes_AsString(self.obj.as_ptr()).cast::<u8>(),
                self.len,
            )
        }
    }

    /// The object with its first `n` bytes written: shrunk in place
    /// (`realloc`, no copy) when `n` is short of its length.
    pub(crate) fn finish(self, n: usize) -> PyResult<Bound<'py, PyBytes>> {
        if n >= self.len {
            return Ok(self.obj);
        }
        let py = self.obj.py();
        let mut ptr = self.obj.into_ptr();
        // SAFETY: `ptr` is the only reference to a bytes object (so resizing
        // it is allowed), its ownership moved here by `into_ptr`; `n` fits
        // (below the original length). On success `ptr` is the (maybe moved)
        // owned object, on failure it was released and is NULL.
        if unsafe { _PyBytes_Resize(&mut ptr, n as ffi::Py_ssize_t) } < 0 {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: an owned, non-NULL bytes object (the resize succeeded).
        Ok(unsafe { Bound::from_owned_ptr(py, ptr).cast_into_unchecked::<PyBytes>() })
    }
}
