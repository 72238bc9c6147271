//! The tasks behind `cargo xtask …`.

use crate::cmd;
use crate::pythons::{self, Place, Python, Selection, COMPILE_CHECKED, DEBUG_BUILD};
use crate::venv::{self, Venv};
use crate::wheel;
use std::path::PathBuf;

/// Which ferroloop a build makes: the one users install, or the test build
/// with loop-py's `test-hooks` feature (`ferroloop._native._testing`), which
/// only the project venvs hold (pytest needs the hooks). Shipped wheels,
/// release artifacts and benchmarks never have the feature.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Build {
    Shipped,
    TestHooks,
}

impl Build {
    /// Directory-name suffix keeping the two builds' outputs apart.
    fn suffix(self) -> &'static str {
        match self {
            Build::Shipped => "",
            Build::TestHooks => "-test-hooks",
        }
    }

    fn cargo_features(self) -> &'static [&'static str] {
        match self {
            Build::Shipped => &[],
            Build::TestHooks => &["--features", "test-hooks"],
        }
    }
}

/// maturin gets its own target dir (alternating it with `cargo test` in one
/// would rebuild pyo3 each time: its build config differs), one for every
/// CPython version and both builds. Only pyo3 and loop-py depend on the
/// interpreter or the `test-hooks` feature, and everything else (rustls,
/// ring, the other loop crates: ~110 of a clean build's ~125 s here) is
/// compiled once per run instead of six times. The price is on local
/// reruns: the extension's file name does not carry the feature set or the
/// version, so each switch recompiles loop-py (~15 s) and each version
/// switch pyo3 too (see docs/decisions.md, "CI time"). Interpreters in the
/// Debian chroot get a dir of their own (`debian`): its C library is newer
/// than the host's, so a build script compiled there may not run here.
fn maturin_target(place: &Place) -> PathBuf {
    cmd::root()
        .join("target")
        .join("maturin")
        .join(place.target_family())
}

/// Build a wheel (`profile`: release or dist) for the venv's interpreter.
fn build_wheel(venv: &Venv, profile: &str, build: Build) -> Result<PathBuf, String> {
    build_wheel_with(venv, &venv.python(), profile, build)
}

/// Build a wheel with `builder`'s maturin for `interpreter` (which runs
/// where `builder` does: the host or the chroot).
fn build_wheel_with(
    builder: &Venv,
    interpreter: &std::path::Path,
    profile: &str,
    build: Build,
) -> Result<PathBuf, String> {
    let version = crate::pythons::version_at(&builder.place, interpreter)
        .ok_or_else(|| format!("{} does not run", interpreter.display()))?;
    let out = cmd::root()
        .join("target")
        .join("wheels")
        .join(format!("{profile}{}", build.suffix()))
        .join(&version);
    let _ = std::fs::remove_dir_all(&out);
    builder.run(
        cmd::new(builder.bin("maturin"))
            .args(["build", "--profile", profile, "--interpreter"])
            .arg(interpreter)
            .args(build.cargo_features())
            .arg("--out")
            .arg(&out)
            .env("CARGO_TARGET_DIR", maturin_target(&builder.place)),
    )?;
    let wheel = std::fs::read_dir(&out)
        .map_err(|e| format!("no wheel in {}: {e}", out.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("maturin wrote no wheel into {}", out.display()))?;
    Ok(wheel)
}

/// Install `wheel` into the venv, replacing any editable install: tests run
/// against a built wheel.
fn install_wheel(venv: &Venv, wheel: &std::path::Path) -> Result<(), String> {
    venv.run(
        cmd::new(venv.python())
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "--force-reinstall",
                "--no-deps",
            ])
            .arg(wheel),
    )
}

/// `gen-settings`: loop-cli's staleness test for the files generated from
/// its settings table, in its rewrite mode (`loop-cli/tests/generated.rs`).
pub fn gen_settings() -> Result<(), String> {
    cmd::run(
        cmd::new("cargo")
            .args(["test", "-p", "loop-cli", "--test", "generated"])
            .env("FERROLOOP_REGENERATE", "1"),
    )
}

