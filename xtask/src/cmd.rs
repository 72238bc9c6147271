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
    eprintln!("+ {}", describe(cmd));
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start `{}`: {e}", describe(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", describe(cmd)))
    }
}

/// Run `cmd` and return its trimmed stdout.
pub fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start `{}`: {e}", describe(cmd)))?;
    if !out.status.success() {
        return Err(format!(
            "`{}` failed ({}): {}",
            describe(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn describe(cmd: &Command) -> String {
    let mut parts = vec![cmd.get_program().to_string_lossy().into_owned()];
    parts.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}
