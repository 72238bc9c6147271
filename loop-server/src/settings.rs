//! The server's settings, typed, read once from the settings table's native
//! rows (`loop_cli::table::rows`, each a typed [`Native`](loop_cli::table::Native)
//! constant): from a command line's values (the pure-Rust example) or a
//! `ferroloop.Config` (loop-py gives its attributes through
//! [`Lookup`]). Each protocol crate gets its configuration from here, so
//! its defaults are the table's (`tests/settings.rs` asserts they agree).

use crate::proxy::Trust;
use loop_cli::access_format::{AccessFormat, Field};
use loop_cli::table::{rows, BoolOrText, Lookup};
use loop_http::{ConnectionConfig, DefaultHeaders, Limits};
use std::sync::Arc;

/// What the `server` header says when `server_header` is on.
pub const PRODUCT: &[u8] = b"ferroloop";

/// Seconds a closing connection may take to write what it buffered (an
/// error response to a client that stopped reading), every protocol.
pub const CLOSING_DRAIN: f64 = 10.0;
/// Seconds a connection keeps reading (and dropping) input after its
/// half-close, so unread input does not turn the close into an RST that
/// destroys the last response or close frame, every protocol.
pub const LINGER: f64 = 2.0;

/// A setting whose value cannot be used, naming it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {problem}")]
pub struct SettingsError {
    pub setting: &'static str,
    pub problem: String,
}

fn error(setting: &'static str, problem: impl std::fmt::Display) -> SettingsError {
    SettingsError {
        setting,
        problem: problem.to_string(),
    }
}

/// Everything the driver, its protocol kinds and the host read.
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// The HTTP/1.1 kind's state machine configuration.
    pub http: Arc<ConnectionConfig>,
    /// WebSocket sessions' limits and timeouts; `None` when `ws` is
    /// `"none"` (an upgrade request is then plain HTTP to the app).
    pub ws: Option<loop_ws::Config>,
    /// TLS on the listening sockets; `None` for plaintext. The files are
    /// read by [`Driver::new`](crate::Driver::new) (and by a reload).
    pub tls: Option<loop_tls::TlsSettings>,
    /// `ssl_handshake_timeout`.
    pub tls_handshake_timeout: f64,
    pub limit_concurrency: Option<usize>,
    pub root_path: String,
    /// `None` also when a default header (`headers`) is the `server`.
    pub server_header: Option<Vec<u8>>,
    /// False also when a default header (`headers`) is the `date`.
    pub date_header: bool,
    /// Each request runs in a new, empty `contextvars.Context` (the ASGI
    /// bridge's).
    pub reset_contextvars: bool,
    /// `None` when proxy headers are off.
    pub proxy: Option<Trust>,
    pub access_log: bool,
    pub access_format: AccessFormat,
    /// The format shows `duration_ms`: requests are timed.
    pub access_timed: bool,
    /// See [`CLOSING_DRAIN`].
    pub closing_drain: f64,
    /// See [`LINGER`].
    pub linger: f64,
}

impl Default for ServerSettings {
    /// The table's defaults.
    fn default() -> Self {
        // The defaults are valid: a failure here is a bug in the table.
        match ServerSettings::read(&loop_cli::Values::default()) {
            Ok(settings) => settings,
            Err(e) => unreachable!("the settings table's defaults: {e}"),
        }
    }
}

