//! The project venv (`.venv` at the root): created on first use with
//! `$PYTHON` (else `python3`), with build and test dependencies.

use crate::cmd;
use std::path::PathBuf;

/// Packages every task needs in the venv.
const BASE_PACKAGES: &[&str] = &[
    "maturin>=1.7,<2",
    "pytest>=8",
    "pytest-timeout>=2",
    "anyio>=4.1",
    // Stacks and peers the tests run with the loop.
    "uvicorn>=0.36",
    "httpx>=0.27",
    "aiohttp>=3.9",
    "trustme>=1",
    // ASGI frameworks and clients the native HTTP server's tests run.
    "starlette>=0.40",
    "fastapi>=0.115",
    "websockets>=13",
];

pub struct Venv {
    pub dir: PathBuf,
}

impl Venv {
    pub fn python(&self) -> PathBuf {
        self.dir.join("bin").join("python")
    }

    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("bin").join(name)
    }

    /// libpython of the venv's interpreter, for Rust tests that embed it.
    pub fn libdir(&self) -> Result<String, String> {
        cmd::output(cmd::new(self.python()).args([
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))",
        ]))
    }
}

/// The venv, created and provisioned if missing.
pub fn ensure() -> Result<Venv, String> {
    let venv = Venv {
        dir: cmd::root().join(".venv"),
    };
    if !venv.python().exists() {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        cmd::run(cmd::new(&python).args(["-m", "venv"]).arg(&venv.dir))?;
        cmd::run(cmd::new(venv.python()).args(["-m", "pip", "install", "-q", "--upgrade", "pip"]))?;
    }
    let missing = cmd::new(venv.python())
        .args([
            "-c",
            "import maturin, pytest, pytest_timeout, anyio, uvicorn, httpx, aiohttp, trustme, starlette, fastapi, websockets",
        ])
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true);
    if missing {
        cmd::run(
            cmd::new(venv.python())
                .args(["-m", "pip", "install", "-q"])
                .args(BASE_PACKAGES),
        )?;
    }
    Ok(venv)
}
