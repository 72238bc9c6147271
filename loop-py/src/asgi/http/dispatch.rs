//! A request's start and end as the app sees them: its scope, the app's
//! call and its `AppTask`, and what the app's return means for the
//! connection (a 500 for a response never started, a cut-short response).

use super::connection::HttpConnection;
use super::exchange::{Receive, Send};
use crate::asgi::app_task::AppTask;
use crate::asgi::proxy::{self, Trust};
use crate::asgi::scope;
use crate::asgi::shared::ServerShared;
use loop_http::RequestHead;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use socket2::SockAddr;
use std::net::IpAddr;

/// A socket address as the scope shows it: TCP (v4/v6) or a Unix path
/// (empty when unnamed; an abstract name keeps its leading NUL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::asgi) enum Addr {
    Inet(IpAddr, u16),
    Unix(String),
}

impl Addr {
    pub fn of(addr: &SockAddr) -> Option<Addr> {
        if let Some(inet) = addr.as_socket() {
            return Some(Addr::Inet(inet.ip(), inet.port()));
        }
        if !addr.is_unix() {
            return None;
        }
        let text = if let Some(path) = addr.as_pathname() {
            path.to_string_lossy().into_owned()
        } else if let Some(name) = addr.as_abstract_namespace() {
            let mut text = String::from('\0');
            text.push_str(&String::from_utf8_lossy(name));
            text
        } else {
            String::new()
        };
        Some(Addr::Unix(text))
    }
}

/// The Python side of the current exchange: what the app waits on and the
/// task that runs it. Replaced at each request.
#[derive(Default)]
pub(in crate::asgi) struct Waiters {
    pub receive: Option<Py<PyAny>>,
    pub send: Option<Py<PyAny>>,
    pub task: Option<Py<PyAny>>,
}

/// An address as ASGI's `client`/`server` tuple.
pub(in crate::asgi) fn addr_tuple(
    py: Python<'_>,
    addr: &Option<Addr>,
    is_local: bool,
) -> PyResult<Py<PyAny>> {
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

/// A complete head: run the app for it (or answer 503 over the limit).
pub(in crate::asgi) fn start_request(
    conn: &Bound<'_, HttpConnection>,
    head: RequestHead,
) -> PyResult<()> {
    let py = conn.py();
    let server = conn.borrow().shared.clone_ref(py);
    let server = server.bind(py);
    ServerShared::count_request(server, head.method())?;
    let over_limit = {
        let srv = server.borrow();
        srv.settings
            .limit_concurrency
            .is_some_and(|limit| srv.live_connections() > limit || srv.tasks >= limit)
    };
    if over_limit {
        return HttpConnection::fail_for(conn, 503, Some(&head));
    }
    if super::upgrade::is_session(&conn.borrow(), &head) {
        return super::upgrade::start(conn, server, head);
    }
    // Built before the state machine takes the head, with no borrow held:
    // making Python objects can run a collector and any `__del__`.
    let scope = match request_scope(conn, server, &head) {
        Ok(scope) => scope,
        Err(err) => {
            ServerShared::log_app_error(server, &err)?;
            return HttpConnection::fail_for(conn, 500, Some(&head));
        }
    };
    let (id, previous) = {
        let mut me = conn.borrow_mut();
        if me.settings.access_timed {
            me.request_started = loop_core::clock::monotonic();
        }
        let previous = std::mem::take(&mut me.waiters);
        (me.http.begin_request(head), previous)
    };
    // Dropped unborrowed: a last reference's `__del__` is Python code.
    drop(previous);
    let app = server.borrow().app.clone_ref(py);
    let receive = Bound::new(py, Receive::new(conn.clone().unbind(), id))?;
    let send = Bound::new(py, Send::new(conn.clone().unbind(), id))?;
    let coro = match app.bind(py).call1((scope, receive, send)) {
        Ok(coro) => coro,
        Err(err) => {
            ServerShared::log_app_error(server, &err)?;
            return HttpConnection::fail(conn, 500);
        }
    };
    let event_loop = conn.borrow().event_loop.clone_ref(py);
    let owner = std::sync::Arc::new(super::HttpOwner {
        conn: conn.clone().unbind(),
        exchange: id,
    });
    let fresh_context = conn.borrow().settings.reset_contextvars;
    let task = AppTask::new(py, coro, event_loop, owner, fresh_context)?;
    server.borrow_mut().tasks += 1;
    // The first step runs now; the app may well finish inside it.
    AppTask::first_step(task.bind(py))?;
    let running = !task.borrow(py).is_done();
    let mut me = conn.borrow_mut();
    if running && me.http.current(id).is_some() {
        // Replaces nothing: `waiters` was emptied for this request.
        me.waiters.task = Some(task.into_any());
    }
    Ok(())
}

/// The request's scope, from the connection's base (made at its first
/// request, when the lifespan state is known).
pub(super) fn request_scope<'py>(
    conn: &Bound<'py, HttpConnection>,
    server: &Bound<'py, ServerShared>,
    head: &RequestHead,
) -> PyResult<Bound<'py, PyDict>> {
    let py = conn.py();
    let state = server.borrow().state.as_ref().map(|s| s.bind(py).clone());
    let (base, local, client, peer_ip, settings, tls_state, tls_ext) = {
        let me = conn.borrow();
        (
            me.scope_base.as_ref().map(|b| b.clone_ref(py)),
            me.local.clone_ref(py),
            me.client.clone_ref(py),
            me.peer_ip,
            me.settings.clone(),
            me.tls.clone(),
            me.tls_extension.as_ref().map(|t| t.clone_ref(py)),
        )
    };
    let secure = tls_state.is_some();
    // A request comes after the handshake: what it negotiated is known.
    let tls = match (tls_ext, tls_state.as_ref().and_then(|t| t.info())) {
        (Some(ext), _) => Some(ext.into_bound(py)),
        (None, Some(info)) => {
            let ext = scope::tls_extension(py, info)?;
            conn.borrow_mut().tls_extension = Some(ext.clone().unbind());
            Some(ext)
        }
        (None, None) => None,
    };
    let base = match base {
        Some(base) => base.into_bound(py),
        None => {
            let base = scope::connection_base(
                py,
                local.bind(py),
                client.bind(py),
                &settings.root_path,
                state.is_some(),
                secure,
            )?;
            conn.borrow_mut().scope_base = Some(base.clone().unbind());
            base
        }
    };
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

