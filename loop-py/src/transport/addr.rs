//! Socket addresses between the kernel's form and Python's, as the
//! `socket` module writes them: `(host, port)` for IPv4, `(host, port,
//! flowinfo, scope_id)` for IPv6, a `str` path or abstract `bytes` for Unix
//! sockets.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};
use socket2::SockAddr;
use std::ffi::OsStr;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::unix::ffi::OsStrExt;

/// The address families the datagram transport speaks.
pub(crate) fn supported(family: i32) -> bool {
    matches!(family, libc::AF_INET | libc::AF_INET6 | libc::AF_UNIX)
}

/// `addr` as Python writes it (`None` for an empty address: an unnamed
/// peer).
pub(crate) fn to_python<'py>(py: Python<'py>, addr: &SockAddr) -> PyResult<Bound<'py, PyAny>> {
    if addr.len() == 0 {
        return Ok(py.None().into_bound(py));
    }
    if let Some(inet) = addr.as_socket() {
        return Ok(match inet {
            SocketAddr::V4(v4) => (v4.ip().to_string(), v4.port())
                .into_pyobject(py)?
                .into_any(),
            SocketAddr::V6(v6) => (v6.ip().to_string(), v6.port(), v6.flowinfo(), v6.scope_id())
                .into_pyobject(py)?
                .into_any(),
        });
    }
    if addr.is_unix() {
        if let Some(name) = addr.as_abstract_namespace() {
            let mut raw = vec![0u8];
            raw.extend_from_slice(name);
            return Ok(PyBytes::new(py, &raw).into_any());
        }
        return Ok(match addr.as_pathname() {
            Some(path) => path.as_os_str().into_pyobject(py)?.into_any(),
            None => PyString::new(py, "").into_any(),
        });
    }
    Err(PyValueError::new_err("unsupported address family"))
}

/// A Python address for a socket of `family`: `Ok(None)` when it names a
/// host that must be resolved first (the caller resolves it as `sendto`
/// would).
pub(crate) fn from_python(family: i32, addr: &Bound<'_, PyAny>) -> PyResult<Option<SockAddr>> {
    match family {
        libc::AF_UNIX => {
            let raw: Vec<u8> = if let Ok(s) = addr.cast::<PyString>() {
                let path: std::path::PathBuf = s.extract()?;
                path.into_os_string().into_encoded_bytes()
            } else if let Ok(b) = addr.cast::<PyBytes>() {
                b.as_bytes().to_vec()
            } else {
                return Err(PyTypeError::new_err(format!(
                    "a bytes-like object or str is required, not {}",
                    addr.get_type().name()?
                )));
            };
            SockAddr::unix(OsStr::from_bytes(&raw))
                .map(Some)
                .map_err(|e| PyValueError::new_err(e.to_string()))
        }
        libc::AF_INET | libc::AF_INET6 => {
            let tuple = addr.cast::<PyTuple>().map_err(|_| {
                let name = if family == libc::AF_INET {
                    "AF_INET"
                } else {
                    "AF_INET6"
                };
                let kind = addr
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                PyTypeError::new_err(format!("{name} address must be a tuple, not {kind}"))
            })?;
            let host = tuple.get_item(0)?;
            let Ok(host) = host.extract::<String>() else {
                return Ok(None);
            };
            let port: u16 = tuple.get_item(1)?.extract()?;
            if family == libc::AF_INET {
                let ip = match host.as_str() {
                    "" => Ipv4Addr::UNSPECIFIED,
                    "<broadcast>" => Ipv4Addr::BROADCAST,
                    other => match other.parse::<Ipv4Addr>() {
                        Ok(ip) => ip,
                        Err(_) => return Ok(None),
                    },
                };
                return Ok(Some(SockAddr::from(SocketAddrV4::new(ip, port))));
            }
            let Ok(ip) = host.parse::<IpAddr>() else {
                return Ok(None);
            };
            let ip = match ip {
                IpAddr::V6(v6) => v6,
                IpAddr::V4(v4) => v4.to_ipv6_mapped(),
            };
            let flowinfo: u32 = match tuple.len() {
                n if n > 2 => tuple.get_item(2)?.extract()?,
                _ => 0,
            };
            let scope: u32 = match tuple.len() {
                n if n > 3 => tuple.get_item(3)?.extract()?,
                _ => 0,
            };
            Ok(Some(SockAddr::from(SocketAddrV6::new(
                ip, port, flowinfo, scope,
            ))))
        }
        _ => Err(PyValueError::new_err("unsupported address family")),
    }
}
