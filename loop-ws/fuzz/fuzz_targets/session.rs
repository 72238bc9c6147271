//! Arbitrary client bytes through a server session; see `body/session.rs`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../body/session.rs"]
mod session;

fuzz_target!(|data: &[u8]| session::run(data));
