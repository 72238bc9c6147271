//! Server settings the native side needs, validated by `ferroloop.Config`
//! before they reach here, and the I/O bounds of a connection (the HTTP
//! bounds are `loop_http::ConnectionConfig`'s).
//!
//! The settings are rows of loop-cli's table (`loop_cli::table::SETTINGS`)
//! marked `native`; [`Settings::from_py`] reads exactly those attributes
//! ([`Settings::READS`]) from the `Config`. A test checks the two lists
//! agree (`tests/http/test_http_settings.py`).

use super::proxy::Trust;
use loop_cli::access_format::{AccessFormat, Field};
use loop_http::{DefaultHeaders, Limits};
use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::collections::HashMap;
use std::path::PathBuf;

pub struct Settings {
    pub limits: Limits,
    pub timeout_request_head: f64,
    pub timeout_keep_alive: f64,
    /// Kestrel's rule: after `body_rate_grace` seconds of waiting for a
    /// request body, it must average at least this many bytes per second.
    pub min_body_rate: Option<f64>,
    pub body_rate_grace: f64,
    pub limit_concurrency: Option<usize>,
    pub root_path: String,
    /// `None` also when a default header (`headers`) is the `server`.
    pub server_header: Option<Vec<u8>>,
    /// False also when a default header (`headers`) is the `date`.
    pub date_header: bool,
    /// `headers`: added to every response.
    pub default_headers: DefaultHeaders,
    /// Each request runs in a new, empty `contextvars.Context`.
    pub reset_contextvars: bool,
    /// `None` when proxy headers are off.
    pub proxy: Option<Trust>,
    pub access_log: bool,
    pub access_format: AccessFormat,
    /// The format shows `duration_ms`: requests are timed.
    pub access_timed: bool,
    /// WebSocket sessions' limits and timeouts; `None` when `ws` is
    /// `"none"` (an upgrade request is then plain HTTP to the app).
    pub ws: Option<loop_ws::Config>,
    /// TLS on the listening sockets; `None` for plaintext. Files are read
    /// (and every error reported) before anything binds.
    pub tls: Option<loop_tls::TlsSettings>,
    /// `tls` loaded (files read and checked) when the settings were read,
    /// so a bad file fails before anything binds. A certificate reload
    /// builds a new one from `tls`; the server holds the current one.
    /// (`Server.serve` also loads it once before binding, through
    /// `_native._load_tls`, since the native server is made after the bind.)
    pub tls_config: Option<loop_tls::TlsConfig>,
    /// `ssl_handshake_timeout`: seconds a TLS handshake may take.
    pub tls_handshake_timeout: f64,
}