impl ServerSettings {
    /// Read every native setting from `values`, checking what no single row
    /// can (the TLS settings together, the access format, the headers).
    pub fn read(values: &impl Lookup) -> Result<ServerSettings, SettingsError> {
        let proxy = if rows::PROXY_HEADERS.read(values) {
            let spec = rows::FORWARDED_ALLOW_IPS.read(values).unwrap_or_default();
            Some(Trust::parse(&spec).map_err(|e| error(rows::FORWARDED_ALLOW_IPS.name(), e))?)
        } else {
            None
        };
        let pairs = rows::HEADERS.read(values);
        let (default_headers, custom_server, custom_date) =
            default_headers(&pairs).map_err(|e| error(rows::HEADERS.name(), e))?;
        let server_header = match rows::SERVER_HEADER.read(values) {
            BoolOrText::Text(text) => Some(
                latin1(&text)
                    .ok_or_else(|| error(rows::SERVER_HEADER.name(), "not Latin-1 text"))?,
            ),
            BoolOrText::Bool(true) => Some(PRODUCT.to_vec()),
            BoolOrText::Bool(false) => None,
        }
        .filter(|_| !custom_server);
        let limits = Limits {
            max_request_line: rows::MAX_REQUEST_LINE.read(values),
            max_header_bytes: rows::MAX_HEADER_SIZE.read(values),
            max_headers: rows::MAX_HEADER_COUNT.read(values),
            max_body: rows::MAX_BODY_SIZE.read(values),
            max_chunk_extensions: rows::MAX_CHUNK_EXTENSIONS_SIZE.read(values),
            ..Limits::default()
        };
        let http = ConnectionConfig {
            limits,
            timeout_request_head: rows::TIMEOUT_REQUEST_HEAD.read(values),
            timeout_keep_alive: rows::TIMEOUT_KEEP_ALIVE.read(values),
            min_body_rate: rows::MIN_BODY_RATE.read(values),
            body_rate_grace: rows::BODY_RATE_GRACE.read(values),
            default_headers,
            ..ConnectionConfig::default()
        };
        let format = rows::ACCESS_LOG_FORMAT.read(values);
        let access_format =
            AccessFormat::parse(&format).map_err(|e| error(rows::ACCESS_LOG_FORMAT.name(), e))?;
        let tls_inputs = loop_cli::tls::TlsInputs::from_values(values);
        let tls = loop_cli::tls::tls_settings(&tls_inputs)
            .map_err(|e| error(e.setting, e.problem))?
            .map(|mut tls| {
                tls.alpn = crate::protocol::ALPN.iter().map(|p| p.to_vec()).collect();
                tls
            });
        Ok(ServerSettings {
            http: Arc::new(http),
            ws: ws_config(values),
            tls,
            tls_handshake_timeout: rows::SSL_HANDSHAKE_TIMEOUT.read(values),
            limit_concurrency: rows::LIMIT_CONCURRENCY.read(values),
            root_path: rows::ROOT_PATH.read(values),
            server_header,
            date_header: rows::DATE_HEADER.read(values) && !custom_date,
            reset_contextvars: rows::RESET_CONTEXTVARS.read(values),
            proxy,
            access_log: rows::ACCESS_LOG.read(values),
            access_timed: access_format.uses(Field::DurationMs),
            access_format,
            closing_drain: CLOSING_DRAIN,
            linger: LINGER,
        })
    }

    /// How often the timeout sweep runs: a quarter of the shortest timeout,
    /// between 50 ms and 0.5 s.
    pub fn sweep_interval(&self) -> f64 {
        let http = &self.http;
        let mut shortest = http.timeout_request_head.min(http.timeout_keep_alive);
        if http.min_body_rate.is_some() {
            shortest = shortest.min(http.body_rate_grace);
        }
        if self.tls.is_some() {
            shortest = shortest.min(self.tls_handshake_timeout);
        }
        if let Some(ws) = &self.ws {
            for t in [ws.ping_interval, ws.ping_timeout, Some(ws.close_timeout)]
                .into_iter()
                .flatten()
            {
                shortest = shortest.min(t);
            }
        }
        (shortest / 4.0).clamp(0.05, 0.5)
    }
}

/// `ws*`: `None` for `ws="none"`; the other `ws` values (`auto` and
/// uvicorn's implementation names) are all the native WebSocket.
fn ws_config(values: &impl Lookup) -> Option<loop_ws::Config> {
    if rows::WS.read(values) == "none" {
        return None;
    }
    let max_message_size = rows::WS_MAX_SIZE.read(values);
    Some(loop_ws::Config {
        max_message_size,
        // Not given: a frame may be as large as a message.
        max_frame_size: rows::WS_MAX_FRAME_SIZE
            .read(values)
            .unwrap_or(max_message_size),
        max_queue: rows::WS_MAX_QUEUE.read(values),
        max_queue_bytes: rows::WS_MAX_QUEUE_BYTES.read(values),
        ping_interval: rows::WS_PING_INTERVAL.read(values),
        ping_timeout: rows::WS_PING_TIMEOUT.read(values),
        close_timeout: rows::WS_CLOSE_TIMEOUT.read(values),
        per_message_deflate: rows::WS_PER_MESSAGE_DEFLATE.read(values),
    })
}

/// `headers` (name, value pairs) encoded as Latin-1 and validated as an
/// application's headers are, and whether they hold a `server` and a
/// `date`: those replace the server's own (as uvicorn's `--header`).
pub fn default_headers(
    pairs: &[(String, String)],
) -> Result<(DefaultHeaders, bool, bool), loop_cli::headers::HeaderError> {
    let has = |wanted: &str| pairs.iter().any(|(n, _)| n.eq_ignore_ascii_case(wanted));
    let headers = loop_cli::headers::encode(pairs)?;
    Ok((headers, has("server"), has("date")))
}

/// `text` as Latin-1 bytes (Python's `"latin-1"` codec); `None` for other
/// characters.
fn latin1(text: &str) -> Option<Vec<u8>> {
    text.chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect()
}
