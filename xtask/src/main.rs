//! `cargo xtask …`: the project's task runner (std only but for the WebSocket client's sha1, base64 and flate2 and the TLS client's rustls, so it builds fast).
//!
//! | task | what it does |
//! |---|---|
//! | `demo` | build ferroloop into the project venv and run `examples/demo.py` |
//! | `test [--python V]` | everything CI checks: fmt, clippy, Rust tests (both poller backends), then per tested CPython (3.11–3.15; `pythons.rs`) its shipped wheel smoke-tested (no test hooks in it), the test build installed, pytest and its asyncio suite |
//! | `test-debug` | the pytest suite under CPython 3.14's debug build (`python3.14-dbg`), with the release test build |
//! | `chroot setup\|teardown\|run -- CMD` | the Debian chroot 3.14, 3.15 and the debug builds run in (`chroot.rs`) |
//! | `develop [--python V]` | build and install ferroloop's test build (release, with the test hooks, editable) into the venv |
//! | `check-versions` | compile-check the extension for the free-threaded CPython 3.14t and 3.15t (no interpreter obtainable) |
//! | `wheel [--local] [--python V]` | manylinux wheels for CPython 3.11–3.15, 3.14t and 3.15t plus an sdist (`--local`: one plain wheel per tested interpreter); each tested version's wheel is smoke-tested in a fresh venv |
//! | `conformance [--python V] [ARGS]` | CPython's asyncio suite of that interpreter against ferroloop (`tests/conformance/run.py`) |
//! | `bench [SUITE] [ARGS]` | side-by-side benchmarks (`bench/bench.py`) on a `dist`-profile wheel |
//! | `echo-client --addr HOST:PORT [ARGS]` | the TCP echo benchmark's load generator (`echo_client.rs`) |
//! | `ws-client --addr HOST:PORT [ARGS]` | the WebSocket benchmark's load generator (`ws_client.rs`, its client-side codec `ws_wire.rs`) |
//! | `tls-client --addr HOST:PORT [ARGS]` | the TLS handshake benchmark's load generator (`tls_client/`: rustls + ring, no resumption unless `--resume`) |
//! | `gen-settings` | rewrite the files generated from loop-cli's settings table (the `Config` stub); `cargo test -p loop-cli` fails while they are stale |

mod chroot;
mod cmd;
mod echo_client;
mod pythons;
mod tasks;
mod tls_client;
mod venv;
mod wheel;
mod ws_client;
mod ws_wire;

use std::process::ExitCode;

const USAGE: &str =
    "usage: cargo xtask <demo|test [--python V] [--allow-missing-python] [--no-conformance]|\
                     test-debug|chroot setup|teardown|run -- CMD|develop [--python V]|wheel [--local] [--python V]|conformance [--python V] [ARGS]|\
                     check-versions|bench [SUITE] [ARGS]|echo-client --addr HOST:PORT [ARGS]|\
                     ws-client --addr HOST:PORT [ARGS]|tls-client --addr HOST:PORT [ARGS]|\
                     gen-settings>";

fn usage() -> String {
    format!(
        "{USAGE}\ntested CPython versions: {} (--python narrows a run)",
        pythons::TESTED.join(", ")
    )
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(task) = args.next() else {
        eprintln!("{}", usage());
        return ExitCode::from(2);
    };
    let rest: Vec<String> = args.collect();
    let result = match task.as_str() {
        "demo" => tasks::demo(),
        "test" => tasks::test(&rest),
        "test-debug" => tasks::test_debug(&rest),
        "chroot" => chroot::task(&rest),
        "develop" => tasks::develop(&rest),
        "wheel" => tasks::wheel(&rest),
        "check-versions" => tasks::check_versions(),
        "conformance" => tasks::conformance(&rest),
        "bench" => tasks::bench(&rest),
        "echo-client" => echo_client::main(&rest),
        "ws-client" => ws_client::main(&rest),
        "tls-client" => tls_client::main(&rest),
        "gen-settings" => tasks::gen_settings(),
        "-h" | "--help" | "help" => {
            println!("{}", usage());
            Ok(())
        }
        other => Err(format!("unknown task `{other}`\n{}", usage())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
