fn main() {
    // Exposes Py_3_12, Py_3_13, Py_GIL_DISABLED, … cfgs for version-specific code.
    pyo3_build_config::use_pyo3_cfgs();
}
