//! Files generated from the settings table, checked for staleness: this
//! test fails when a generated file differs from what the table gives, and
//! rewrites it when run with `FERROLOOP_REGENERATE=1` (`cargo xtask
//! gen-settings` does that).
//!
//! Generated: the `Config` signature and attributes in
//! `loop-py/python/ferroloop/server/_config.pyi`, between its
//! `# BEGIN GENERATED settings` and `# END GENERATED settings` lines.

use std::fmt::Write as _;
use std::path::PathBuf;

use loop_cli::table::SETTINGS;

const BEGIN: &str = "    # BEGIN GENERATED settings\n";
const END: &str = "    # END GENERATED settings\n";

fn config_stub_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../loop-py/python/ferroloop/server/_config.pyi")
}

/// The lines between the markers: each `Config` setting as an attribute,
/// then `__init__` with every keyword, its annotation and default.
fn config_stub_body() -> String {
    let rows = || SETTINGS.iter().filter(|s| s.in_config());
    let mut out = String::new();
    for s in rows() {
        let _ = writeln!(out, "    {}: {}", s.name, s.py_types().1);
    }
    out.push_str(
        "    def __init__(\n        self,\n        app: Callable[..., Any] | str,\n        *,\n",
    );
    for s in rows() {
        let _ = writeln!(
            out,
            "        {}: {} = {},",
            s.name,
            s.py_types().0,
            s.py_default()
        );
    }
    out.push_str("    ) -> None: ...\n");
    out
}

/// `text` with the region between the markers replaced by `body`.
fn splice(text: &str, body: &str) -> Result<String, String> {
    let start = text.find(BEGIN).ok_or("no BEGIN GENERATED marker")? + BEGIN.len();
    let end = text[start..]
        .find(END)
        .ok_or("no END GENERATED marker after BEGIN")?
        + start;
    Ok(format!("{}{body}{}", &text[..start], &text[end..]))
}

#[test]
fn config_stub_is_fresh() {
    let path = config_stub_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let fresh = splice(&text, &config_stub_body()).unwrap_or_else(|e| panic!("{e}"));
    if fresh == text {
        return;
    }
    if std::env::var_os("FERROLOOP_REGENERATE").is_some() {
        std::fs::write(&path, fresh)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        return;
    }
    panic!(
        "{} is stale: run `cargo xtask gen-settings` (or \
         FERROLOOP_REGENERATE=1 cargo test -p loop-cli --test generated)",
        path.display()
    );
}

#[test]
fn splice_replaces_only_the_region() {
    let text = format!("a\n{BEGIN}old\n{END}b\n");
    assert_eq!(
        splice(&text, "new\n"),
        Ok(format!("a\n{BEGIN}new\n{END}b\n"))
    );
    assert!(splice("no markers", "x").is_err());
}
