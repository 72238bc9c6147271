//! Usage errors. The `Display` text is what the user sees after `Error: `;
//! callers that need to branch match on the variants, never on the text.

/// Exit status for a usage error, as argparse and click use.
pub const USAGE_EXIT_CODE: i32 = 2;

/// A command line that cannot be run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum CliError {
    /// An option name that is not in the table. `suggestion` is the closest
    /// known option, if one is close enough.
    #[error("unknown option '{option}'{}", did_you_mean(.suggestion))]
    UnknownOption {
        option: String,
        suggestion: Option<&'static str>,
    },

    /// An option that takes a value came last, or was followed by another
    /// option.
    #[error("option '{option}' needs a value")]
    MissingValue { option: &'static str },

    /// A flag was given a value with `=`, as in `--access-log=1`.
    #[error("option '{option}' does not take a value")]
    UnexpectedValue { option: &'static str },

    /// An option value that does not validate.
    #[error("invalid value '{value}' for '{option}': {expected}")]
    InvalidValue {
        option: &'static str,
        value: String,
        expected: &'static str,
    },

    /// No positional `APP` was given.
    #[error("missing APP (e.g. 'myapp:app')")]
    MissingApp,

    /// `APP` is not `module:attribute`.
    #[error("invalid APP '{app}': expected 'module:attribute'{}", .problem.detail())]
    InvalidApp { app: String, problem: AppProblem },

    /// A second positional argument.
    #[error("unexpected argument '{arg}'")]
    UnexpectedArgument { arg: String },

    /// Two options that exclude each other were both given (by flag or
    /// environment variable, as named).
    #[error("'{first}' and '{second}' cannot be used together")]
    Conflict { first: String, second: String },

    /// An option (or one of its values) ferroloop knows, uvicorn has it,
    /// but does not implement yet. `what` names it: `option '--workers'`,
    /// `WEB_CONCURRENCY (--workers)`, `option '--interface' with 'wsgi'`.
    #[error("{what} is not supported yet: {reason}")]
    Unsupported { what: String, reason: &'static str },

    /// A value ferroloop knows from uvicorn and will not take (`--ws
    /// mypkg:Protocol`: an implementation class where ferroloop's is
    /// native).
    #[error("{what} is not supported: {reason}")]
    Refused { what: String, reason: &'static str },

    /// An environment variable's value that does not validate.
    #[error("invalid value '{value}' for environment variable {var} ({option}): {expected}")]
    InvalidEnv {
        var: String,
        option: String,
        value: String,
        expected: &'static str,
    },

    /// A value that parses but cannot be used: a missing `--app-dir`, an
    /// `--env-file` that cannot be read (checked by the caller, which does
    /// the I/O).
    #[error("invalid value for '{option}': {problem}")]
    Unusable {
        option: &'static str,
        problem: String,
    },

    /// An argument that is not valid UTF-8 where text is required (only a
    /// `--uds` path may be arbitrary bytes). `arg` is shown lossily.
    #[error("argument '{arg}' is not valid UTF-8")]
    NonUtf8 { arg: String },
}

impl CliError {
    /// The process exit status for this error: always 2, like argparse/click.
    pub fn exit_code(&self) -> i32 {
        USAGE_EXIT_CODE
    }

    /// The full text to print on stderr, in click's layout:
    ///
    /// ```text
    /// Usage: ferroloop [OPTIONS] APP
    /// Try 'ferroloop --help' for help.
    ///
    /// Error: option '--port' needs a value
    /// ```
    pub fn report(&self, prog: &str) -> String {
        format!(
            "{}\nTry '{prog} --help' for help.\n\nError: {self}\n",
            crate::help::usage_line(prog)
        )
    }
}

/// Why an `APP` string was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AppProblem {
    /// No `':'`.
    MissingColon,
    /// More than one `':'`.
    ExtraColon,
    /// Nothing before the `':'`.
    EmptyModule,
    /// Nothing after the `':'`.
    EmptyAttribute,
    /// The module path is not dotted Python identifiers (`pkg.mod`).
    BadModule,
    /// The attribute path is not dotted Python identifiers (`factory.app`).
    BadAttribute,
}

impl AppProblem {
    fn detail(self) -> &'static str {
        match self {
            AppProblem::MissingColon => "",
            AppProblem::ExtraColon => " (more than one ':')",
            AppProblem::EmptyModule => " (the module is empty)",
            AppProblem::EmptyAttribute => " (the attribute is empty)",
            AppProblem::BadModule => " (the module is not a dotted name like 'pkg.main')",
            AppProblem::BadAttribute => {
                " (the attribute is not a dotted name like 'app' or 'factory.app')"
            }
        }
    }
}

fn did_you_mean(suggestion: &Option<&'static str>) -> String {
    match suggestion {
        Some(s) => format!(" (did you mean '{s}'?)"),
        None => String::new(),
    }
}
