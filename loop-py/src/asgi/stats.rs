//! `Server.stats()` and `Server.tls_stats()` as Python dicts: the driver's
//! report (`loop_server::counters::Stat`, a tree of named counts) rendered
//! as nested dicts.

use loop_server::counters::Stat;
use pyo3::prelude::*;
use pyo3::types::PyDict;

pub(super) fn to_dict<'py>(
    py: Python<'py>,
    report: &[(String, Stat)],
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, stat) in report {
        match stat {
            Stat::Count(n) => dict.set_item(name, *n)?,
            Stat::Group(inner) => dict.set_item(name, to_dict(py, inner)?)?,
        }
    }
    Ok(dict)
}
