//! The one place that names the crypto provider: ring. It builds in a third
//! of aws-lc-rs's time, and on this machine's handshakes aws-lc-rs did not
//! win, not even on RSA (docs/decisions.md, "aws-lc-rs measured"), so no
//! other provider is offered. The rest of the crate names `provider::…`.

pub(crate) use rustls::crypto::ring::{
    default_provider, sign, Ticketer, ALL_CIPHER_SUITES, DEFAULT_CIPHER_SUITES,
};

/// The provider's name, for logs and reports.
pub const PROVIDER: &str = "ring";
