//! `cargo xtask wheel`: distribution wheels and an sdist, smoke-tested.
//!
//! Without `--local`: manylinux2014 x86-64 wheels built with the `dist`
//! profile through `maturin --zig` for CPython 3.11–3.15, 3.14t and 3.15t
//! (maturin cross-compiles from its bundled sysconfig, so no interpreter is
//! needed), plus an sdist that is built once to prove it builds.
//! `maturin[zig]` is a large download, so it lives in its own venv
//! (`target/wheel-venv`), away from the per-commit CI path.
//! With `--local`: one plain wheel per tested interpreter (no zig).
//! Either way the wheel of each tested version (3.11–3.15; 3.14 and 3.15 in
//! the Debian chroot) goes into a fresh venv of that interpreter and a smoke
//! test runs; 3.14t and 3.15t have no interpreter obtainable here and are
//! only built. Every wheel built here is a
//! shipped build: none has loop-py's `test-hooks` feature, which the smoke
//! test checks in the installed package and every wheel's files are checked
//! for ([`NO_TEST_HOOKS`]).

use crate::cmd;
use crate::pythons::{Place, Python, COMPILE_CHECKED, TESTED};
use crate::venv::Venv;
use std::path::{Path, PathBuf};

/// Fails when a wheel named on the command line holds the test hooks
/// (`ferroloop._native._testing`, loop-py's `test-hooks` feature): a file
/// named for them, or the submodule's name inside the extension.
const NO_TEST_HOOKS: &str = r#"
import sys, zipfile
for path in sys.argv[1:]:
    with zipfile.ZipFile(path) as wheel:
        for name in wheel.namelist():
            assert "_testing" not in name.rsplit("/", 1)[-1], f"{path}: test hooks file {name}"
            if name.endswith(".so"):
                assert b"ferroloop._native._testing" not in wheel.read(name), (
                    f"{path}: {name} was built with the test-hooks feature"
                )
print(f"no test hooks in {len(sys.argv) - 1} wheel(s)")
"#;

const SMOKE_TEST: &str = r#"
import asyncio, importlib, ferroloop
from ferroloop import _native

# A shipped wheel has no test hooks (loop-py's test-hooks feature).
hooks = [name for name in dir(_native) if name.startswith("_test")]
assert not hooks, f"the shipped wheel has test hooks in ferroloop._native: {hooks}"
try:
    importlib.import_module("ferroloop._native._testing")
except ImportError:
    pass
else:
    raise AssertionError("the shipped wheel has ferroloop._native._testing")

SMOKE_APP = """
async def app(scope, receive, send):
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})
"""

async def echo(reader, writer):
    writer.write(await reader.read(100))
    await writer.drain()
    writer.close()

async def main():
    loop = asyncio.get_running_loop()
    assert isinstance(loop, ferroloop.Loop), type(loop)
    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"smoke")
        data = await reader.read(100)
        writer.close()
        await writer.wait_closed()
    return data

assert ferroloop.run(main()) == b"smoke"

import socket, subprocess, sys, time
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1]
probe.close()
code = f"import ferroloop; ferroloop.serve(app, '127.0.0.1', {port}, lifespan='off', log_level='warning')"
script = "import sys\n" + SMOKE_APP + "\n" + code
server = subprocess.Popen([sys.executable, "-c", script])
try:
    for _ in range(100):
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except OSError:
            time.sleep(0.05)
    conn.sendall(b"GET / HTTP/1.1\r\nHost: smoke\r\nConnection: close\r\n\r\n")
    reply = b""
    while chunk := conn.recv(4096):
        reply += chunk
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n") and reply.endswith(b"\r\n\r\nok"), reply
finally:
    server.terminate()
    assert server.wait(timeout=30) == 0, server.returncode
print("smoke test passed: ferroloop", ferroloop.__version__, "TCP echo and serve() ok, no test hooks")
"#;

fn out_dir() -> PathBuf {
    cmd::root().join("target").join("wheels")
}