impl Settings {
    /// The `Config` attributes [`Settings::from_py`] reads: the table's
    /// `native` rows.
    pub const READS: &'static [&'static str] = &[
        "root_path",
        "access_log",
        "access_log_format",
        "proxy_headers",
        "forwarded_allow_ips",
        "server_header",
        "date_header",
        "limit_concurrency",
        "max_request_line",
        "max_header_size",
        "max_header_count",
        "max_body_size",
        "max_chunk_extensions_size",
        "timeout_request_head",
        "timeout_keep_alive",
        "min_body_rate",
        "body_rate_grace",
        "headers",
        "reset_contextvars",
        "ws",
        "ws_max_size",
        "ws_max_queue",
        "ws_ping_interval",
        "ws_ping_timeout",
        "ws_per_message_deflate",
        "ws_max_frame_size",
        "ws_max_queue_bytes",
        "ws_close_timeout",
        "ssl_keyfile",
        "ssl_certfile",
        "ssl_keyfile_password",
        "ssl_version",
        "ssl_cert_reqs",
        "ssl_ca_certs",
        "ssl_ciphers",
        "ssl_crl",
        "ssl_min_version",
        "ssl_handshake_timeout",
        "ssl_sni",
    ];

    /// What `Server` sends when `server_header` is `True`.
    const PRODUCT: &'static [u8] = b"ferroloop";

    /// The native settings from a `ferroloop.Config` (any object with its
    /// attributes), whose values `Config` has already validated.
    pub fn from_py(config: &Bound<'_, PyAny>) -> PyResult<Self> {
        let get = |name: &'static str| {
            debug_assert!(Self::READS.contains(&name), "{name} is not in READS");
            config.getattr(name)
        };
        let proxy = if get("proxy_headers")?.extract::<bool>()? {
            let spec: String = get("forwarded_allow_ips")?.extract()?;
            Some(
                Trust::parse(&spec)
                    .map_err(|e| PyValueError::new_err(format!("forwarded_allow_ips: {e}")))?,
            )
        } else {
            None
        };
        let header = get("server_header")?;
        let server_header = if header.is_instance_of::<PyString>() {
            // As Python's "latin-1" codec: an error for other characters.
            let py = config.py();
            let bytes = header.call_method1(intern!(py, "encode"), (intern!(py, "latin-1"),))?;
            Some(bytes.extract::<Vec<u8>>()?)
        } else if header.extract::<bool>()? {
            Some(Self::PRODUCT.to_vec())
        } else {
            None
        };
        let (default_headers, custom_server, custom_date) = default_headers(
            &get("headers")?
                .extract::<Option<Vec<(String, String)>>>()?
                .unwrap_or_default(),
        )?;
        let server_header = server_header.filter(|_| !custom_server);
        let limits = Limits {
            max_request_line: get("max_request_line")?.extract()?,
            max_header_bytes: get("max_header_size")?.extract()?,
            max_headers: get("max_header_count")?.extract()?,
            max_body: get("max_body_size")?.extract()?,
            max_chunk_extensions: get("max_chunk_extensions_size")?.extract()?,
            ..Limits::default()
        };
        let tls = tls_settings(&get)?;
        let tls_config = tls.as_ref().map(load_tls).transpose()?;
        let format: String = get("access_log_format")?.extract()?;
        let access_format = AccessFormat::parse(&format)
            .map_err(|e| PyValueError::new_err(format!("access_log_format: {e}")))?;
        Ok(Settings {
            access_timed: access_format.uses(Field::DurationMs),
            access_format,
            limits,
            timeout_request_head: get("timeout_request_head")?.extract()?,
            timeout_keep_alive: get("timeout_keep_alive")?.extract()?,
            min_body_rate: get("min_body_rate")?.extract()?,
            body_rate_grace: get("body_rate_grace")?.extract()?,
            limit_concurrency: get("limit_concurrency")?.extract()?,
            root_path: get("root_path")?.extract()?,
            server_header,
            date_header: get("date_header")?.extract::<bool>()? && !custom_date,
            default_headers,
            reset_contextvars: get("reset_contextvars")?.extract()?,
            proxy,
            access_log: get("access_log")?.extract()?,
            ws: ws_config(&get)?,
            tls,
            tls_config,
            tls_handshake_timeout: get("ssl_handshake_timeout")?.extract()?,
        })
    }
}

/// `Settings::ws` from the `ws*` attributes: `None` for `ws="none"`. The
/// other `ws` values (`auto` and uvicorn's implementation names) are all
/// the native WebSocket.
fn ws_config<'py>(
    get: &impl Fn(&'static str) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Option<loop_ws::Config>> {
    if get("ws")?.extract::<String>()? == "none" {
        return Ok(None);
    }
    let max_message_size: usize = get("ws_max_size")?.extract()?;
    Ok(Some(loop_ws::Config {
        max_message_size,
        // Not given: a frame may be as large as a message.
        max_frame_size: get("ws_max_frame_size")?
            .extract::<Option<usize>>()?
            .unwrap_or(max_message_size),
        max_queue: get("ws_max_queue")?.extract()?,
        max_queue_bytes: get("ws_max_queue_bytes")?.extract()?,
        ping_interval: get("ws_ping_interval")?.extract()?,
        ping_timeout: get("ws_ping_timeout")?.extract()?,
        close_timeout: get("ws_close_timeout")?.extract()?,
        per_message_deflate: get("ws_per_message_deflate")?.extract()?,
    }))
}

