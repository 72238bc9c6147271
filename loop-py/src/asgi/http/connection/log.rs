//! The connection's access-log lines and the server's own answers (4xx,
//! 503, 408) as warnings: what the connection tells the loggers.

use super::HttpConnection;
use crate::asgi::shared::ServerShared;
use loop_core::clock;
use loop_http::RequestHead;
use pyo3::prelude::*;

impl HttpConnection {
    /// The server's own answer in the access log, and (but for a 500,
    /// whose app error is logged already) as a rate-limited warning.
    pub(super) fn log_server_answer(
        slf: &Bound<'_, Self>,
        status: u16,
        head: Option<&RequestHead>,
        active: bool,
    ) -> PyResult<()> {
        let py = slf.py();
        let (shared, warning, line) = {
            let me = slf.borrow();
            let warning = match status {
                500 => None,
                408 => Some(
                    "Request timeout: no complete request head within timeout_request_head (408)"
                        .to_owned(),
                ),
                503 => Some("Exceeded concurrency limit (503)".to_owned()),
                _ => Some(match me.http.parse_error() {
                    Some(err) => format!("Invalid HTTP request received: {err} ({status})"),
                    None => format!("Invalid HTTP request received ({status})"),
                }),
            };
            let shared = me.shared.clone_ref(py);
            let line = if shared.borrow(py).logs.access_on {
                let head =
                    head.or_else(|| me.http.exchange().filter(|_| active).map(|ex| ex.head()));
                Some(me.access_line(head, status))
            } else {
                None
            };
            (shared, warning, line)
        };
        if let Some(line) = line {
            ServerShared::log_access(shared.bind(py), line)?;
        }
        if let Some(warning) = warning {
            ServerShared::log_server_answer(shared.bind(py), &warning)?;
        }
        Ok(())
    }

    /// Input the server closes on without a response (the HTTP/2
    /// preface): a rate-limited warning saying why, as for the requests it
    /// answers.
    pub(super) fn log_refused(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let (shared, warning) = {
            let me = slf.borrow();
            let warning = match me.http.parse_error() {
                Some(err) => err.to_string(),
                None => "Invalid HTTP request received".to_owned(),
            };
            (me.shared.clone_ref(py), warning)
        };
        ServerShared::log_server_answer(shared.bind(py), &warning)
    }

    pub(super) fn access_line(&self, head: Option<&RequestHead>, status: u16) -> String {
        let duration = (self.settings.access_timed && head.is_some())
            .then(|| clock::monotonic() - self.request_started);
        crate::asgi::http::access::render(
            &self.settings.access_format,
            &crate::asgi::http::access::Entry {
                client: &self.client_text,
                head,
                root_path: &self.settings.root_path,
                status,
                duration,
            },
        )
    }

    /// The access-log line of the current exchange's response: complete,
    /// or cut short after its status was sent (the client left, or the app
    /// stopped).
    pub(in crate::asgi) fn log_access(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let (shared, line) = {
            let me = slf.borrow();
            if !me.shared.borrow(py).logs.access_on {
                return Ok(());
            }
            let Some(ex) = me.http.exchange() else {
                return Ok(());
            };
            (
                me.shared.clone_ref(py),
                me.access_line(Some(ex.head()), ex.status()),
            )
        };
        ServerShared::log_access(shared.bind(py), line)
    }
}
