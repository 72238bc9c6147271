//! Which CPython versions ferroloop is tested and built for: the one
//! definition every task reads, and how each interpreter is found.
//!
//! `cargo xtask test` behaviour-tests every version in [`TESTED`]; a
//! missing interpreter fails the run (a green run means all of them were
//! tested) unless `--allow-missing-python` is given, an opt-out for other
//! machines that CI does not use. `--python 3.12` (repeatable, or
//! `--python 3.12,3.13`) narrows a run for development.
//!
//! An interpreter is looked for on the host first (`$PYTHON`, `pythonX.Y`
//! on PATH, pyenv), then in the Debian chroot (`chroot.rs`), which is where
//! 3.14, 3.15 and the debug builds come from on machines like CI's.

use crate::chroot::Chroot;
use crate::cmd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Behaviour-tested on every run: each gets its own venv, wheel, pytest run
/// and CPython asyncio suite.
pub const TESTED: &[&str] = &["3.11", "3.12", "3.13", "3.14", "3.15"];

/// Compile-checked only (no interpreter obtainable), as (label, version,
/// free-threaded).
pub const COMPILE_CHECKED: &[(&str, &str, bool)] =
    &[("3.14t", "3.14", true), ("3.15t", "3.15", true)];

/// The debug build the pytest suite runs under once (`cargo xtask
/// test-debug`): CPython's reference-count and object assertions check the
/// extension's unsafe code.
pub const DEBUG_BUILD: &str = "3.14";

/// Where an interpreter runs: on the host, or inside the Debian chroot
/// (same paths: the checkout is mounted at its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    Host,
    Debian(Chroot),
}

impl Place {
    /// Run `cmd` there, echoing it.
    pub fn run(&self, cmd: &mut Command) -> Result<(), String> {
        match self {
            Place::Host => cmd::run(cmd),
            Place::Debian(chroot) => chroot.run(cmd),
        }
    }

    /// Run `cmd` there and return its trimmed stdout.
    pub fn output(&self, cmd: &mut Command) -> Result<String, String> {
        match self {
            Place::Host => cmd::output(cmd),
            Place::Debian(chroot) => {
                let shown = chroot.describe(cmd);
                cmd::output_shown(&mut chroot.wrap(cmd)?, &shown)
            }
        }
    }

    /// Start `cmd` there in the background, its output going to `log`.
    pub fn spawn_logged(&self, cmd: &mut Command, log: &Path) -> Result<cmd::Background, String> {
        match self {
            Place::Host => {
                let shown = cmd::describe(cmd);
                cmd::spawn_logged(cmd, &shown, log)
            }
            Place::Debian(chroot) => {
                let shown = chroot.describe(cmd);
                cmd::spawn_logged(&mut chroot.wrap(cmd)?, &shown, log)
            }
        }
    }

    /// Whether `cmd` runs there and exits 0 (its output is discarded).
    pub fn succeeds(&self, cmd: &mut Command) -> bool {
        let mut wrapped;
        let cmd = match self {
            Place::Host => cmd,
            Place::Debian(chroot) => match chroot.wrap(cmd) {
                Ok(command) => {
                    wrapped = command;
                    &mut wrapped
                }
                Err(_) => return false,
            },
        };
        cmd.output().map(|o| o.status.success()).unwrap_or(false)
    }

    /// The maturin target dir of interpreters here: the chroot's C library
    /// is newer than the host's, so build scripts compiled for one may not
    /// run on the other (see `tasks::maturin_target`).
    pub fn target_family(&self) -> &'static str {
        match self {
            Place::Host => "shared",
            Place::Debian(_) => "debian",
        }
    }
}

/// An interpreter of one of the selected versions.
pub struct Python {
    /// `major.minor`, as in [`TESTED`].
    pub version: String,
    pub executable: PathBuf,
    pub place: Place,
    /// CPython's debug build (`pythonX.Y-dbg`).
    pub debug: bool,
}

