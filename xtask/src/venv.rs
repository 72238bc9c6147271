//! The project venvs: `.venv` for the default interpreter (`$PYTHON`, else
//! `python3`; the test build, benchmarks and development live there),
//! `.venv-X.Y` for each other tested version and `.venv-X.Y-dbg` for a debug
//! build, each provisioned with the build and test dependencies; and
//! `.venv-demo`, a user's venv holding the shipped build (`cargo xtask
//! demo`). Each is created on first use, where its interpreter runs (the
//! host or the Debian chroot, which sees the checkout at the same path).

use crate::cmd;
use crate::pythons::{self, Place, Python};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Packages every task needs in a venv.
const BASE_PACKAGES: &[&str] = &[
    "maturin>=1.7,<2",
    "pytest>=8",
    "pytest-timeout>=2",
    // The suite runs on two workers (`cargo xtask test`): half the wall time.
    "pytest-xdist>=3",
    "anyio>=4.1",
    // Stacks and peers the tests run with the loop.
    // One series: tests/cli walks this uvicorn's options and pins its version.
    "uvicorn==0.55.*",
    "httpx>=0.27",
    "aiohttp>=3.9",
    "trustme>=1",
    // tests/_tls.py writes keys, expired certificates and CRLs with it
    // directly (trustme depends on it; named because the tests import it).
    "cryptography>=42",
    // ASGI frameworks and clients the native HTTP server's tests run.
    "starlette>=0.40",
    "fastapi>=0.115",
    "websockets>=13",
    // tests/metrics parses the /metrics exposition with its parser.
    "prometheus_client>=0.20",
    // `--log-config` YAML files.
    "pyyaml>=6",
    // The Autobahn|Testsuite's cases on Python 3 (tests/ws/test_ws_autobahn.py).
    "kosoku>=0.1",
    // ferroloop.Queue is tested on uvloop too (tests/test_queue*.py).
    "uvloop>=0.21",
    // tests/workers: ferroloop.gunicorn.Worker under real gunicorn.
    "gunicorn>=23",
    // --reload's file watcher (ferroloop[reload]); the reload tests use it.
    "watchfiles>=0.21",
];

/// The import names of [`BASE_PACKAGES`], to tell whether a venv is ready.
const BASE_IMPORTS: &str =
    "import maturin, pytest, pytest_timeout, xdist, anyio, uvicorn, httpx, aiohttp, trustme, cryptography, starlette, fastapi, websockets, prometheus_client, yaml, kosoku, uvloop, gunicorn, watchfiles";

/// What a user's venv needs for `examples/demo.py` besides ferroloop: its
/// HTTP and WebSocket clients.
const DEMO_PACKAGES: &[&str] = &["httpx>=0.27", "websockets>=13"];
const DEMO_IMPORTS: &str = "import httpx, websockets";

/// A venv's packages: what to install, and the imports that tell they are.
struct Packages {
    install: &'static [&'static str],
    imports: &'static str,
}

const BASE: Packages = Packages {
    install: BASE_PACKAGES,
    imports: BASE_IMPORTS,
};

pub struct Venv {
    pub dir: PathBuf,
    /// Where its interpreter runs; every command using the venv runs there.
    pub place: Place,
}

impl Venv {
    /// Run `cmd` (one of this venv's programs) where the venv lives.
    pub fn run(&self, cmd: &mut Command) -> Result<(), String> {
        self.place.run(cmd)
    }

    /// `run`, returning its trimmed stdout.
    pub fn output(&self, cmd: &mut Command) -> Result<String, String> {
        self.place.output(cmd)
    }

    /// Whether `python -c script` succeeds in the venv.
    pub fn python_succeeds(&self, script: &str) -> bool {
        self.place
            .succeeds(cmd::new(self.python()).args(["-c", script]))
    }

    /// It was created (its interpreter link may point into the chroot, so
    /// the link's target is not what tells).
    fn exists(&self) -> bool {
        self.dir.join("pyvenv.cfg").is_file()
    }

    pub fn python(&self) -> PathBuf {
        self.dir.join("bin").join("python")
    }

    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("bin").join(name)
    }

    /// `major.minor` of the venv's interpreter.
    pub fn version(&self) -> Result<String, String> {
        pythons::version_at(&self.place, &self.python())
            .ok_or_else(|| format!("{} does not run", self.python().display()))
    }

    /// libpython of the venv's interpreter, for Rust tests that embed it.
    pub fn libdir(&self) -> Result<String, String> {
        self.output(cmd::new(self.python()).args([
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))",
        ]))
    }
}

/// The default venv (`.venv`), created and provisioned if missing.
pub fn ensure() -> Result<Venv, String> {
    provision(
        cmd::root().join(".venv"),
        &pythons::default_interpreter(),
        Place::Host,
        &BASE,
    )
}

/// The demo's venv (`.venv-demo`): a user's, with the shipped build and the
/// demo's two clients, none of the test tools.
pub fn demo() -> Result<Venv, String> {
    let demo = Packages {
        install: DEMO_PACKAGES,
        imports: DEMO_IMPORTS,
    };
    provision(
        cmd::root().join(".venv-demo"),
        &pythons::default_interpreter(),
        Place::Host,
        &demo,
    )
}

/// The venv of `python`: `.venv` when it is the default interpreter's
/// version on the host, else `.venv-LABEL` (`.venv-3.12`, `.venv-3.14-dbg`).
pub fn for_python(python: &Python) -> Result<Venv, String> {
    let default = pythons::default_interpreter();
    if python.place == Place::Host
        && !python.debug
        && pythons::version_of(&default).as_deref() == Some(python.version.as_str())
    {
        return provision(cmd::root().join(".venv"), &default, Place::Host, &BASE);
    }
    provision(
        cmd::root().join(format!(".venv-{}", python.label())),
        &python.executable,
        python.place.clone(),
        &BASE,
    )
}

fn provision(
    dir: PathBuf,
    interpreter: &Path,
    place: Place,
    packages: &Packages,
) -> Result<Venv, String> {
    let venv = Venv { dir, place };
    if !venv.exists() {
        venv.run(cmd::new(interpreter).args(["-m", "venv"]).arg(&venv.dir))?;
        venv.run(cmd::new(venv.python()).args(["-m", "pip", "install", "-q", "--upgrade", "pip"]))?;
    }
    let wanted = pythons::version_at(&venv.place, interpreter);
    let have = venv.version()?;
    if wanted.as_deref().is_some_and(|w| w != have) {
        return Err(format!(
            "{} is a CPython {have} venv, but {} is CPython {}: delete the venv to recreate it",
            venv.dir.display(),
            interpreter.display(),
            wanted.unwrap_or_default()
        ));
    }
    if !venv.python_succeeds(packages.imports) {
        venv.run(
            cmd::new(venv.python())
                .args(["-m", "pip", "install", "-q"])
                .args(packages.install),
        )?;
    }
    Ok(venv)
}