/// Build the test build's wheel and install it into the (project) venv.
fn build_and_install_test_wheel(venv: &Venv) -> Result<PathBuf, String> {
    let wheel = build_wheel(venv, "release", Build::TestHooks)?;
    install_wheel(venv, &wheel)?;
    Ok(wheel)
}

/// `develop [--python V]`: the test build (release, with the test hooks),
/// editable, into the venv of each selected version (default: `.venv`).
pub fn develop(args: &[String]) -> Result<(), String> {
    let venvs = selected_venvs(args, "develop")?;
    for venv in &venvs {
        venv.run(
            cmd::new(venv.bin("maturin"))
                .args(["develop", "--release"])
                .args(Build::TestHooks.cargo_features())
                .env("VIRTUAL_ENV", &venv.dir)
                .env("CARGO_TARGET_DIR", maturin_target(&venv.place)),
        )?;
    }
    Ok(())
}

/// The venvs of the versions `--python` names, or the default venv without
/// it; no other argument is accepted.
fn selected_venvs(args: &[String], task: &str) -> Result<Vec<Venv>, String> {
    let explicit = args
        .iter()
        .any(|a| a == "--python" || a.starts_with("--python="));
    let (selection, rest) = Selection::parse(args)?;
    if let Some(unknown) = rest.first() {
        return Err(format!("{task}: unknown argument `{unknown}`"));
    }
    if !explicit {
        return Ok(vec![venv::ensure()?]);
    }
    selection.resolve()?.iter().map(venv::for_python).collect()
}

/// `wheel --local`: a plain wheel per selected CPython version (`--python`,
/// default all tested ones). Without `--local`: manylinux wheels for every
/// supported CPython and an sdist (see `wheel.rs`). Either way these are
/// shipped builds (no test hooks), and each tested version's wheel is
/// smoke-tested in a fresh venv of that interpreter; the project venvs keep
/// their test build.
pub fn wheel(args: &[String]) -> Result<(), String> {
    let (selection, rest) = Selection::parse(args)?;
    let pythons = selection.resolve()?;
    let local = rest.iter().any(|a| a == "--local");
    let distribution = if local {
        vec![]
    } else {
        wheel::distribution()?
    };
    for built in &distribution {
        println!("built {}", built.display());
    }
    for python in &pythons {
        let wheel = if local {
            build_wheel(&venv::for_python(python)?, "release", Build::Shipped)?
        } else {
            wheel::for_version(&python.version, &distribution)?
        };
        wheel::smoke_test(&wheel, python)?;
        println!(
            "smoke-tested {} on CPython {}",
            wheel.display(),
            python.version
        );
    }
    Ok(())
}

/// `demo`: the shipped build (what `pip install` gives a user, no test
/// hooks) into `.venv-demo`, then `examples/demo.py` there. The test venvs
/// keep their test build.
pub fn demo() -> Result<(), String> {
    let venv = venv::demo()?;
    // maturin is the test venv's (the demo venv has no build tools).
    let builder = venv::ensure()?;
    let wheel = build_wheel_with(&builder, &venv.python(), "release", Build::Shipped)?;
    install_wheel(&venv, &wheel)?;
    cmd::run(cmd::new(venv.python()).arg("examples/demo.py"))
}

/// `conformance [--python V] [ARGS]`: CPython's asyncio suite of each
/// selected interpreter (default: the default venv's) against ferroloop.
pub fn conformance(args: &[String]) -> Result<(), String> {
    let explicit = args
        .iter()
        .any(|a| a == "--python" || a.starts_with("--python="));
    let (selection, rest) = Selection::parse(args)?;
    let venvs = if explicit {
        selection
            .resolve()?
            .iter()
            .map(venv::for_python)
            .collect::<Result<Vec<_>, _>>()?
    } else {
        vec![venv::ensure()?]
    };
    for venv in &venvs {
        if !venv.python_succeeds("import ferroloop") {
            build_and_install_test_wheel(venv)?;
        }
        let mut run = cmd::new(venv.python());
        run.args(["tests/conformance/run.py"]);
        if !rest
            .iter()
            .any(|a| a == "--loop" || a.starts_with("--loop="))
        {
            run.args(["--loop", "ferroloop"]);
        }
        venv.run(run.args(&rest))?;
    }
    Ok(())
}

