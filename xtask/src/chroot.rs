//! CPython versions the host cannot install (3.14 and 3.15 here, with their
//! debug builds), taken from Debian unstable and run in a chroot.
//!
//! `cargo xtask chroot setup` (root; about two minutes, once per machine)
//! bootstraps a minimal Debian unstable at [`Chroot::root`] with
//! [`PACKAGES`]: each CPython with its headers, `venv`, debug build and
//! `test.test_asyncio`, plus the C compiler pyo3 links with and the clients
//! the pytest suite runs as peers. Running it again installs whatever is
//! missing and checks the interpreters.
//!
//! Commands run there through [`Chroot::wrap`]: the first call mounts
//! `/proc`, `/dev`, a `/dev/pts` of its own, the Rust toolchain (`CARGO_HOME`,
//! `RUSTUP_HOME`) and the checkout at their host paths (the mounts stay, as
//! a build cache would; `cargo xtask chroot teardown` removes them, and must
//! run before the root is deleted, or the deletion would reach through them
//! into the checkout and the toolchain). The command then runs in the same
//! directory path with a clean environment: `PATH`, `HOME`, the toolchain,
//! the registry and CA settings of the host, and what the caller set on the
//! command.

use crate::cmd;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// What `setup` installs. The `-dbg` packages are the debug interpreters
/// (`cargo xtask test-debug`); curl and openssl are peers in tests/tls.
pub const PACKAGES: &[&str] = &[
    "python3.14",
    "python3.14-dev",
    "python3.14-venv",
    "python3.14-dbg",
    "libpython3.14-testsuite",
    "python3.15",
    "python3.15-dev",
    "python3.15-venv",
    "python3.15-dbg",
    "libpython3.15-testsuite",
    "gcc",
    "libc6-dev",
    "ca-certificates",
    "curl",
    "openssl",
];

/// Interpreters `setup` checks (each must import its asyncio test suite).
const INTERPRETERS: &[&str] = &[
    "python3.14",
    "python3.14-dbg",
    "python3.15",
    "python3.15-dbg",
];

const MIRROR: &str = "http://deb.debian.org/debian";

/// Variables handed from the host into the chroot when set (besides the
/// caller's own): what pip, curl and Python's ssl need to reach the
/// registries, and the switches the tests read.
const PASSED_VARS: &[&str] = &[
    "CI",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "RUST_BACKTRACE",
];
const PASSED_PREFIXES: &[&str] = &["PIP_", "FERROLOOP_", "PYTEST_"];

