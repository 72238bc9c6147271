//! Which CPython versions ferroloop is tested and built for: the one
//! definition every task reads, and how each interpreter is found.
//!
//! `cargo xtask test` behaviour-tests every version in [`TESTED`]; a
//! missing interpreter fails the run (a green run means all of them were
//! tested) unless `--allow-missing-python` is given, an opt-out for other
//! machines that CI does not use. `--python 3.12` (repeatable, or
//! `--python 3.12,3.13`) narrows a run for development.

use crate::cmd;
use std::path::{Path, PathBuf};

/// Behaviour-tested on every run: each gets its own venv, wheel, pytest run
/// and CPython asyncio suite.
pub const TESTED: &[&str] = &["3.11", "3.12", "3.13"];

/// Compile-checked only (no interpreter on this kind of machine), as
/// (label, version, free-threaded).
pub const COMPILE_CHECKED: &[(&str, &str, bool)] =
    &[("3.14", "3.14", false), ("3.14t", "3.14", true)];

/// An interpreter of one of the selected versions.
pub struct Python {
    /// `major.minor`, as in [`TESTED`].
    pub version: String,
    pub executable: PathBuf,
}

/// The versions a task runs on, from its arguments; the arguments it did
/// not consume are returned for the task itself.
pub struct Selection {
    pub versions: Vec<String>,
    pub allow_missing: bool,
}

impl Selection {
    /// Takes `--python V[,V…]` (repeatable) and `--allow-missing-python`
    /// out of `args`; without `--python` every version in [`TESTED`].
    pub fn parse(args: &[String]) -> Result<(Selection, Vec<String>), String> {
        let mut versions = Vec::new();
        let mut allow_missing = false;
        let mut rest = Vec::new();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let value = if arg == "--python" {
                Some(
                    args.next()
                        .ok_or("--python needs a version, e.g. --python 3.12")?
                        .clone(),
                )
            } else {
                arg.strip_prefix("--python=").map(str::to_string)
            };
            match value {
                Some(list) => {
                    for v in list.split(',').filter(|v| !v.is_empty()) {
                        if !TESTED.contains(&v) {
                            return Err(format!(
                                "--python {v}: not a tested version (tested: {})",
                                TESTED.join(", ")
                            ));
                        }
                        if !versions.iter().any(|known| known == v) {
                            versions.push(v.to_string());
                        }
                    }
                }
                None if arg == "--allow-missing-python" => allow_missing = true,
                None => rest.push(arg.clone()),
            }
        }
        if versions.is_empty() {
            versions = TESTED.iter().map(|v| v.to_string()).collect();
        }
        Ok((
            Selection {
                versions,
                allow_missing,
            },
            rest,
        ))
    }

    /// The interpreter of each selected version. A missing one is an error
    /// naming it, unless missing ones may be skipped (then a warning).
    pub fn resolve(&self) -> Result<Vec<Python>, String> {
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for version in &self.versions {
            match find(version) {
                Some(executable) => found.push(Python {
                    version: version.clone(),
                    executable,
                }),
                None => missing.push(version.as_str()),
            }
        }
        if !missing.is_empty() {
            let message = format!(
                "no CPython {} interpreter found (looked for $PYTHON, python{} on PATH and \
                 pyenv's versions/{}.*); install it, or pass --allow-missing-python to test \
                 only the versions present",
                missing.join(", "),
                missing[0],
                missing[0]
            );
            if !self.allow_missing {
                return Err(message);
            }
            eprintln!("xtask: warning: {message}; skipping it (--allow-missing-python)");
        }
        if found.is_empty() {
            return Err("no interpreter of the selected versions is installed".into());
        }
        Ok(found)
    }
}

/// The interpreter for `version`: `$PYTHON` or `python3` when it is that
/// version, else `pythonX.Y` on PATH, else the newest pyenv install of it.
pub fn find(version: &str) -> Option<PathBuf> {
    let default = default_interpreter();
    if version_of(&default).as_deref() == Some(version) {
        return Some(default);
    }
    let on_path = PathBuf::from(format!("python{version}"));
    if version_of(&on_path).as_deref() == Some(version) {
        return Some(on_path);
    }
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pyenv")))?;
    let mut installs: Vec<(u32, PathBuf)> = std::fs::read_dir(root.join("versions"))
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let patch = name.strip_prefix(version)?.strip_prefix('.')?;
            let patch: u32 = patch.parse().ok()?;
            let exe = entry.path().join("bin").join(format!("python{version}"));
            (version_of(&exe).as_deref() == Some(version)).then_some((patch, exe))
        })
        .collect();
    installs.sort();
    installs.pop().map(|(_, exe)| exe)
}

/// `$PYTHON`, else `python3`: the interpreter of the project venv `.venv`.
pub fn default_interpreter() -> PathBuf {
    std::env::var_os("PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| "python3".into())
}

/// `major.minor` of the interpreter at `python`, if it runs.
pub fn version_of(python: &Path) -> Option<String> {
    cmd::output(cmd::new(python).args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"]))
        .ok()
}
