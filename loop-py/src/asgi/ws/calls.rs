//! The `receive` and `send` callables a session's app gets.

use super::session::{self, WsSession};
use pyo3::prelude::*;

/// The `receive` callable of a `websocket` session.
#[pyclass(frozen, module = "ferroloop._native")]
pub struct WsReceive {
    session: Py<WsSession>,
}

impl WsReceive {
    pub fn new(session: Py<WsSession>) -> Self {
        WsReceive { session }
    }
}

#[pymethods]
impl WsReceive {
    fn __call__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        session::receive(self.session.bind(py))
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.session)
    }
}

/// The `send` callable of a `websocket` session.
#[pyclass(frozen, module = "ferroloop._native")]
pub struct WsSend {
    session: Py<WsSession>,
}

impl WsSend {
    pub fn new(session: Py<WsSession>) -> Self {
        WsSend { session }
    }
}

#[pymethods]
impl WsSend {
    fn __call__<'py>(&self, message: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        session::send(self.session.bind(message.py()), message)
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        visit.call(&self.session)
    }
}
