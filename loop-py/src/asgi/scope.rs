//! The ASGI HTTP connection scope and the messages `receive()` returns,
//! built from the parsed head with interned keys.

use loop_http::{RequestHead, Version};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

/// The ASGI HTTP spec version implemented (`send()` raising `OSError` after
/// a disconnect is 2.4).
pub const SPEC_VERSION: &str = "2.4";

pub fn http_version(py: Python<'_>, version: Version) -> &Bound<'_, PyString> {
    match version {
        Version::Http10 => intern!(py, "1.0"),
        Version::Http11 => intern!(py, "1.1"),
    }
}

/// Common methods as interned strings; others decoded per request.
fn method<'py>(py: Python<'py>, raw: &[u8]) -> Bound<'py, PyString> {
    let s = match raw {
        b"GET" => intern!(py, "GET"),
        b"POST" => intern!(py, "POST"),
        b"PUT" => intern!(py, "PUT"),
        b"DELETE" => intern!(py, "DELETE"),
        b"HEAD" => intern!(py, "HEAD"),
        b"PATCH" => intern!(py, "PATCH"),
        b"OPTIONS" => intern!(py, "OPTIONS"),
        other => return PyString::new(py, &String::from_utf8_lossy(other)),
    };
    s.clone()
}

/// `%XX` sequences decoded to bytes, then UTF-8 with replacement, as
/// `urllib.parse.unquote` does.
pub fn decode_path(raw: &[u8]) -> String {
    if !raw.contains(&b'%') {
        return String::from_utf8_lossy(raw).into_owned();
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' && i + 2 < raw.len() {
            if let (Some(h), Some(l)) = (hex(raw[i + 1]), hex(raw[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// A connection's scope template: every key in the order the scope has
/// them, with the values all of the connection's requests share (`type`,
/// `http_version` 1.1, `server`, the peer as `client`, `scheme`,
/// `root_path`; `scheme` is `https` on a TLS connection) and None for the
/// rest. A request's scope is a copy with
/// about half the keys to set, where building it key by key cost ~1.5k
/// instructions more per request (callgrind).
pub fn connection_base<'py>(
    py: Python<'py>,
    server: &Bound<'py, PyAny>,
    client: &Bound<'py, PyAny>,
    root_path: &str,
    with_state: bool,
    secure: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let none = py.None();
    let base = PyDict::new(py);
    base.set_item(intern!(py, "type"), intern!(py, "http"))?;
    base.set_item(intern!(py, "asgi"), &none)?;
    base.set_item(intern!(py, "http_version"), intern!(py, "1.1"))?;
    base.set_item(intern!(py, "server"), server)?;
    base.set_item(intern!(py, "client"), client)?;
    base.set_item(intern!(py, "scheme"), base_scheme(py, secure))?;
    base.set_item(intern!(py, "method"), &none)?;
    base.set_item(intern!(py, "root_path"), root_path)?;
    for key in [
        intern!(py, "path"),
        intern!(py, "raw_path"),
        intern!(py, "query_string"),
        intern!(py, "headers"),
    ] {
        base.set_item(key, &none)?;
    }
    if with_state {
        base.set_item(intern!(py, "state"), &none)?;
    }
    base.set_item(intern!(py, "extensions"), &none)?;
    Ok(base)
}

/// What differs between the requests of a connection.
pub struct ScopeParts<'a> {
    pub head: &'a RequestHead,
    /// The client a trusted proxy named, replacing the peer.
    pub client: Option<&'a Bound<'a, PyAny>>,
    pub scheme: &'static str,
    pub root_path: &'a str,
    /// The lifespan state (its shallow copy goes in the scope); the base
    /// must have been made `with_state` exactly when this is Some.
    pub state: Option<&'a Bound<'a, PyDict>>,
    /// A TLS connection (its base was made `secure`).
    pub secure: bool,
    /// Its [`tls_extension`], copied into the scope's extensions.
    pub tls: Option<&'a Bound<'a, PyDict>>,
}

fn base_scheme(py: Python<'_>, secure: bool) -> &Bound<'_, PyString> {
    if secure {
        intern!(py, "https")
    } else {
        intern!(py, "http")
    }
}

/// The ASGI TLS extension of a connection (`scope["extensions"]["tls"]`),
/// made once from what its handshake negotiated.
///
/// `client_cert_error` is always None: rustls fails the handshake of a
/// client certificate that does not verify, so no established connection
/// has one that failed.
pub fn tls_extension<'py>(
    py: Python<'py>,
    info: &loop_tls::TlsInfo,
) -> PyResult<Bound<'py, PyDict>> {
    let tls = PyDict::new(py);
    tls.set_item(intern!(py, "server_cert"), &info.server_cert)?;
    tls.set_item(
        intern!(py, "client_cert_chain"),
        PyList::new(py, &info.client_cert_chain)?,
    )?;
    tls.set_item(intern!(py, "client_cert_name"), &info.client_cert_name)?;
    tls.set_item(intern!(py, "client_cert_error"), py.None())?;
    tls.set_item(intern!(py, "tls_version"), info.tls_version)?;
    tls.set_item(intern!(py, "cipher_suite"), info.cipher_suite)?;
    Ok(tls)
}

fn asgi_versions(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    static ASGI: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
    ASGI.get_or_try_init(py, || {
        let asgi = PyDict::new(py);
        asgi.set_item(intern!(py, "version"), intern!(py, "3.0"))?;
        asgi.set_item(intern!(py, "spec_version"), intern!(py, SPEC_VERSION))?;
        Ok::<_, PyErr>(asgi.unbind())
    })
    .map(|t| t.bind(py))
}

/// The extensions the server supports, copied into each scope: the dict
/// is fresh per request (middleware may add to it), the values are one
/// shared empty dict, as none of them takes parameters (filling a fresh
/// dict per request cost ~200 instructions per key, callgrind).
fn extensions(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    static EXTENSIONS: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
    EXTENSIONS
        .get_or_try_init(py, || {
            let extensions = PyDict::new(py);
            let empty = PyDict::new(py);
            for name in [
                "http.response.trailers",
                "http.response.pathsend",
                "http.response.zerocopysend",
            ] {
                extensions.set_item(name, &empty)?;
            }
            Ok::<_, PyErr>(extensions.unbind())
        })
        .map(|t| t.bind(py))
}

/// A request's scope: a copy of the connection's base with the request's
/// values (every dict in it fresh, so an app changing one changes no other
/// request's; only the extensions' empty parameter dicts are shared).
pub fn build<'py>(
    py: Python<'py>,
    base: &Bound<'py, PyDict>,
    parts: &ScopeParts<'_>,
) -> PyResult<Bound<'py, PyDict>> {
    let head = parts.head;
    let scope = base.copy()?;
    scope.set_item(intern!(py, "asgi"), asgi_versions(py)?.copy()?)?;
    if head.version != Version::Http11 {
        scope.set_item(intern!(py, "http_version"), http_version(py, head.version))?;
    }
    // The base holds the peer and "http": only a trusted proxy's word
    // changes them.
    if let Some(client) = parts.client {
        scope.set_item(intern!(py, "client"), client)?;
    }
    let scheme = match parts.scheme {
        // The base's already.
        "http" if !parts.secure => None,
        "https" if parts.secure => None,
        "http" => Some(intern!(py, "http")),
        "https" => Some(intern!(py, "https")),
        "ws" => Some(intern!(py, "ws")),
        "wss" => Some(intern!(py, "wss")),
        other => Some(&PyString::new(py, other)),
    };
    if let Some(scheme) = scheme {
        scope.set_item(intern!(py, "scheme"), scheme)?;
    }
    scope.set_item(intern!(py, "method"), method(py, head.method()))?;
    let raw_path = head.path();
    let root = parts.root_path;
    if root.is_empty() {
        scope.set_item(intern!(py, "path"), decode_path(raw_path))?;
        scope.set_item(intern!(py, "raw_path"), PyBytes::new(py, raw_path))?;
    } else {
        let mut path = String::with_capacity(root.len() + raw_path.len());
        path.push_str(root);
        path.push_str(&decode_path(raw_path));
        scope.set_item(intern!(py, "path"), path)?;
        let mut full = Vec::with_capacity(root.len() + raw_path.len());
        full.extend_from_slice(root.as_bytes());
        full.extend_from_slice(raw_path);
        scope.set_item(intern!(py, "raw_path"), PyBytes::new(py, &full))?;
    }
    scope.set_item(intern!(py, "query_string"), PyBytes::new(py, head.query()))?;
    let headers = PyList::empty(py);
    for (name, value) in head.headers() {
        headers.append(PyTuple::new(
            py,
            [PyBytes::new(py, name), PyBytes::new(py, value)],
        )?)?;
    }
    scope.set_item(intern!(py, "headers"), headers)?;
    if let Some(state) = parts.state {
        scope.set_item(intern!(py, "state"), state.copy()?)?;
    }
    let extensions = extensions(py)?.copy()?;
    if let Some(tls) = parts.tls {
        extensions.set_item(intern!(py, "tls"), tls.copy()?)?;
    }
    scope.set_item(intern!(py, "extensions"), extensions)?;
    Ok(scope)
}