/// Where the benchmarks' own binaries are built: a target dir no other
/// `cargo xtask` invocation rebuilds under a running benchmark. (Building
/// them in the wheels' dir instead saves ~10 s CPU only: the example's
/// dev-dependencies and xtask's rustls features resolve differently, so
/// most dependencies are compiled again anyway.)
fn bench_target() -> PathBuf {
    cmd::root().join("target").join("xtask-bench")
}

/// Build the echo and WebSocket suites' load generators (`xtask
/// echo-client`, `xtask ws-client`) optimized.
fn build_echo_client() -> Result<PathBuf, String> {
    let target = bench_target();
    cmd::run(
        cmd::new("cargo")
            .args(["build", "--quiet", "--release", "-p", "xtask"])
            .env("CARGO_TARGET_DIR", &target),
    )?;
    Ok(target.join("release").join("xtask"))
}

/// Build the HTTP suite's pure-Rust ceiling (`loop-server`'s `server`
/// example: the server's driver, protocol kinds and settings with a Rust
/// handler) with `profile`; `None` when the example does not exist (the
/// suite then reports `rust-plaintext` as unavailable).
fn build_plaintext_server(profile: &str) -> Result<Option<PathBuf>, String> {
    let source = cmd::root().join("loop-server/examples/server.rs");
    if !source.exists() {
        eprintln!(
            "xtask: {} does not exist; the HTTP suite runs without rust-plaintext",
            source.display()
        );
        return Ok(None);
    }
    let target = bench_target();
    cmd::run(
        cmd::new("cargo")
            .args([
                "build",
                "--quiet",
                "--profile",
                profile,
                "-p",
                "loop-server",
                "--example",
                "server",
            ])
            .env("CARGO_TARGET_DIR", &target),
    )?;
    Ok(Some(target.join(profile).join("examples").join("server")))
}

/// The suites `bench` knows; without one it runs `all` of them.
const BENCH_SUITES: &[&str] = &[
    "sched", "echo", "http", "ws", "tls", "workers", "toolkit", "all", "compare",
];

pub fn bench(args: &[String]) -> Result<(), String> {
    let venv = venv::ensure()?;
    let (suite, rest) = match args.first() {
        Some(first) if !first.starts_with('-') => (first.as_str(), &args[1..]),
        _ => ("all", args),
    };
    if !BENCH_SUITES.contains(&suite) {
        return Err(format!(
            "unknown benchmark suite `{suite}` (known: {})",
            BENCH_SUITES.join(", ")
        ));
    }
    // `--quick` (CI's check that every suite runs and verifies; its figures
    // are never reported) uses the release build `test` already made
    // instead of spending a minute on fat-LTO `dist` builds.
    let profile = if rest.iter().any(|a| a == "--quick") {
        "release"
    } else {
        "dist"
    };
    let mut run = cmd::new(venv.python());
    run.arg("bench/bench.py").arg(suite);
    if suite == "compare" {
        return cmd::run(run.args(rest));
    }
    if matches!(suite, "echo" | "ws" | "tls" | "all") {
        run.arg("--client").arg(build_echo_client()?);
    }
    if matches!(suite, "http" | "all") {
        if let Some(server) = build_plaintext_server(profile)? {
            run.arg("--plaintext").arg(server);
        }
    }
    // Benchmarks measure what users install.
    let wheel = build_wheel(&venv, profile, Build::Shipped)?;
    run.arg("--ferroloop-wheel").arg(&wheel);
    cmd::run(run.args(rest))
}

