//! What a parsed command line asks for: [`Settings`] and its value types.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::value::Values;

/// How the server runs the ASGI lifespan protocol (`--lifespan`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifespan {
    /// Run it; if the application does not support it, carry on without.
    Auto,
    /// Run it; an application that does not support it is an error.
    On,
    /// Do not run it.
    Off,
}

impl Lifespan {
    /// Every value, in the order `--help` lists them.
    pub const ALL: [Lifespan; 3] = [Lifespan::Auto, Lifespan::On, Lifespan::Off];

    /// Parses `"auto"`, `"on"` or `"off"` (exact, lower-case, as uvicorn).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The command-line spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Lifespan::Auto => "auto",
            Lifespan::On => "on",
            Lifespan::Off => "off",
        }
    }
}

impl fmt::Display for Lifespan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Server log level (`--log-level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Critical,
    Error,
    Warning,
    Info,
    Debug,
    /// Below `Debug`; uvicorn's `TRACE_LOG_LEVEL`.
    Trace,
}

impl LogLevel {
    /// Every value, most severe first, in the order `--help` lists them.
    pub const ALL: [LogLevel; 6] = [
        LogLevel::Critical,
        LogLevel::Error,
        LogLevel::Warning,
        LogLevel::Info,
        LogLevel::Debug,
        LogLevel::Trace,
    ];

    /// Parses a level name, ignoring ASCII case (`"debug"`, `"DEBUG"`).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s))
    }

    /// The lower-case command-line spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Critical => "critical",
            LogLevel::Error => "error",
            LogLevel::Warning => "warning",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }

    /// The numeric level for Python's `logging` module (`logging.INFO` is
    /// 20); `Trace` is 5, as uvicorn defines it.
    pub fn python_level(self) -> i32 {
        match self {
            LogLevel::Critical => 50,
            LogLevel::Error => 40,
            LogLevel::Warning => 30,
            LogLevel::Info => 20,
            LogLevel::Debug => 10,
            LogLevel::Trace => 5,
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything a `ferroloop APP [options]` command line asks for.
///
/// [`crate::parse`] only returns validated settings; the fields are public so
/// embedders and tests can also build one by hand ([`Settings::new`]).
///
/// Where to listen: `uds`, then `fd`, then `host`/`port` (see
/// [`Settings::listen`]). `--host`/`--port` given together with `--uds` or
/// `--fd` are accepted and ignored, as uvicorn does; `--uds` with `--fd` is a
/// usage error.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The application, `"module:attribute"`; the attribute may be dotted
    /// (`"pkg.mod:factory.app"`).
    pub app: String,
    /// TCP host to bind.
    pub host: String,
    /// TCP port to bind; 0 asks the OS for a free port.
    pub port: u16,
    /// Unix domain socket path to bind instead of TCP.
    pub uds: Option<PathBuf>,
    /// An already bound, listening socket to serve on instead of TCP.
    pub fd: Option<i32>,
    /// ASGI `root_path`: empty, or starts with `/` and does not end with `/`.
    pub root_path: String,
    pub lifespan: Lifespan,
    /// Whether to log one line per request.
    pub access_log: bool,
    pub log_level: LogLevel,
}

impl Settings {
    /// Settings for `app` with every option at its default (the defaults
    /// are the settings table's). `app` is not validated here (see
    /// [`crate::validate_app`]).
    pub fn new(app: impl Into<String>) -> Self {
        Self::from_values(app, &Values::default())
    }

    /// The typed settings for `app` from parsed [`Values`] (a setting not
    /// given takes the table's default). `values` hold only values that
    /// passed [`crate::table::Setting::parse_text`], so every conversion
    /// fits (the fallbacks are never taken).
    pub fn from_values(app: impl Into<String>, values: &Values) -> Self {
        Settings {
            app: app.into(),
            host: values.text("host"),
            port: values
                .int("port")
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or_default(),
            uds: values.path("uds"),
            fd: values.int("fd").and_then(|fd| i32::try_from(fd).ok()),
            root_path: values.text("root_path"),
            lifespan: Lifespan::parse(&values.text("lifespan")).unwrap_or(Lifespan::Auto),
            access_log: values.flag("access_log"),
            log_level: LogLevel::parse(&values.text("log_level")).unwrap_or(LogLevel::Info),
        }
    }

    /// `app` split into module path and attribute path:
    /// `"pkg.mod:factory.app"` gives `("pkg.mod", "factory.app")`. For a
    /// hand-built `app` without `':'` the attribute is empty.
    pub fn app_parts(&self) -> (&str, &str) {
        self.app.split_once(':').unwrap_or((self.app.as_str(), ""))
    }

    /// Where the server should listen, after precedence: `uds`, then `fd`,
    /// then `host`/`port`.
    pub fn listen(&self) -> Listen<'_> {
        match (&self.uds, self.fd) {
            (Some(path), _) => Listen::Unix(path),
            (None, Some(fd)) => Listen::Fd(fd),
            (None, None) => Listen::Tcp {
                host: &self.host,
                port: self.port,
            },
        }
    }
}

/// The one place a server listens, as chosen by [`Settings::listen`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listen<'a> {
    Tcp { host: &'a str, port: u16 },
    Unix(&'a Path),
    Fd(i32),
}
