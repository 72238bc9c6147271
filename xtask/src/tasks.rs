//! The tasks behind `cargo xtask …`.

use crate::cmd;
use crate::venv::{self, Venv};
use crate::wheel;
use std::path::PathBuf;

/// maturin and `cargo test` get separate target dirs: alternating them in
/// one rebuilds pyo3 each time (its build config differs).
fn maturin_target() -> PathBuf {
    cmd::root().join("target").join("maturin")
}

/// Build a wheel (`profile`: release or dist) for the venv's interpreter.
fn build_wheel(venv: &Venv, profile: &str) -> Result<PathBuf, String> {
    let out = cmd::root().join("target").join("wheels").join(profile);
    let _ = std::fs::remove_dir_all(&out);
    cmd::run(
        cmd::new(venv.bin("maturin"))
            .args(["build", "--profile", profile, "--interpreter"])
            .arg(venv.python())
            .arg("--out")
            .arg(&out)
            .env("CARGO_TARGET_DIR", maturin_target()),
    )?;
    let wheel = std::fs::read_dir(&out)
        .map_err(|e| format!("no wheel in {}: {e}", out.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("maturin wrote no wheel into {}", out.display()))?;
    Ok(wheel)
}

/// Build a wheel and install it into the venv, replacing any editable
/// install: tests run against what users install.
fn build_and_install_wheel(venv: &Venv, profile: &str) -> Result<PathBuf, String> {
    let wheel = build_wheel(venv, profile)?;
    cmd::run(
        cmd::new(venv.python())
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "--force-reinstall",
                "--no-deps",
            ])
            .arg(&wheel),
    )?;
    Ok(wheel)
}

pub fn develop() -> Result<(), String> {
    let venv = venv::ensure()?;
    cmd::run(
        cmd::new(venv.bin("maturin"))
            .args(["develop", "--release"])
            .env("VIRTUAL_ENV", &venv.dir)
            .env("CARGO_TARGET_DIR", maturin_target()),
    )
}

/// `wheel --local`: a plain wheel for the local interpreter, installed into
/// the project venv (the tests run against it). Without `--local`:
/// manylinux wheels for every supported CPython and an sdist (see
/// `wheel.rs`). Either way the local wheel is smoke-tested in a fresh venv.
pub fn wheel(args: &[String]) -> Result<(), String> {
    let venv = venv::ensure()?;
    let local = if args.iter().any(|a| a == "--local") {
        build_and_install_wheel(&venv, "release")?
    } else {
        let wheels = wheel::distribution()?;
        for built in &wheels {
            println!("built {}", built.display());
        }
        wheel::for_local_interpreter(&venv, &wheels)?
    };
    wheel::smoke_test(&local)?;
    println!("smoke-tested {}", local.display());
    Ok(())
}

pub fn demo() -> Result<(), String> {
    let venv = venv::ensure()?;
    build_and_install_wheel(&venv, "release")?;
    cmd::run(cmd::new(venv.python()).arg("examples/demo.py"))
}

pub fn conformance(args: &[String]) -> Result<(), String> {
    let venv = venv::ensure()?;
    let has_ferroloop = cmd::new(venv.python())
        .args(["-c", "import ferroloop"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_ferroloop {
        build_and_install_wheel(&venv, "release")?;
    }
    let mut run = cmd::new(venv.python());
    run.args(["tests/conformance/run.py"]);
    if !args
        .iter()
        .any(|a| a == "--loop" || a.starts_with("--loop="))
    {
        run.args(["--loop", "ferroloop"]);
    }
    cmd::run(run.args(args))
}

/// Where the benchmarks' own binaries are built: a target dir no other
/// `cargo xtask` invocation rebuilds under a running benchmark.
fn bench_target() -> PathBuf {
    cmd::root().join("target").join("xtask-bench")
}

/// Build the echo suite's load generator (`xtask echo-client`) optimized.
fn build_echo_client() -> Result<PathBuf, String> {
    let target = bench_target();
    cmd::run(
        cmd::new("cargo")
            .args(["build", "--quiet", "--release", "-p", "xtask"])
            .env("CARGO_TARGET_DIR", &target),
    )?;
    Ok(target.join("release").join("xtask"))
}

/// Build the HTTP suite's pure-Rust ceiling (`loop-http`'s `plaintext`
/// example) with the `dist` profile; `None` when the example does not exist
/// (the suite then reports `rust-plaintext` as unavailable).
fn build_plaintext_server() -> Result<Option<PathBuf>, String> {
    let source = cmd::root().join("loop-http/examples/plaintext.rs");
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
                "dist",
                "-p",
                "loop-http",
                "--example",
                "plaintext",
            ])
            .env("CARGO_TARGET_DIR", &target),
    )?;
    Ok(Some(target.join("dist").join("examples").join("plaintext")))
}