/// `Settings::tls` from the `ssl_*` attributes (as `Config` keeps them:
/// paths as `str`, `ssl_crl` a list, `ssl_sni` a dict `{host: (certfile,
/// keyfile)}`); `None` for plaintext. The files are not read here.
pub fn tls_settings<'py>(
    get: &impl Fn(&'static str) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Option<loop_tls::TlsSettings>> {
    use loop_cli::tls::TlsInputs;
    let sni: HashMap<String, (PathBuf, PathBuf)> = get("ssl_sni")?
        .extract::<Option<HashMap<String, (PathBuf, PathBuf)>>>()?
        .unwrap_or_default();
    let mut sni: Vec<loop_tls::SniCert> = sni
        .into_iter()
        .map(|(host, (certfile, keyfile))| loop_tls::SniCert {
            host,
            certfile,
            keyfile,
        })
        .collect();
    sni.sort_by(|a, b| a.host.cmp(&b.host)); // a dict's order is not the point
    let inputs = TlsInputs {
        certfile: get("ssl_certfile")?.extract()?,
        keyfile: get("ssl_keyfile")?.extract()?,
        password: get("ssl_keyfile_password")?.extract()?,
        ca_certs: get("ssl_ca_certs")?.extract()?,
        cert_reqs: get("ssl_cert_reqs")?.extract()?,
        version: get("ssl_version")?.extract()?,
        ciphers: get("ssl_ciphers")?.extract()?,
        crls: get("ssl_crl")?
            .extract::<Option<Vec<PathBuf>>>()?
            .unwrap_or_default(),
        min_version: get("ssl_min_version")?.extract()?,
        sni,
    };
    loop_cli::tls::tls_settings(&inputs).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Read and check every file `settings` names: `FileNotFoundError` for a
/// file that is not there, `ValueError` for one that cannot be used; the
/// message (loop-tls' `ConfigError`) names the file.
pub fn load_tls(settings: &loop_tls::TlsSettings) -> PyResult<loop_tls::TlsConfig> {
    loop_tls::TlsConfig::load(settings).map_err(|e| match &e {
        loop_tls::ConfigError::File { path, .. } if !path.exists() => {
            PyFileNotFoundError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    })
}

/// `_check_tls(config)`: the `ssl_*` settings checked together (no file
/// is read), a `ValueError` naming the setting.
#[pyfunction]
pub fn _check_tls(config: &Bound<'_, PyAny>) -> PyResult<()> {
    tls_settings(&|name| config.getattr(name)).map(drop)
}

/// `_load_tls(config)`: the `ssl_*` files read and checked, as the server
/// will (`Server.serve` calls it before binding).
#[pyfunction]
pub fn _load_tls(config: &Bound<'_, PyAny>) -> PyResult<()> {
    match tls_settings(&|name| config.getattr(name))? {
        Some(settings) => load_tls(&settings).map(drop),
        None => Ok(()),
    }
}

/// `headers` (name, value pairs) encoded as Latin-1 and validated as an
/// application's headers are, and whether they hold a `server` and a
/// `date`: those replace the server's own (as uvicorn's `--header`).
pub fn default_headers(pairs: &[(String, String)]) -> PyResult<(DefaultHeaders, bool, bool)> {
    let has = |wanted: &str| pairs.iter().any(|(n, _)| n.eq_ignore_ascii_case(wanted));
    let headers = loop_cli::headers::encode(pairs)
        .map_err(|e| PyValueError::new_err(format!("headers: {e}")))?;
    Ok((headers, has("server"), has("date")))
}

/// Response bytes buffered before `send()` waits (asyncio's water marks).
pub const WRITE_HIGH: usize = 64 * 1024;
pub const WRITE_LOW: usize = 16 * 1024;
/// One `recv` into the server's shared read buffer.
pub const READ_CHUNK: usize = 256 * 1024;
