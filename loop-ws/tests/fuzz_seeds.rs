//! The `session` fuzz target's body (fuzz/body/session.rs) over its seed
//! corpus, on stable: the target is checked on every CI run even where
//! no nightly toolchain is available for cargo-fuzz.

#[path = "../fuzz/body/session.rs"]
mod session;

#[test]
fn fuzz_body_over_seeds() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/session");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        // Each seed under every selector, so every session kind and cut
        // size sees every stream.
        for selector in 0..=255u8 {
            let mut input = vec![selector];
            input.extend_from_slice(data.get(1..).unwrap_or(&[]));
            session::run(&input);
        }
        n += 1;
    }
    assert!(n >= 8, "seeds missing: {n}");
}
