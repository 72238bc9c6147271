//! Whole connections through the driver (see `body/connections.rs`).

#![no_main]

#[path = "../body/connections.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    body::run(data);
});
