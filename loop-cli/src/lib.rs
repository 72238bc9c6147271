//! ferroloop's command line: argv in, [`Settings`] out.
//!
//! This crate is the grammar, validation and `--help` text of
//! `ferroloop APP [options]` (and `python -m ferroloop APP [options]`). It is
//! pure Rust with no Python and no I/O: it never prints, exits, or touches
//! the network. `loop-py` links it into the extension module, hands it
//! `sys.argv[1:]`, and acts on the [`Command`]: serve with the
//! [`Settings`], print [`help()`] or the version, or print
//! [`CliError::report`] to stderr and exit with [`CliError::exit_code`] (2).
//!
//! ```
//! use loop_cli::{parse, Command, LogLevel};
//!
//! let Ok(Command::Run(s)) = parse(["myapp:app", "--port", "0", "--log-level=DEBUG"]) else {
//!     panic!("expected settings");
//! };
//! assert_eq!((s.app.as_str(), s.port, s.log_level), ("myapp:app", 0, LogLevel::Debug));
//! assert_eq!(
//!     parse(["myapp:app", "--prot", "80"]).err().map(|e| e.to_string()).as_deref(),
//!     Some("unknown option '--prot' (did you mean '--port'?)"),
//! );
//! ```
//!
//! # Grammar
//!
//! * `APP` is the only positional argument and must appear exactly once,
//!   anywhere among the options; it is `module:attribute` (see
//!   [`validate_app`]).
//! * Options are long (`--port`), plus `-h`. A value is given as
//!   `--opt VALUE` or `--opt=VALUE`. In the separate form, the next
//!   argument is taken as the value unless it looks like an option itself
//!   (starts with `-`, is not `-`, and is not a negative number), so
//!   `--host --port 80` is "needs a value" rather than a host named
//!   `--port`; the `=` form accepts any value (`--root-path=-x`).
//! * Flags (`--access-log`, `--no-access-log`, `--version`, `-h`) take no
//!   value: `--access-log=1` is an error.
//! * A repeated option is applied again: the last one wins.
//! * `--` ends the options; everything after it is positional.
//! * `-h`/`--help` and `--version` win over everything else before `--`,
//!   including errors (click's eager options): `--prot 1 --help` shows help.
//! * `--host`/`--port` together with `--uds` or `--fd` are accepted and
//!   ignored, as uvicorn does ([`Settings::listen`]); `--uds` with `--fd`
//!   is an error. `--max-header-size` wins over uvicorn's
//!   `--h11-max-incomplete-event-size` (a warning says so).
//! * A repeated `--header` adds a header.
//! * Arguments must be UTF-8, except a `--uds` path on Unix, which may be any
//!   bytes (as `OsString`s built from `os.fsencode` carry them).
//!
//! # uvicorn's options
//!
//! Every option of `uvicorn --help` (0.55) is a row: implemented with
//! uvicorn's meaning, accepted as a no-op with a one-line warning
//! ([`table::Status::Ignored`]: `--loop`, `--http`), or refused as a usage
//! error "not supported yet: …" naming what to do instead
//! ([`table::Status::Unsupported`]: `--http2`; and single values:
//! `--interface wsgi`). An unsupported
//! option given its default value (`--http2` off) asks
//! for nothing ferroloop does not do and passes. `--help` marks each with
//! `[ignored]` or `[not supported yet]`.
//!
//! Decisions, per option:
//!
//! * `--workers N` (or `WEB_CONCURRENCY`, uvicorn's default for it; the
//!   flag wins): `auto` and `0` both mean one worker per CPU the process
//!   may run on (cadeloop's `0`); above 1 a supervisor forks the workers.
//! * `--ws` takes uvicorn's values: `auto`, and `websockets`,
//!   `websockets-sansio` and `wsproto` as names for ferroloop's native
//!   WebSocket (the server notes the alias once at startup); `none` serves
//!   no WebSocket (an upgrade request reaches the app as plain HTTP). A `module:attr`
//!   protocol class, which uvicorn's `Config` imports, is refused
//!   ([`CliError::Refused`]). The `--ws-*` options are uvicorn's, plus
//!   ferroloop's bounds `--ws-max-frame-size`, `--ws-max-queue-bytes` and
//!   `--ws-close-timeout`.
//! * `--h11-max-incomplete-event-size` sets `--max-header-size` (h11 bounds
//!   the request head with it); `--max-header-size` wins when both are
//!   given.
//! * `--timeout-worker-healthcheck` bounds the supervisor's ping of each
//!   worker's loop. `--limit-max-requests-jitter` is implemented
//!   (a random 0..=N more requests).
//! * `--server-header/--no-server-header` are uvicorn's pair; another
//!   `Server` value is `--header server:VALUE` (which replaces the default,
//!   as in uvicorn) or `FERROLOOP_SERVER_HEADER=VALUE`.
//! * `--env-file` is loaded before the app is imported, without overriding
//!   variables already set; `FERROLOOP_*` variables in it set options,
//!   below the flags. `UVICORN_*` variables in it do not (uvicorn reads
//!   its variables before it loads the file). The file's own
//!   `FERROLOOP_ENV_FILE` is not followed.
//!
//! # The environment
//!
//! [`parse_values_env`] also reads every setting from `FERROLOOP_<NAME>`
//! (see [`mod@env`]), then uvicorn's `UVICORN_<NAME>` for uvicorn's
//! options ([`table::uvicorn`]), then the row's uvicorn alias
//! (`WEB_CONCURRENCY`, `FORWARDED_ALLOW_IPS`); APP, when argv has none,
//! from `FERROLOOP_APP` or `UVICORN_APP`: a flag wins over the
//! environment, the environment over the default. A flag wins even when it stores nothing
//! (an ignored option: `--loop x` with `FERROLOOP_LOOP=y` warns once). A variable follows its row's status as
//! its flag does, its messages naming the variable and the flag
//! (`FERROLOOP_HTTP2 (--http2) is not supported yet: …`,
//! `FERROLOOP_LOOP is ignored: …`). Each value keeps its [`Source`].
//! [`dotenv`] parses an `--env-file` with python-dotenv's `${VAR}`
//! expansion; the caller reads it and parses again with its variables
//! under the process's (`loop-py/src/cli.rs`, which also checks that
//! `--log-config` and `--app-dir` exist). [`headers`] validates `--header`
//! as the server encodes it.
//!
//! # Adding an option
//!
//! Options are the settings table's flags ([`table::SETTINGS`]): a row
//! with a flag is an option, and parsing, `--help` and suggestions read the
//! table. [`parse_values`] gives every value a command line set, by name;
//! [`Settings`] is the typed view of the options that existed when it was
//! written (new options need not add a field to it).