/// Everything CI checks, in the order that fails fastest: the Rust checks
/// once, then for each tested CPython version (`--python` narrows them) its
/// shipped wheel smoke-tested in a fresh venv (which also checks it has no
/// test hooks), the test build (with them) installed into its venv, pytest
/// and the version's own asyncio suite (`--no-conformance` skips the
/// latter).
/// The test modules run a second time with `FERROLOOP_BACKEND=epoll`:
/// the transports (asyncio's API over the native cores) and the server.
const EPOLL_RERUN: &[&str] = &[
    "tests/test_streams.py",
    "tests/test_sockets.py",
    "tests/test_datagram.py",
    "tests/test_pipes_subprocess.py",
    "tests/test_io_callbacks.py",
    "tests/test_transport_failures.py",
    "tests/test_transport_paths.py",
    "tests/test_transport_protocols.py",
    "tests/test_transport_stress.py",
    "tests/test_tls.py",
    "tests/tls",
    "tests/http",
    "tests/ws",
    "tests/workers",
];

pub fn test(args: &[String]) -> Result<(), String> {
    let (selection, rest) = Selection::parse(args)?;
    let quick = rest.iter().any(|a| a == "--no-conformance");
    if let Some(unknown) = rest.iter().find(|a| *a != "--no-conformance") {
        return Err(format!("test: unknown argument `{unknown}`"));
    }
    // Every interpreter is found before anything is built: a missing one
    // fails at once, naming it.
    let pythons = selection.resolve()?;
    let started = std::time::Instant::now();
    cmd::run(cmd::new("cargo").args(["fmt", "--all", "--", "--check"]))?;
    let venvs = pythons
        .iter()
        .map(venv::for_python)
        .collect::<Result<Vec<_>, _>>()?;
    // The Rust checks embed a host interpreter (cargo runs on the host).
    match venvs.iter().find(|v| v.place == Place::Host) {
        Some(host) => rust_checks(host)?,
        None => rust_checks(&venv::ensure()?)?,
    }
    check_versions()?;
    let mut timings = vec![("Rust checks".to_string(), started.elapsed())];
    for (python, venv) in pythons.iter().zip(&venvs) {
        let version_started = std::time::Instant::now();
        eprintln!(
            "== CPython {} ({}{})",
            python.version,
            python.executable.display(),
            match &python.place {
                Place::Host => String::new(),
                Place::Debian(chroot) => format!(" in the chroot at {}", chroot.root.display()),
            }
        );
        let shipped = build_wheel(venv, "release", Build::Shipped)?;
        wheel::smoke_test(&shipped, python)?;
        build_and_install_test_wheel(venv)?;
        let first = python.version == pythons[0].version;
        let serial = std::env::var_os("FERROLOOP_XTASK_SERIAL").is_some();
        let mut conformance = None;
        if !quick {
            let mut suite = cmd::new(venv.python());
            suite.args(["tests/conformance/run.py", "--loop", "ferroloop"]);
            if first {
                // The out-of-scope tests run too, once, for information only
                // (never in the verdict): a stale scope entry shows.
                suite.arg("--include-out-of-scope");
            }
            if serial {
                venv.run(&mut suite)?;
            } else {
                // In the background, one child at a time, while pytest runs:
                // its two workers leave close to a core idle.
                suite.args(["--jobs", "1"]);
                let log = cmd::root()
                    .join("target")
                    .join("conformance")
                    .join(format!("{}.log", python.label()));
                conformance = Some(venv.place.spawn_logged(&mut suite, &log)?);
            }
        }
        let scope = if first {
            Scope::Everything
        } else if SERVER_ON_EVERY_VERSION_FROM <= python.version.as_str() {
            Scope::PerInterpreter
        } else {
            Scope::LoopOnly
        };
        let tested = pytest(venv, scope).and_then(|()| {
            if !first {
                return Ok(());
            }
            // The default backend is io_uring where the kernel allows it;
            // the transport and server modules run again on epoll, once.
            let mut on_epoll = pytest_command(venv, Scope::PerInterpreter);
            on_epoll.args(EPOLL_RERUN).env("FERROLOOP_BACKEND", "epoll");
            venv.run(&mut on_epoll)
        });
        let conformed = conformance.map(cmd::Background::finish).transpose();
        tested?;
        conformed?;
        timings.push((
            format!("CPython {}", python.version),
            version_started.elapsed(),
        ));
    }
    for (what, took) in &timings {
        eprintln!("== {what}: {:.0} s", took.as_secs_f64());
    }
    Ok(())
}