/// How far the app got with its response.
enum Progress {
    NotStarted,
    Started,
    Complete,
}

/// The app's coroutine of exchange `id` finished: turn a missing or broken
/// response into a 500 or a closed connection, and log app errors.
pub(in crate::asgi) fn app_finished(
    conn: &Bound<'_, HttpConnection>,
    id: u64,
    error: Option<Bound<'_, PyAny>>,
    cancelled: bool,
) -> PyResult<()> {
    let py = conn.py();
    let server = conn.borrow().shared.clone_ref(py);
    let server = server.bind(py);
    {
        let mut srv = server.borrow_mut();
        srv.tasks = srv.tasks.saturating_sub(1);
    }
    let (progress, task, client_gone) = {
        let mut me = conn.borrow_mut();
        let open = !me.http.is_closed();
        let found = me.http.current(id).map(|ex| {
            let progress = if ex.response_complete() {
                Progress::Complete
            } else if ex.response_started() {
                Progress::Started
            } else {
                Progress::NotStarted
            };
            (open && !ex.is_abandoned(), progress)
        });
        let task = if found.is_some() {
            me.waiters.task.take()
        } else {
            None
        };
        // Gone: the connection closed, or this exchange was given up (a
        // later exchange on an open connection means the client is there).
        let client_gone = !open || matches!(found, Some((false, _)));
        (found, task, client_gone)
    };
    // Dropped unborrowed (it may be the last reference to the task).
    drop(task);
    if let Some(exc) = &error {
        // An app that stops because its client left (the server saw it go,
        // or the app's error comes from the server's `ClientDisconnected`)
        // is not an application error.
        ServerShared::app_stopped(server, exc, client_gone)?;
    }
    let Some((open, progress)) = progress else {
        return Ok(());
    };
    // As uvicorn: an app that stops because its client went away is not an
    // error.
    let quiet = error.is_some() || cancelled || !open;
    match progress {
        Progress::Complete => Ok(()),
        Progress::NotStarted => {
            if !quiet {
                ServerShared::log_error(
                    server,
                    "ASGI callable returned without starting response.",
                )?;
            }
            if open {
                HttpConnection::fail(conn, 500)
            } else {
                Ok(())
            }
        }
        Progress::Started => {
            // Its status went out: the access log shows the request.
            if conn.borrow().ws.is_none() {
                HttpConnection::log_access(conn)?;
            }
            if !quiet {
                ServerShared::log_error(
                    server,
                    "ASGI callable returned without completing response.",
                )?;
            }
            conn.borrow_mut()
                .closing_because("the app's response ended before it was complete");
            HttpConnection::lose(conn)
        }
    }
}

/// The app's task of the current exchange, if it still runs.
pub(in crate::asgi) fn running_task(conn: &HttpConnection, py: Python<'_>) -> Option<Py<PyAny>> {
    conn.waiters.task.as_ref().map(|t| t.clone_ref(py))
}