pub mod access_format;
pub mod dotenv;
pub mod env;
mod error;
pub mod headers;
mod help;
mod options;
mod settings;
mod suggest;
pub mod table;
pub mod tls;
mod value;

use std::ffi::{OsStr, OsString};

pub use error::{AppProblem, CliError, USAGE_EXIT_CODE};
pub use help::help;
pub use settings::{Lifespan, Listen, LogLevel, Settings};
pub use value::{Invalid, Source, Value, Values};

use options::{Arity, Exit, Given};

/// The program name [`parse`] uses in help text.
pub const DEFAULT_PROG: &str = "ferroloop";

/// This crate's version, which is the ferroloop version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the command line asks the program to do. `S` is what a run gets:
/// [`Settings`] from [`parse`], [`Parsed`] from [`parse_values`].
#[derive(Clone, Debug, PartialEq)]
pub enum Command<S = Settings> {
    /// Serve an application.
    Run(S),
    /// Print this help text to stdout and exit with 0.
    Help(String),
    /// Print the version to stdout and exit with 0.
    Version,
}

/// Parses `args` (without the program name) as `ferroloop APP [options]`.
/// Help text names the program [`DEFAULT_PROG`]; use [`parse_with_prog`]
/// for `python -m ferroloop`.
pub fn parse<I, S>(args: I) -> Result<Command, CliError>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    parse_with_prog(DEFAULT_PROG, args)
}

/// [`parse`], with `prog` as the program name in [`Command::Help`] text.
pub fn parse_with_prog<I, S>(prog: &str, args: I) -> Result<Command, CliError>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    Ok(match parse_values(prog, args)? {
        Command::Run(p) => Command::Run(Settings::from_values(p.app, &p.values)),
        Command::Help(text) => Command::Help(text),
        Command::Version => Command::Version,
    })
}

/// A parsed command line: the app and the settings it gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    /// `module:attribute`, validated.
    pub app: String,
    /// Only the settings the command line gave (the last occurrence of
    /// each), validated; [`Values::get`] falls back to the default.
    pub values: Values,
}

/// [`parse_with_prog`], giving the settings by name as the table defines
/// them, for every option; no environment.
pub fn parse_values<I, S>(prog: &str, args: I) -> Result<Command<Parsed>, CliError>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    parse_values_env(prog, args, &env::NoEnv)
}

/// [`parse_values`], then every setting the flags did not give from its
/// `FERROLOOP_<NAME>` variable in `env` (the `ferroloop` command uses
/// this). Conflicts are checked over both.
pub fn parse_values_env<I, S>(
    prog: &str,
    args: I,
    env: &dyn env::Env,
) -> Result<Command<Parsed>, CliError>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if let Some(exit) = eager_exit(&args) {
        return Ok(exit_command(exit, prog));
    }

    let mut values = Values::default();
    let mut app: Option<String> = None;
    let mut options_done = false;
    let mut rest = args.into_iter().peekable();
    while let Some(arg) = rest.next() {
        if options_done || !is_option(&arg) {
            set_app(&mut app, arg)?;
            continue;
        }
        if arg == "--" {
            options_done = true;
            continue;
        }
        let (name, inline) = split_option(&arg)?;
        let Some((spec, option, on)) = options::lookup(&name) else {
            return Err(CliError::UnknownOption {
                suggestion: suggest::suggest(&name),
                option: name,
            });
        };
        let value = match spec.arity {
            Arity::Flag | Arity::Switch { .. } => match inline {
                Some(_) => return Err(CliError::UnexpectedValue { option }),
                None => None,
            },
            Arity::Value { .. } => match inline {
                Some(v) => Some(v),
                None => Some(
                    rest.next_if(|next| !is_option(next) || is_negative_number(next))
                        .ok_or(CliError::MissingValue { option })?,
                ),
            },
        };
        if let Some(exit) = options::apply(&mut values, spec.target, Given { option, value, on })? {
            return Ok(exit_command(exit, prog));
        }
    }

    let app = match app {
        Some(app) => app,
        None => {
            let mut from_env = None;
            set_app(&mut from_env, env::app(env).ok_or(CliError::MissingApp)?)?;
            from_env.ok_or(CliError::MissingApp)?
        }
    };
    env::apply(&mut values, env, env::Read::WithUvicorn, |_| true)?;
    options::check_conflicts(&mut values)?;
    Ok(Command::Run(Parsed { app, values }))
}