/// The server's test directories: the server's Python layer (the command,
/// the supervisor, the ASGI bridge) run against real clients.
const SERVER_TESTS: &[&str] = &[
    "tests/http",
    "tests/ws",
    "tests/tls",
    "tests/cli",
    "tests/workers",
    "tests/metrics",
];

/// From this version on, every tested version runs the server's tests
/// too; the versions between the first tested one and it (3.12, 3.13)
/// run the loop's, which is where the interpreter's asyncio changes.
/// Compared as strings: every tested version is `3.1X`.
const SERVER_ON_EVERY_VERSION_FROM: &str = "3.14";

/// What pytest runs on a version.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The first version tested: everything, Autobahn (tests/ws/
    /// test_ws_autobahn.py, minutes) and the `once` tests (ferroloop's own
    /// code at length) included: they test what does not depend on the
    /// interpreter, so they run once per run.
    Everything,
    /// Everything but Autobahn and the `once` tests.
    PerInterpreter,
    /// That, without [`SERVER_TESTS`].
    LoopOnly,
}

/// The pytest suite in `venv` (which holds the test build). pytest's exit
/// code 5 (no tests collected) is a failure like any other. Two workers
/// (pytest-xdist), one per core: each test's servers and clients are its
/// own, so the suite takes half the time (319 s → 151 s on 3.11).
fn pytest(venv: &Venv, scope: Scope) -> Result<(), String> {
    venv.run(&mut pytest_command(venv, scope))
}

fn pytest_command(venv: &Venv, scope: Scope) -> std::process::Command {
    let mut pytest = cmd::new(venv.python());
    pytest.args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"]);
    if scope != Scope::Everything {
        pytest.args(["-m", "not autobahn and not once"]);
    }
    if scope == Scope::LoopOnly {
        pytest.args(SERVER_TESTS.iter().map(|dir| format!("--ignore={dir}")));
    }
    pytest
}

