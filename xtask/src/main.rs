//! `cargo xtask …`: the project's task runner (std only, so it builds fast).
//!
//! | task | what it does |
//! |---|---|
//! | `demo` | build ferroloop into the project venv and run `examples/demo.py` |
//! | `test` | everything CI checks: fmt, clippy, Rust tests (both poller backends), the wheel, pytest, conformance |
//! | `develop` | build and install ferroloop into the venv (release, editable) |
//! | `check-versions` | compile-check the extension for CPython 3.12, 3.13, 3.14 and 3.14t |
//! | `wheel [--local]` | manylinux wheels for CPython 3.11–3.14 and 3.14t plus an sdist (`--local`: one plain wheel for this interpreter, installed into the venv); the local wheel is smoke-tested in a fresh venv |
//! | `conformance [ARGS]` | CPython's asyncio suite against ferroloop (`tests/conformance/run.py`) |
//! | `bench [SUITE] [ARGS]` | side-by-side benchmarks (`bench/bench.py`) on a `dist`-profile wheel |
//! | `echo-client --addr HOST:PORT [ARGS]` | the TCP echo benchmark's load generator (`echo_client.rs`) |

mod cmd;
mod echo_client;
mod tasks;
mod venv;
mod wheel;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <demo|test|develop|wheel [--local]|conformance [ARGS]|\
                     bench [SUITE] [ARGS]|echo-client --addr HOST:PORT [ARGS]>";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(task) = args.next() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest: Vec<String> = args.collect();
    let result = match task.as_str() {
        "demo" => tasks::demo(),
        "test" => tasks::test(&rest),
        "develop" => tasks::develop(),
        "wheel" => tasks::wheel(&rest),
        "check-versions" => tasks::check_versions(),
        "conformance" => tasks::conformance(&rest),
        "bench" => tasks::bench(&rest),
        "echo-client" => echo_client::main(&rest),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown task `{other}`\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