/// Checks that `app` is `module:attribute`: exactly one `':'`, a module path
/// of dotted Python identifiers (`pkg.main`) before it, and an attribute
/// path of dotted identifiers (`app`, `factory.app`) after it. Identifiers
/// are checked the way Python spells them, Unicode letters included;
/// keywords are not rejected here (the import will fail on them).
pub fn validate_app(app: &str) -> Result<(), CliError> {
    let fail = |problem| {
        Err(CliError::InvalidApp {
            app: app.to_owned(),
            problem,
        })
    };
    let Some((module, attr)) = app.split_once(':') else {
        return fail(AppProblem::MissingColon);
    };
    if attr.contains(':') {
        return fail(AppProblem::ExtraColon);
    }
    if module.is_empty() {
        return fail(AppProblem::EmptyModule);
    }
    if attr.is_empty() {
        return fail(AppProblem::EmptyAttribute);
    }
    if !is_dotted_name(module) {
        return fail(AppProblem::BadModule);
    }
    if !is_dotted_name(attr) {
        return fail(AppProblem::BadAttribute);
    }
    Ok(())
}

fn is_dotted_name(s: &str) -> bool {
    s.split('.').all(is_identifier)
}

/// An approximation of Python's `str.isidentifier()`: a letter or `_`, then
/// letters, digits or `_`.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

fn exit_command<S>(exit: Exit, prog: &str) -> Command<S> {
    match exit {
        Exit::Help => Command::Help(help(prog)),
        Exit::Version => Command::Version,
    }
}

/// The first `-h`, `--help` or `--version` before `--`. Such a token is
/// never a value (it looks like an option), so this agrees with the main
/// pass about which tokens are options.
fn eager_exit(args: &[OsString]) -> Option<Exit> {
    args.iter()
        .take_while(|a| *a != "--")
        .filter_map(|a| a.to_str())
        .filter_map(options::lookup)
        .find_map(|(spec, _, _)| spec.exit())
}

/// Starts with `-` and is not `-` alone (which, as for most tools, is a
/// positional).
fn is_option(arg: &OsStr) -> bool {
    let b = arg.as_encoded_bytes();
    b.len() > 1 && b.starts_with(b"-")
}

/// `-` followed by digits: a value such as `--fd -1`, not an option, so it
/// reaches validation and gets a precise message.
fn is_negative_number(arg: &OsStr) -> bool {
    arg.to_str()
        .and_then(|s| s.strip_prefix('-'))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

fn set_app(app: &mut Option<String>, arg: OsString) -> Result<(), CliError> {
    let arg = arg.into_string().map_err(|a| CliError::NonUtf8 {
        arg: a.to_string_lossy().into_owned(),
    })?;
    if app.is_some() {
        return Err(CliError::UnexpectedArgument { arg });
    }
    validate_app(&arg)?;
    *app = Some(arg);
    Ok(())
}

/// Splits `--name=value` at the first `=`. The name must be UTF-8; the value
/// stays an `OsString` so a `--uds=PATH` may hold non-UTF-8 bytes on Unix.
fn split_option(arg: &OsStr) -> Result<(String, Option<OsString>), CliError> {
    if let Some(s) = arg.to_str() {
        return Ok(match s.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.into())),
            None => (s.to_owned(), None),
        });
    }
    split_non_utf8(arg)
}

#[cfg(unix)]
fn split_non_utf8(arg: &OsStr) -> Result<(String, Option<OsString>), CliError> {
    use std::os::unix::ffi::OsStrExt;

    let bytes = arg.as_bytes();
    let non_utf8 = || CliError::NonUtf8 {
        arg: arg.to_string_lossy().into_owned(),
    };
    let eq = bytes.iter().position(|&b| b == b'=').ok_or_else(non_utf8)?;
    let (name, value) = bytes.split_at(eq);
    let name = std::str::from_utf8(name).map_err(|_| non_utf8())?;
    let value = value.strip_prefix(b"=").unwrap_or(value);
    Ok((name.to_owned(), Some(OsStr::from_bytes(value).to_owned())))
}

#[cfg(not(unix))]
fn split_non_utf8(arg: &OsStr) -> Result<(String, Option<OsString>), CliError> {
    Err(CliError::NonUtf8 {
        arg: arg.to_string_lossy().into_owned(),
    })
}