/// `test-debug`: the pytest suite once under CPython's debug build of
/// [`DEBUG_BUILD`] (`python3.14-dbg`: reference-count and object assertions
/// on), with the release test build made for that version's release
/// interpreter (the debug build loads release extensions). An assertion or
/// crash there is a bug in the extension's unsafe code.
pub fn test_debug(args: &[String]) -> Result<(), String> {
    if let Some(unknown) = args.first() {
        return Err(format!("test-debug: unknown argument `{unknown}`"));
    }
    let missing = |what: &str| {
        format!(
            "no {what} of CPython {DEBUG_BUILD} found (on PATH or in the Debian chroot at {}; \
             `cargo xtask chroot setup` provides both)",
            crate::chroot::Chroot::configured().root.display()
        )
    };
    let release: Python = pythons::find(DEBUG_BUILD).ok_or_else(|| missing("interpreter"))?;
    let debug: Python = pythons::find_debug(DEBUG_BUILD).ok_or_else(|| missing("debug build"))?;
    let started = std::time::Instant::now();
    let wheel = build_wheel(&venv::for_python(&release)?, "release", Build::TestHooks)?;
    let debug_venv = venv::for_python(&debug)?;
    install_wheel(&debug_venv, &wheel)?;
    let mut pytest = pytest_command(&debug_venv, Scope::PerInterpreter);
    // multidict's C extension (under aiohttp) crashes in this build
    // (PyObject_GC_Track; in the asyncio twins of the tests as well, and
    // built from source too): its pure-Python implementation runs instead.
    pytest.env("MULTIDICT_NO_EXTENSIONS", "1");
    debug_venv.run(&mut pytest)?;
    eprintln!(
        "== pytest under CPython {DEBUG_BUILD}'s debug build: {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// fmt is checked by the caller; clippy (with and without loop-py's test
/// hooks) and the Rust tests (both poller backends) run against `venv`'s
/// interpreter.
fn rust_checks(venv: &Venv) -> Result<(), String> {
    // pyo3 must see the venv's interpreter, and Rust test binaries must load
    // its libpython (not the system's older 3.11).
    let libdir = venv.libdir()?;
    let with_python = |c: &mut std::process::Command| {
        c.env("PYO3_PYTHON", venv.python())
            .env("LD_LIBRARY_PATH", &libdir);
    };
    let mut clippy = cmd::new("cargo");
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    with_python(&mut clippy);
    cmd::run(&mut clippy)?;
    // The test build's extra code (loop-py's test hooks), linted too.
    let mut clippy_hooks = cmd::new("cargo");
    clippy_hooks.args([
        "clippy",
        "-p",
        "loop-py",
        "--all-targets",
        "--features",
        "test-hooks",
        "--",
        "-D",
        "warnings",
    ]);
    with_python(&mut clippy_hooks);
    cmd::run(&mut clippy_hooks)?;
    let mut unit = cmd::new("cargo");
    unit.args(["test", "--workspace"]);
    with_python(&mut unit);
    cmd::run(&mut unit)?;
    // Each library crate as a Rust user would get it from crates.io: packaged
    // and built from its package alone, its workspace dependencies from a
    // local registry (about 20 s on the build above). loop-py is the
    // extension, shipped as wheels.
    cmd::run(cmd::new("cargo").args([
        "publish",
        "--workspace",
        "--dry-run",
        "--allow-dirty",
        "--exclude",
        "xtask",
        "--exclude",
        "loop-py",
    ]))?;
    // The crates under the loop again with epoll as their default backend
    // (the line above ran them on auto: io_uring where the kernel allows
    // it; the reactor's own tests run on both either way). Same build.
    cmd::run(
        cmd::new("cargo")
            .args(["test", "-p", "loop-core", "-p", "loop-transports"])
            .env("FERROLOOP_BACKEND", "epoll"),
    )?;
    // The portable poller backend, forced on Linux (the third backend).
    cmd::run(
        cmd::new("cargo")
            .args(["test", "-p", "loop-core"])
            .env("RUSTFLAGS", "--cfg ferroloop_force_polling")
            .env(
                "CARGO_TARGET_DIR",
                cmd::root().join("target").join("polling"),
            ),
    )
}

/// Compile-check `loop-py` for each CPython in [`COMPILE_CHECKED`] without
/// their interpreters: a pyo3 config file describes each target, so the
/// version cfgs (`Py_3_14`, `Py_GIL_DISABLED`, …) and FFI are the real
/// ones. The versions in `TESTED` are built and tested for real instead.
///
/// One target dir for all of them: only pyo3 and loop-py depend on the
/// config, so each further version re-checks just those (~15 s instead of
/// ~57 s from clean). `-D warnings` goes to loop-py alone (`cargo rustc
/// --profile check`): in `RUSTFLAGS` it would be part of every dependency's
/// fingerprint; the other workspace crates do not depend on the Python
/// version and clippy already denies their warnings.
pub fn check_versions() -> Result<(), String> {
    let dir = cmd::root().join("target").join("pyo3-configs");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (label, version, free_threaded) in COMPILE_CHECKED {
        let abi = if *free_threaded {
            "free_threaded"
        } else {
            "gil_enabled"
        };
        let lib = if *free_threaded {
            format!("python{version}t")
        } else {
            format!("python{version}")
        };
        let config = format!(
            "implementation=CPython\nversion={version}\nshared=true\n\
             target_abi=CPython-{abi}-{version}\nlib_name={lib}\npointer_width=64\n\
             build_flags={}\nsuppress_build_script_link_lines=false\n",
            if *free_threaded {
                "Py_GIL_DISABLED"
            } else {
                ""
            }
        );
        let path = dir.join(format!("{label}.txt"));
        std::fs::write(&path, config).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("== loop-py for CPython {label}");
        cmd::run(
            cmd::new("cargo")
                .args([
                    "rustc",
                    "-p",
                    "loop-py",
                    "--lib",
                    "--profile",
                    "check",
                    "--",
                    "-D",
                    "warnings",
                ])
                .env("PYO3_CONFIG_FILE", &path)
                .env_remove("RUSTFLAGS")
                .env("CARGO_TARGET_DIR", cmd::root().join("target").join("check")),
        )?;
    }
    Ok(())
}