/// The suites `bench` knows; without one it runs `all` of them.
const BENCH_SUITES: &[&str] = &["sched", "echo", "http", "all", "compare"];

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
    let mut run = cmd::new(venv.python());
    run.arg("bench/bench.py").arg(suite);
    if suite == "compare" {
        return cmd::run(run.args(rest));
    }
    if matches!(suite, "echo" | "all") {
        run.arg("--client").arg(build_echo_client()?);
    }
    if matches!(suite, "http" | "all") {
        if let Some(server) = build_plaintext_server()? {
            run.arg("--plaintext").arg(server);
        }
    }
    let wheel = build_wheel(&venv, "dist")?;
    run.arg("--ferroloop-wheel").arg(&wheel);
    cmd::run(run.args(rest))
}

/// Everything CI checks, in the order that fails fastest.
pub fn test(args: &[String]) -> Result<(), String> {
    let quick = args.iter().any(|a| a == "--no-conformance");
    cmd::run(cmd::new("cargo").args(["fmt", "--all", "--", "--check"]))?;
    let venv = venv::ensure()?;
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
    let mut unit = cmd::new("cargo");
    unit.args(["test", "--workspace"]);
    with_python(&mut unit);
    cmd::run(&mut unit)?;
    // The portable poller backend, forced on Linux.
    cmd::run(
        cmd::new("cargo")
            .args(["test", "-p", "loop-core"])
            .env("RUSTFLAGS", "--cfg ferroloop_force_polling")
            .env(
                "CARGO_TARGET_DIR",
                cmd::root().join("target").join("polling"),
            ),
    )?;
    check_versions()?;
    build_and_install_wheel(&venv, "release")?;
    // pytest's exit code 5 (no tests collected) is a failure like any other.
    cmd::run(cmd::new(venv.python()).args(["-m", "pytest", "-q", "-p", "no:cacheprovider"]))?;
    if !quick {
        cmd::run(cmd::new(venv.python()).args([
            "tests/conformance/run.py",
            "--loop",
            "ferroloop",
        ]))?;
    }
    Ok(())
}

/// CPython versions the extension must build for besides the local one,
/// as (label, version, free-threaded).
const OTHER_PYTHONS: &[(&str, &str, bool)] = &[
    ("3.12", "3.12", false),
    ("3.13", "3.13", false),
    ("3.14", "3.14", false),
    ("3.14t", "3.14", true),
];

/// Compile-check `loop-py` for each CPython in [`OTHER_PYTHONS`] without
/// their interpreters: a pyo3 config file describes each target, so the
/// version cfgs (`Py_3_13`, `Py_GIL_DISABLED`, …) and FFI are the real
/// ones. Behaviour is only verified on the local 3.11.
pub fn check_versions() -> Result<(), String> {
    let dir = cmd::root().join("target").join("pyo3-configs");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (label, version, free_threaded) in OTHER_PYTHONS {
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
                .args(["check", "-p", "loop-py", "--lib"])
                .env("PYO3_CONFIG_FILE", &path)
                .env("RUSTFLAGS", "-D warnings")
                .env(
                    "CARGO_TARGET_DIR",
                    cmd::root().join("target").join("check").join(label),
                ),
        )?;
    }
    Ok(())
}
