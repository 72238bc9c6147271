//! `ssl_ciphers` by name: the suites ring offers, by IANA or OpenSSL name;
//! OpenSSL class keywords mean rustls' defaults.
//!
//! Kept simple on purpose: a keyword (`DEFAULT`, `HIGH`, `TLSv1.2`, ...)
//! selects every default suite; exclusions (`!aNULL`, `-RC4`, `+...`) and
//! `@STRENGTH` / `@SECLEVEL=n` are ignored, as rustls offers no suite they
//! could exclude (no NULL, RC4, export or anonymous suites) and orders by
//! strength already. Anything else is refused by name.

use crate::config::MinVersion;
use crate::error::ConfigError;
use crate::provider::ALL_CIPHER_SUITES;
use rustls::{CipherSuite, SupportedCipherSuite};

/// (IANA number, names it is known by).
const NAMES: &[(CipherSuite, &[&str])] = &[
    (
        CipherSuite::TLS13_AES_256_GCM_SHA384,
        &["TLS13_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"],
    ),
    (
        CipherSuite::TLS13_AES_128_GCM_SHA256,
        &["TLS13_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"],
    ),
    (
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
        &[
            "TLS13_CHACHA20_POLY1305_SHA256",
            "TLS_CHACHA20_POLY1305_SHA256",
        ],
    ),
    (
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        &[
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
            "ECDHE-ECDSA-AES256-GCM-SHA384",
        ],
    ),
    (
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        &[
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "ECDHE-ECDSA-AES128-GCM-SHA256",
        ],
    ),
    (
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        &[
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
            "ECDHE-ECDSA-CHACHA20-POLY1305",
        ],
    ),
    (
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        &[
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            "ECDHE-RSA-AES256-GCM-SHA384",
        ],
    ),
    (
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        &[
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            "ECDHE-RSA-AES128-GCM-SHA256",
        ],
    ),
    (
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        &[
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            "ECDHE-RSA-CHACHA20-POLY1305",
        ],
    ),
];

/// OpenSSL cipher-string keywords taken to mean "the defaults".
const KEYWORDS: &[&str] = &[
    "DEFAULT", "ALL", "HIGH", "MEDIUM", "TLSv1", "TLSv1.0", "TLSv1.2", "TLSv1.3", "SSLv3", "ECDHE",
    "EECDH", "kECDHE", "AESGCM", "AES", "AES128", "AES256", "CHACHA20", "ECDSA", "aECDSA", "RSA",
    "aRSA", "SHA256", "SHA384", "FIPS",
];

fn find(name: &str) -> Option<CipherSuite> {
    NAMES
        .iter()
        .find(|(_, names)| names.iter().any(|n| n.eq_ignore_ascii_case(name)))
        .map(|(suite, _)| *suite)
}

fn is_tls13(suite: &SupportedCipherSuite) -> bool {
    matches!(suite, SupportedCipherSuite::Tls13(_))
}

/// The suites to offer, in rustls' preference order.
///
/// rustls needs at least one suite per enabled version: a list that names
/// no TLS 1.3 suite keeps the TLS 1.3 defaults (1.3 is always enabled), so
/// a 1.2-only list narrows TLS 1.2 and leaves TLS 1.3 as it is.
pub(crate) fn select(
    ciphers: Option<&str>,
    min_version: MinVersion,
) -> Result<Vec<SupportedCipherSuite>, ConfigError> {
    let defaults = crate::provider::DEFAULT_CIPHER_SUITES;
    let Some(list) = ciphers else {
        return Ok(defaults.to_vec());
    };
    let mut named = Vec::new();
    let mut keyword = false;
    for token in list
        .split([':', ',', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        if token.starts_with(['!', '-', '+', '@']) {
            continue;
        }
        if KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(token)) {
            keyword = true;
            continue;
        }
        match find(token) {
            Some(suite) => named.push(suite),
            None => return Err(ConfigError::UnknownCipher(token.to_string())),
        }
    }
    if keyword || named.is_empty() {
        return Ok(defaults.to_vec());
    }
    let mut chosen: Vec<SupportedCipherSuite> = ALL_CIPHER_SUITES
        .iter()
        .filter(|s| named.contains(&s.suite()))
        .copied()
        .collect();
    if !chosen.iter().any(is_tls13) {
        chosen.extend(defaults.iter().filter(|s| is_tls13(s)).copied());
    }
    if min_version == MinVersion::Tls13 {
        chosen.retain(is_tls13);
    }
    Ok(chosen)
}