impl Python {
    /// `3.14`, or `3.14-dbg` for the debug build: names its venv.
    pub fn label(&self) -> String {
        if self.debug {
            format!("{}-dbg", self.version)
        } else {
            self.version.clone()
        }
    }
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
                Some(python) => found.push(python),
                None => missing.push(version.as_str()),
            }
        }
        if !missing.is_empty() {
            let message = format!(
                "no CPython {} interpreter found (looked for $PYTHON, python{} on PATH, \
                 pyenv's versions/{}.* and the Debian chroot at {}); install it (`cargo xtask \
                 chroot setup` provides 3.14 and 3.15), or pass --allow-missing-python to test \
                 only the versions present",
                missing.join(", "),
                missing[0],
                missing[0],
                Chroot::configured().root.display()
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

/// The interpreter for `version`: on the host `$PYTHON` or `python3` when
/// it is that version, else `pythonX.Y` on PATH, else the newest pyenv
/// install of it; else `pythonX.Y` in the Debian chroot.
pub fn find(version: &str) -> Option<Python> {
    let host = |executable: PathBuf| Python {
        version: version.to_string(),
        executable,
        place: Place::Host,
        debug: false,
    };
    let default = default_interpreter();
    if version_of(&default).as_deref() == Some(version) {
        return Some(host(default));
    }
    let on_path = PathBuf::from(format!("python{version}"));
    if version_of(&on_path).as_deref() == Some(version) {
        return Some(host(on_path));
    }
    if let Some(exe) = pyenv_install(version) {
        return Some(host(exe));
    }
    in_chroot(version, &format!("python{version}"), false)
}

/// The debug build of CPython `version` (`pythonX.Y-dbg`, as Debian names
/// it): on the host's PATH, else in the Debian chroot.
pub fn find_debug(version: &str) -> Option<Python> {
    let name = format!("python{version}-dbg");
    let on_path = PathBuf::from(&name);
    if version_of(&on_path).as_deref() == Some(version) && is_debug_build(&Place::Host, &on_path) {
        return Some(Python {
            version: version.to_string(),
            executable: on_path,
            place: Place::Host,
            debug: true,
        });
    }
    in_chroot(version, &name, true)
}

fn in_chroot(version: &str, name: &str, debug: bool) -> Option<Python> {
    let chroot = Chroot::configured();
    if !chroot.has(name) {
        return None;
    }
    let python = Python {
        version: version.to_string(),
        executable: Path::new("/usr/bin").join(name),
        place: Place::Debian(chroot),
        debug,
    };
    let runs = python
        .place
        .output(cmd::new(&python.executable).args(VERSION_SCRIPT));
    match runs {
        Ok(found)
            if found == version && is_debug_build(&python.place, &python.executable) == debug =>
        {
            Some(python)
        }
        Ok(found) => {
            eprintln!("xtask: warning: {name} in the chroot is CPython {found}, not {version}");
            None
        }
        Err(message) => {
            eprintln!("xtask: warning: {name} is in the chroot but does not run there: {message}");
            None
        }
    }
}

fn pyenv_install(version: &str) -> Option<PathBuf> {
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

fn is_debug_build(place: &Place, python: &Path) -> bool {
    place.succeeds(cmd::new(python).args([
        "-c",
        "import sys; sys.exit(not hasattr(sys, 'gettotalrefcount'))",
    ]))
}

/// `$PYTHON`, else `python3`: the interpreter of the project venv `.venv`.
pub fn default_interpreter() -> PathBuf {
    std::env::var_os("PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| "python3".into())
}

const VERSION_SCRIPT: [&str; 2] = ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"];

/// `major.minor` of the host interpreter at `python`, if it runs.
pub fn version_of(python: &Path) -> Option<String> {
    version_at(&Place::Host, python)
}

/// `major.minor` of the interpreter at `python` in `place`, if it runs.
pub fn version_at(place: &Place, python: &Path) -> Option<String> {
    place.output(cmd::new(python).args(VERSION_SCRIPT)).ok()
}
