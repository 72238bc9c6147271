//! A request's scope: the connection's template (made at its first
//! request, when the lifespan state is known, and kept in the driver's
//! per-connection state), the client and scheme a trusted proxy names, the
//! TLS extension of a TLS connection.

use crate::asgi::bridge::HttpServer;
use crate::asgi::scope;
use loop_http::RequestHead;
use loop_server::proxy::{self, Trust};
use loop_server::{Addr, ConnId};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::net::IpAddr;

/// An address as ASGI's `client`/`server` tuple.
fn addr_tuple(py: Python<'_>, addr: &Option<Addr>, is_local: bool) -> PyResult<Py<PyAny>> {
    Ok(match addr {
        Some(Addr::Inet(ip, port)) => {
            let ip = match ip {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(*ip, IpAddr::V4),
                v4 => *v4,
            };
            (ip.to_string(), *port)
                .into_pyobject(py)?
                .into_any()
                .unbind()
        }
        // ASGI: a Unix socket server is `(path, None)`; its clients have no
        // address.
        Some(Addr::Unix(path)) if is_local => (path.as_str(), py.None())
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        _ => py.None(),
    })
}

/// The scope of `head`, a request of connection `conn`.
pub(in crate::asgi) fn scope<'py>(
    server: &Bound<'py, HttpServer>,
    conn: ConnId,
    head: &RequestHead,
) -> PyResult<Bound<'py, PyDict>> {
    let py = server.py();
    let (base, tls_ext, settings, addresses, tls_info, secure, state) = {
        let mut me = server.borrow_mut();
        let state = me.state.as_ref().map(|s| s.clone_ref(py));
        let settings = me.driver.settings().clone();
        let addresses = me.driver.addresses(conn);
        let secure = me.driver.is_secure(conn);
        let app = me.driver.conn_app(conn);
        let (base, tls_ext) = match app {
            Some(app) => (
                app.scope_base.as_ref().map(|b| b.clone_ref(py)),
                app.tls_extension.as_ref().map(|t| t.clone_ref(py)),
            ),
            None => (None, None),
        };
        // A request comes after the handshake: what it negotiated is known.
        let tls_info = (secure && tls_ext.is_none())
            .then(|| me.driver.tls_info(conn))
            .flatten();
        (base, tls_ext, settings, addresses, tls_info, secure, state)
    };
    let (peer, local) = addresses.unwrap_or((None, None));
    let tls = match (tls_ext, tls_info) {
        (Some(ext), _) => Some(ext.into_bound(py)),
        (None, Some(info)) => {
            let ext = scope::tls_extension(py, &info)?;
            if let Some(app) = server.borrow_mut().driver.conn_app(conn) {
                app.tls_extension = Some(ext.clone().unbind());
            }
            Some(ext)
        }
        (None, None) => None,
    };
    let state = state.map(|s| s.into_bound(py));
    let base = match base {
        Some(base) => base.into_bound(py),
        None => {
            let base = scope::connection_base(
                py,
                addr_tuple(py, &local, true)?.bind(py),
                addr_tuple(py, &peer, false)?.bind(py),
                &settings.root_path,
                state.is_some(),
                secure,
            )?;
            if let Some(app) = server.borrow_mut().driver.conn_app(conn) {
                app.scope_base = Some(base.clone().unbind());
            }
            base
        }
    };
    let peer_ip = peer.as_ref().and_then(Addr::ip);
    let (client, scheme) = client_and_scheme(py, settings.proxy.as_ref(), peer_ip, head, secure)?;
    scope::build(
        py,
        &base,
        &scope::ScopeParts {
            head,
            client: client.as_ref(),
            scheme,
            root_path: &settings.root_path,
            state: state.as_ref(),
            secure,
            tls: tls.as_ref(),
        },
    )
}

/// What a trusted proxy says of the client (None: the peer) and the scheme.
fn client_and_scheme<'py>(
    py: Python<'py>,
    trust: Option<&Trust>,
    peer_ip: Option<IpAddr>,
    head: &RequestHead,
    secure: bool,
) -> PyResult<(Option<Bound<'py, PyAny>>, &'static str)> {
    let own = if secure { "https" } else { "http" };
    let Some(trust) = trust else {
        return Ok((None, own));
    };
    let trusted = match peer_ip {
        Some(ip) => trust.trusts(ip),
        // A Unix-socket peer is the local proxy itself.
        None => true,
    };
    if !trusted {
        return Ok((None, own));
    }
    let fwd = proxy::resolve(trust, head.headers());
    let scheme = fwd.scheme.unwrap_or(own);
    match fwd.client {
        Some(host) => Ok((Some((host, 0u16).into_pyobject(py)?.into_any()), scheme)),
        None => Ok((None, scheme)),
    }
}