/// The ASGI WebSocket spec version implemented (2.5: `reason` in
/// `websocket.disconnect`).
pub const WS_SPEC_VERSION: &str = "2.5";

/// Turn a request's scope (as [`build`] made it) into a `websocket`
/// scope: no `method`, `ws`/`wss`, the offered subprotocols, the WebSocket
/// extensions.
pub fn to_websocket(
    py: Python<'_>,
    scope: &Bound<'_, PyDict>,
    subprotocols: &[String],
) -> PyResult<()> {
    scope.set_item(intern!(py, "type"), intern!(py, "websocket"))?;
    scope.del_item(intern!(py, "method"))?;
    let secure = match scope.get_item(intern!(py, "scheme"))? {
        Some(s) => matches!(s.extract::<&str>()?, "https" | "wss"),
        None => false,
    };
    let scheme = if secure {
        intern!(py, "wss")
    } else {
        intern!(py, "ws")
    };
    scope.set_item(intern!(py, "scheme"), scheme)?;
    let asgi = PyDict::new(py);
    asgi.set_item(intern!(py, "version"), intern!(py, "3.0"))?;
    asgi.set_item(intern!(py, "spec_version"), intern!(py, WS_SPEC_VERSION))?;
    scope.set_item(intern!(py, "asgi"), asgi)?;
    scope.set_item(intern!(py, "subprotocols"), PyList::new(py, subprotocols)?)?;
    // The connection's TLS extension stays; the HTTP ones go.
    let tls = match scope.get_item(intern!(py, "extensions"))? {
        Some(ext) => ext.cast::<PyDict>()?.get_item(intern!(py, "tls"))?,
        None => None,
    };
    let extensions = PyDict::new(py);
    extensions.set_item("websocket.http.response", PyDict::new(py))?;
    if let Some(tls) = tls {
        extensions.set_item(intern!(py, "tls"), tls)?;
    }
    scope.set_item(intern!(py, "extensions"), extensions)?;
    Ok(())
}

/// `{"type": "http.request", "body": …, "more_body": …}`
pub fn request_message<'py>(
    py: Python<'py>,
    body: &[u8],
    more: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let msg = PyDict::new(py);
    msg.set_item(intern!(py, "type"), intern!(py, "http.request"))?;
    msg.set_item(intern!(py, "body"), PyBytes::new(py, body))?;
    msg.set_item(intern!(py, "more_body"), more)?;
    Ok(msg)
}

pub fn disconnect_message(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let msg = PyDict::new(py);
    msg.set_item(intern!(py, "type"), intern!(py, "http.disconnect"))?;
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::decode_path;

    #[test]
    fn percent_decoding() {
        assert_eq!(decode_path(b"/a%20b"), "/a b");
        assert_eq!(decode_path(b"/caf%C3%A9"), "/café");
        assert_eq!(decode_path(b"/100%"), "/100%");
        assert_eq!(decode_path(b"/%zz%4"), "/%zz%4");
        assert_eq!(decode_path(b"/%ff"), "/\u{fffd}");
        assert_eq!(decode_path(b"/%2F"), "//");
    }
}
