//! Running commands loudly: each is echoed, and a failure names it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (xtask lives one level below it).
pub fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

/// A command to run from the workspace root.
pub fn new(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(root());
    cmd
}

/// Run `cmd`, inheriting stdio; an error unless it exits 0.
pub fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = describe(cmd);
    run_shown(cmd, &shown)
}

/// `run`, echoing and naming `cmd` as `shown` (a wrapped command shows
/// what it wraps).
pub fn run_shown(cmd: &mut Command, shown: &str) -> Result<(), String> {
    eprintln!("+ {shown}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

/// Run `cmd` and return its trimmed stdout.
pub fn output(cmd: &mut Command) -> Result<String, String> {
    let shown = describe(cmd);
    output_shown(cmd, &shown)
}

/// `output`, naming `cmd` as `shown` in errors.
pub fn output_shown(cmd: &mut Command, shown: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start `{shown}`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{shown}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub fn describe(cmd: &Command) -> String {
    let mut parts = vec![cmd.get_program().to_string_lossy().into_owned()];
    parts.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}

/// A command running in the background, its output going to a log file
/// (shown when it is done, so it does not interleave with the foreground's).
pub struct Background {
    child: std::process::Child,
    shown: String,
    log: PathBuf,
}

/// Start `cmd` in the background with stdout and stderr in `log`.
pub fn spawn_logged(cmd: &mut Command, shown: &str, log: &Path) -> Result<Background, String> {
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    eprintln!("+ {shown} > {} (in the background)", log.display());
    let child = cmd
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start `{shown}`: {e}"))?;
    Ok(Background {
        child,
        shown: shown.to_string(),
        log: log.to_path_buf(),
    })
}

impl Background {
    /// Wait for it, show its output, and fail unless it exited 0.
    pub fn finish(mut self) -> Result<(), String> {
        let status = self
            .child
            .wait()
            .map_err(|e| format!("`{}`: {e}", self.shown))?;
        eprintln!("== output of `{}`:", self.shown);
        let output = std::fs::read_to_string(&self.log).unwrap_or_default();
        eprint!("{output}");
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "`{}` failed ({status}); its output is in {}",
                self.shown,
                self.log.display()
            ))
        }
    }
}