/// Host files copied in, so that pip and curl trust what the host trusts.
const SETTINGS_FILE_VARS: &[&str] = &[
    "PIP_CERT",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chroot {
    pub root: PathBuf,
}

impl Chroot {
    /// `$FERROLOOP_DEBIAN_ROOT`, else `/opt/debian-py`.
    pub fn configured() -> Chroot {
        let root = std::env::var_os("FERROLOOP_DEBIAN_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/opt/debian-py"));
        Chroot { root }
    }

    /// `/usr/bin/<program>` exists inside.
    pub fn has(&self, program: &str) -> bool {
        self.inside(Path::new("/usr/bin").join(program)).is_file()
    }

    /// The host path of `path` inside the chroot.
    fn inside(&self, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        self.root.join(path.strip_prefix("/").unwrap_or(path))
    }

    /// Bootstrap it when missing, install missing packages, check the
    /// interpreters.
    pub fn setup(&self) -> Result<(), String> {
        if !self.has("python3.15") {
            if !tool_exists("debootstrap") {
                cmd::run(Command::new("apt-get").args(["update", "-qq"]))?;
                cmd::run(Command::new("apt-get").args(["install", "-y", "-qq", "debootstrap"]))?;
            }
            std::fs::create_dir_all(&self.root)
                .map_err(|e| format!("{}: {e}", self.root.display()))?;
            cmd::run(
                Command::new("debootstrap")
                    .args(["--variant=minbase"])
                    .arg(format!("--include={}", PACKAGES.join(",")))
                    .arg("sid")
                    .arg(&self.root)
                    .arg(MIRROR),
            )?;
        }
        self.copy_host_settings()?;
        // A root made before a package joined the list gets it now.
        let mut query = Command::new("dpkg-query");
        query.args(["-W", "-f", "${db:Status-Status} ${Package}\\n"]);
        query.args(PACKAGES);
        let installed = cmd::output(&mut self.wrap(&query)?).unwrap_or_default();
        let missing: Vec<&str> = PACKAGES
            .iter()
            .copied()
            .filter(|p| !installed.lines().any(|l| l == format!("installed {p}")))
            .collect();
        if !missing.is_empty() {
            // The mirror may serve a Release file past its Valid-Until date
            // (a snapshot): the packages are still the ones it signed.
            let apt = |args: &[&str]| {
                let mut apt = Command::new("apt-get");
                apt.args(["-o", "Acquire::Check-Valid-Until=false"])
                    .args(args);
                apt
            };
            self.run(&mut apt(&["update", "-qq"]))?;
            self.run(
                apt(&["install", "-y", "-qq", "--no-install-recommends"])
                    .args(&missing)
                    .env("DEBIAN_FRONTEND", "noninteractive"),
            )?;
        }
        for python in INTERPRETERS {
            self.run(Command::new(python).args([
                "-c",
                "import sys, test.test_asyncio; print(sys.executable, sys.version.split()[0])",
            ]))?;
        }
        Ok(())
    }

    /// Run `inner` inside, echoing it.
    pub fn run(&self, inner: &mut Command) -> Result<(), String> {
        cmd::run_shown(&mut self.wrap(inner)?, &self.describe(inner))
    }

    /// `inner` as seen from the host, for messages.
    pub fn describe(&self, inner: &Command) -> String {
        format!("[chroot {}] {}", self.root.display(), cmd::describe(inner))
    }

    /// `inner` (program, arguments, the variables set on it, working
    /// directory) as a command that runs it inside, after mounting what it
    /// needs.
    pub fn wrap(&self, inner: &Command) -> Result<Command, String> {
        self.mount()?;
        Ok(self.command_line(inner))
    }

    /// `chroot ROOT env -i VARS... sh -c 'cd DIR && exec CMD'` for `inner`.
    fn command_line(&self, inner: &Command) -> Command {
        let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
        let (cargo_home, rustup_home) = toolchain_dirs();
        let mut path = OsString::from(cargo_home.join("bin"));
        path.push(":/usr/local/bin:/usr/bin:/bin");
        let mut env: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), path),
            ("HOME".into(), home),
            ("CARGO_HOME".into(), cargo_home.into()),
            ("RUSTUP_HOME".into(), rustup_home.into()),
        ];
        for (key, value) in std::env::vars_os() {
            let name = key.to_string_lossy();
            let passed = PASSED_VARS.contains(&name.as_ref())
                || PASSED_PREFIXES.iter().any(|p| name.starts_with(p));
            if passed {
                env.push((key, value));
            }
        }
        for (key, value) in inner.get_envs() {
            if let Some(value) = value {
                env.push((key.into(), value.into()));
            }
        }
        let dir = inner
            .get_current_dir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/"));
        let mut outer = Command::new("chroot");
        outer.arg(&self.root).arg("/usr/bin/env").arg("-i");
        for (key, value) in env {
            let mut pair = key;
            pair.push("=");
            pair.push(value);
            outer.arg(pair);
        }
        outer
            .args(["/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh"])
            .arg(dir)
            .arg(inner.get_program())
            .args(inner.get_args());
        outer
    }

    /// The mounts `wrap` needs, made once (they stay).
    fn mount(&self) -> Result<(), String> {
        static SETTINGS: OnceLock<Result<(), String>> = OnceLock::new();
        if !self.has("env") {
            return Err(format!(
                "no Debian chroot at {} (run `cargo xtask chroot setup` as root)",
                self.root.display()
            ));
        }
        SETTINGS.get_or_init(|| self.copy_host_settings()).clone()?;
        let mounted = mount_points();
        let (cargo_home, rustup_home) = toolchain_dirs();
        let checkout = cmd::root();
        let binds: [(&Path, PathBuf); 5] = [
            (Path::new("/proc"), self.inside("/proc")),
            (Path::new("/dev"), self.inside("/dev")),
            (&cargo_home, self.inside(&cargo_home)),
            (&rustup_home, self.inside(&rustup_home)),
            (&checkout, self.inside(&checkout)),
        ];
        for (source, target) in &binds {
            if mounted.contains(target) {
                if *source != checkout.as_path() || same_dir(source, target) {
                    continue;
                }
                // The bind of a checkout deleted since (removed and cloned
                // again at the same path): bind the new one.
                cmd::run(Command::new("umount").arg("--lazy").arg(target))?;
            }
            mkdir(target)?;
            cmd::run(Command::new("mount").arg("--bind").arg(source).arg(target))?;
        }
        // Pseudo-terminals of its own (asyncio's pty tests open them).
        let pts = self.inside("/dev/pts");
        if !mounted.contains(&pts) {
            mkdir(&pts)?;
            cmd::run(
                Command::new("mount")
                    .args(["-t", "devpts", "-o", "newinstance,ptmxmode=0666", "devpts"])
                    .arg(&pts),
            )?;
        }
        let tmp = self.inside("/tmp");
        mkdir(&tmp)?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777))
            .map_err(|e| format!("{}: {e}", tmp.display()))
    }

    /// Unmount everything mounted under the root, innermost first.
    pub fn teardown(&self) -> Result<(), String> {
        let mut inside: Vec<PathBuf> = mount_points()
            .into_iter()
            .filter(|m| m.starts_with(&self.root) && *m != self.root)
            .collect();
        inside.sort_by_key(|m| std::cmp::Reverse(m.components().count()));
        for point in inside {
            cmd::run(Command::new("umount").arg(&point))?;
        }
        Ok(())
    }

    /// Resolver, pip and CA settings of the host, copied in.
    fn copy_host_settings(&self) -> Result<(), String> {
        let mut files: Vec<PathBuf> = vec!["/etc/resolv.conf".into(), "/etc/pip.conf".into()];
        files.extend(
            SETTINGS_FILE_VARS
                .iter()
                .filter_map(std::env::var_os)
                .map(PathBuf::from),
        );
        for file in files.iter().filter(|f| f.is_file()) {
            self.copy_in(file, &self.inside(file))?;
        }
        if let Some(dir) = std::env::var_os("SSL_CERT_DIR").map(PathBuf::from) {
            let entries = std::fs::read_dir(&dir).into_iter().flatten().flatten();
            for entry in entries.filter(|e| e.path().is_file()) {
                self.copy_in(&entry.path(), &self.inside(dir.join(entry.file_name())))?;
            }
        }
        Ok(())
    }

    /// Copy the host file `source` (dereferenced) to `target` inside. An
    /// existing `target` is replaced, not written through: a symlink there
    /// may be absolute, and would resolve against the host's root.
    fn copy_in(&self, source: &Path, target: &Path) -> Result<(), String> {
        if let Some(parent) = target.parent() {
            mkdir(parent)?;
        }
        if target.symlink_metadata().is_ok() {
            std::fs::remove_file(target).map_err(|e| format!("{}: {e}", target.display()))?;
        }
        std::fs::copy(source, target)
            .map(drop)
            .map_err(|e| format!("copy {} into the chroot: {e}", source.display()))
    }
}

