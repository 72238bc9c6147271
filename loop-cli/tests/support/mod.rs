//! What the command-line tests share: parse and expect a run or an error.

use loop_cli::{parse, CliError, Command, Settings};

pub fn run(args: &[&str]) -> Settings {
    match parse(args) {
        Ok(Command::Run(s)) => s,
        other => panic!("{args:?}: expected Run, got {other:?}"),
    }
}

pub fn err(args: &[&str]) -> CliError {
    match parse(args) {
        Err(e) => e,
        Ok(other) => panic!("{args:?}: expected an error, got {other:?}"),
    }
}

pub fn msg(args: &[&str]) -> String {
    err(args).to_string()
}
