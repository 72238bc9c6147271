//! The one place that picks the crypto provider: ring by default (it builds
//! in a third of aws-lc-rs's time), aws-lc-rs with the `aws-lc-rs` feature.
//! Both rustls modules have the same shape, so the rest of the crate names
//! `provider::…` and never a provider directly.

#[cfg(feature = "aws-lc-rs")]
pub(crate) use rustls::crypto::aws_lc_rs::{
    default_provider, sign, Ticketer, ALL_CIPHER_SUITES, DEFAULT_CIPHER_SUITES,
};
#[cfg(not(feature = "aws-lc-rs"))]
pub(crate) use rustls::crypto::ring::{
    default_provider, sign, Ticketer, ALL_CIPHER_SUITES, DEFAULT_CIPHER_SUITES,
};

/// The provider's name, for logs and reports.
pub const PROVIDER: &str = if cfg!(feature = "aws-lc-rs") {
    "aws-lc-rs"
} else {
    "ring"
};