/// `cargo xtask chroot setup|teardown|run -- CMD...`.
pub fn task(args: &[String]) -> Result<(), String> {
    let chroot = Chroot::configured();
    match args.first().map(String::as_str) {
        Some("setup") if args.len() == 1 => chroot.setup(),
        Some("teardown") if args.len() == 1 => chroot.teardown(),
        Some("run") => {
            let command = match args.get(1).map(String::as_str) {
                Some("--") => &args[2..],
                _ => &args[1..],
            };
            let (program, rest) = command
                .split_first()
                .ok_or("chroot run: which command? (cargo xtask chroot run -- CMD ARGS)")?;
            let here = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
            let mut inner = Command::new(program);
            inner.args(rest).current_dir(here);
            chroot.run(&mut inner)
        }
        _ => Err("usage: cargo xtask chroot setup|teardown|run -- CMD [ARGS]".into()),
    }
}

fn toolchain_dirs() -> (PathBuf, PathBuf) {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"));
    let dir = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(default))
    };
    (dir("CARGO_HOME", ".cargo"), dir("RUSTUP_HOME", ".rustup"))
}

/// Whether `a` and `b` are the same directory (device and inode).
fn same_dir(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Every mount point of this process's namespace.
fn mount_points() -> Vec<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|escaped| PathBuf::from(unescape_mount_path(escaped)))
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape_mount_path(escaped: &str) -> String {
    let mut out = Vec::with_capacity(escaped.len());
    let bytes = escaped.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|digits| {
            let text = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn mkdir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

fn tool_exists(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_paths_are_unescaped() {
        assert_eq!(unescape_mount_path("/a\\040b"), "/a b");
        assert_eq!(unescape_mount_path("/plain"), "/plain");
        assert_eq!(unescape_mount_path("/trailing\\"), "/trailing\\");
    }

    #[test]
    fn the_command_line_keeps_program_arguments_directory_and_variables() {
        let chroot = Chroot {
            root: PathBuf::from("/srv/root"),
        };
        let mut inner = Command::new("python3.14");
        inner
            .args(["-c", "pass"])
            .current_dir("/work/x")
            .env("X", "1")
            .env_remove("Y");
        let outer = chroot.command_line(&inner);
        assert_eq!(outer.get_program(), "chroot");
        let args: Vec<String> = outer
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args[..3], ["/srv/root", "/usr/bin/env", "-i"]);
        assert!(args.iter().any(|a| a == "X=1"));
        assert!(!args.iter().any(|a| a.starts_with("Y=")));
        assert!(args.iter().any(|a| a.starts_with("PATH=")));
        let tail = &args[args.len() - 8..];
        assert_eq!(
            tail,
            [
                "/bin/sh",
                "-c",
                "cd \"$1\" && shift && exec \"$@\"",
                "sh",
                "/work/x",
                "python3.14",
                "-c",
                "pass"
            ]
        );
    }

    #[test]
    fn wrap_refuses_a_missing_root() {
        let chroot = Chroot {
            root: PathBuf::from("/nonexistent-root"),
        };
        let err = chroot.wrap(&Command::new("true")).unwrap_err();
        assert!(err.contains("cargo xtask chroot setup"), "{err}");
    }
}