fn files_with_suffix(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(suffix))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// A venv holding `maturin[zig]`, created on first use.
fn zig_venv() -> Result<Venv, String> {
    let venv = Venv {
        dir: cmd::root().join("target").join("wheel-venv"),
        place: Place::Host,
    };
    if !venv.python().exists() {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        cmd::run(cmd::new(&python).args(["-m", "venv"]).arg(&venv.dir))?;
    }
    let ready = cmd::new(venv.python())
        .args(["-c", "import maturin, ziglang"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ready {
        cmd::run(cmd::new(venv.python()).args([
            "-m",
            "pip",
            "install",
            "-q",
            "maturin[zig]>=1.7,<2",
        ]))?;
    }
    Ok(venv)
}

/// Manylinux wheels for every tested and compile-checked CPython, and the sdist.
pub fn distribution() -> Result<Vec<PathBuf>, String> {
    let venv = zig_venv()?;
    let out = out_dir().join("manylinux");
    let _ = std::fs::remove_dir_all(&out);
    // `python -m ziglang` must be on PATH for maturin to find zig.
    let path = format!(
        "{}:{}",
        venv.dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let labels = TESTED
        .iter()
        .copied()
        .chain(COMPILE_CHECKED.iter().map(|(label, _, _)| *label));
    for python in labels {
        cmd::run(
            cmd::new(venv.bin("maturin"))
                .args([
                    "build",
                    "--profile",
                    "dist",
                    "--zig",
                    "--compatibility",
                    "manylinux2014",
                ])
                .args(["--target", "x86_64-unknown-linux-gnu", "-i"])
                .arg(format!("python{python}"))
                .arg("--out")
                .arg(&out)
                .env("PATH", &path)
                .env("CARGO_TARGET_DIR", cmd::root().join("target").join("zig")),
        )?;
    }
    cmd::run(
        cmd::new(venv.bin("maturin"))
            .args(["sdist", "--out"])
            .arg(&out),
    )?;
    // The sdist must build: pip builds a wheel from it in isolation.
    let sdist = files_with_suffix(&out, ".tar.gz")
        .pop()
        .ok_or("maturin wrote no sdist")?;
    let from_sdist = out.join("from-sdist");
    cmd::run(
        cmd::new(venv.python())
            .args(["-m", "pip", "wheel", "-q", "--no-deps", "-w"])
            .arg(&from_sdist)
            .arg(&sdist)
            .env("CARGO_TARGET_DIR", cmd::root().join("target").join("sdist")),
    )?;
    let _ = std::fs::remove_dir_all(&from_sdist);
    let wheels = files_with_suffix(&out, ".whl");
    check_no_test_hooks(&venv.python(), &wheels)?;
    Ok(wheels)
}

/// Check that none of `wheels` holds the test hooks ([`NO_TEST_HOOKS`]),
/// with the host interpreter `python` (any will do: it only reads the
/// files).
pub fn check_no_test_hooks(python: &Path, wheels: &[PathBuf]) -> Result<(), String> {
    let script = cmd::root().join("target").join("check_no_test_hooks.py");
    std::fs::write(&script, NO_TEST_HOOKS).map_err(|e| format!("{}: {e}", script.display()))?;
    cmd::run(cmd::new(python).arg(&script).args(wheels))
}

/// Install `wheel` into a fresh venv of `python` and run the smoke test
/// there; it also checks that the wheel has no test hooks.
pub fn smoke_test(wheel: &Path, python: &Python) -> Result<(), String> {
    check_no_test_hooks(
        &crate::pythons::default_interpreter(),
        &[wheel.to_path_buf()],
    )?;
    let venv = Venv {
        dir: cmd::root()
            .join("target")
            .join("smoke-venv")
            .join(python.label()),
        place: python.place.clone(),
    };
    let _ = std::fs::remove_dir_all(&venv.dir);
    venv.run(
        cmd::new(&python.executable)
            .args(["-m", "venv"])
            .arg(&venv.dir),
    )?;
    venv.run(
        cmd::new(venv.python())
            .args(["-m", "pip", "install", "-q", "--no-deps"])
            .arg(wheel),
    )?;
    let script = venv.dir.join("smoke_test.py");
    std::fs::write(&script, SMOKE_TEST).map_err(|e| format!("{}: {e}", script.display()))?;
    // Run from outside the repository so the source tree cannot shadow it
    // (`/tmp` exists on the host and in the chroot).
    venv.run(cmd::new(venv.python()).arg(&script).current_dir("/tmp"))
}

/// The wheel among `wheels` for CPython `version` (`3.12` → `cp312-cp312`).
pub fn for_version(version: &str, wheels: &[PathBuf]) -> Result<PathBuf, String> {
    let tag = format!("cp{0}-cp{0}-", version.replace('.', ""));
    wheels
        .iter()
        .find(|w| {
            w.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(&tag))
        })
        .cloned()
        .ok_or_else(|| format!("no wheel for CPython {version} ({tag}) among {wheels:?}"))
}
