//! The `ssl_*` settings (uvicorn's names and meanings, plus ferroloop's
//! own) resolved to `loop_tls::TlsSettings`: the checks between settings
//! that no single row can make. The files are not read here (that is
//! `loop_tls::TlsConfig::load`, at startup).

use crate::table::{find, rows, Lookup, SETTINGS};
use crate::{CliError, Values};
use loop_tls::{ClientAuth, MinVersion, SniCert, TlsSettings};
use std::path::PathBuf;

/// The `ssl_*` values as `Config` (or the command line) holds them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TlsInputs {
    pub certfile: Option<PathBuf>,
    pub keyfile: Option<PathBuf>,
    pub password: Option<String>,
    pub ca_certs: Option<PathBuf>,
    /// uvicorn's `ssl_cert_reqs`: 0 none, 1 optional, 2 required.
    pub cert_reqs: i64,
    /// uvicorn's `ssl_version`: a stdlib `ssl.PROTOCOL_*` integer.
    pub version: i64,
    pub ciphers: String,
    pub crls: Vec<PathBuf>,
    /// `"1.2"` or `"1.3"`.
    pub min_version: String,
    /// Certificates by SNI host (`HOST=CERTFILE:KEYFILE` on the command
    /// line, [`parse_sni`]).
    pub sni: Vec<SniCert>,
}

/// The defaults of the rows that ask for TLS only when changed.
pub const DEFAULT_VERSION: i64 = PROTOCOL_TLS_SERVER;
pub const DEFAULT_CIPHERS: &str = "TLSv1";
pub const DEFAULT_MIN_VERSION: &str = "1.2";

// The stdlib's `ssl._SSLMethod` values.
const PROTOCOL_SSLV2: i64 = 0;
const PROTOCOL_SSLV3: i64 = 1;
const PROTOCOL_TLS: i64 = 2;
const PROTOCOL_TLSV1: i64 = 3;
const PROTOCOL_TLSV1_1: i64 = 4;
const PROTOCOL_TLSV1_2: i64 = 5;
const PROTOCOL_TLS_CLIENT: i64 = 16;
const PROTOCOL_TLS_SERVER: i64 = 17;

/// A combination of `ssl_*` values that cannot be served; `setting` is
/// the one to change (the command line shows its flag).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {problem}")]
pub struct TlsSettingError {
    pub setting: &'static str,
    pub problem: String,
}

fn error(setting: &'static str, problem: impl Into<String>) -> TlsSettingError {
    TlsSettingError {
        setting,
        problem: problem.into(),
    }
}

/// `HOST=CERTFILE:KEYFILE`, split at the first `=` and the last `:` (a
/// host has no `=`; a key file's name rarely has a `:`).
pub fn parse_sni(text: &str) -> Result<SniCert, &'static str> {
    let (host, files) = text
        .split_once('=')
        .ok_or("expected HOST=CERTFILE:KEYFILE")?;
    let (certfile, keyfile) = files
        .rsplit_once(':')
        .ok_or("expected HOST=CERTFILE:KEYFILE")?;
    let host = host.trim();
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err("expected a host name before '='");
    }
    if certfile.is_empty() || keyfile.is_empty() {
        return Err("expected a certificate file and a key file after '='");
    }
    Ok(SniCert {
        host: host.to_ascii_lowercase(),
        certfile: PathBuf::from(certfile),
        keyfile: PathBuf::from(keyfile),
    })
}

/// uvicorn's `ssl_version` as a minimum version: the "negotiate" values
/// take `min`; TLS 1.2 (`PROTOCOL_TLSv1_2`) is a minimum of 1.2 (rustls
/// cannot pin 1.2 alone, and 1.3 is not weaker); what rustls does not
/// speak is refused by name.
fn min_version(version: i64, min: &str) -> Result<MinVersion, TlsSettingError> {
    let min = match min {
        "1.2" => MinVersion::Tls12,
        "1.3" => MinVersion::Tls13,
        other => {
            return Err(error(
                "ssl_min_version",
                format!("expected 1.2 or 1.3, got {other:?}"),
            ))
        }
    };
    let refused = |name: &str| {
        error(
            "ssl_version",
            format!(
                "{version} ({name}) is not available: rustls speaks TLS 1.2 and 1.3; use \
                 ssl_version 17 (PROTOCOL_TLS_SERVER) with ssl_min_version"
            ),
        )
    };
    match version {
        PROTOCOL_TLS | PROTOCOL_TLS_SERVER => Ok(min),
        PROTOCOL_TLSV1_2 if min == MinVersion::Tls13 => Err(error(
            "ssl_version",
            "5 (PROTOCOL_TLSv1_2) contradicts ssl_min_version 1.3",
        )),
        PROTOCOL_TLSV1_2 => Ok(MinVersion::Tls12),
        PROTOCOL_SSLV2 => Err(refused("PROTOCOL_SSLv2")),
        PROTOCOL_SSLV3 => Err(refused("PROTOCOL_SSLv3")),
        PROTOCOL_TLSV1 => Err(refused("PROTOCOL_TLSv1")),
        PROTOCOL_TLSV1_1 => Err(refused("PROTOCOL_TLSv1_1")),
        PROTOCOL_TLS_CLIENT => Err(error(
            "ssl_version",
            "16 (PROTOCOL_TLS_CLIENT) is a client protocol; a server uses 17 \
             (PROTOCOL_TLS_SERVER)",
        )),
        other => Err(error(
            "ssl_version",
            format!("{other} is not an ssl.PROTOCOL_* value (17 is PROTOCOL_TLS_SERVER)"),
        )),
    }
}

/// The TLS settings, or `None` for plaintext (no `ssl_certfile` and none
/// of the others changed from their defaults).
pub fn tls_settings(inputs: &TlsInputs) -> Result<Option<TlsSettings>, TlsSettingError> {
    let TlsInputs {
        certfile,
        keyfile,
        password,
        ca_certs,
        cert_reqs,
        version,
        ciphers,
        crls,
        min_version: min,
        sni,
    } = inputs;
    let (certfile, keyfile) = match (certfile, keyfile) {
        (Some(c), Some(k)) => (c.clone(), k.clone()),
        (Some(_), None) => return Err(error("ssl_keyfile", "ssl_certfile needs ssl_keyfile")),
        (None, Some(_)) => return Err(error("ssl_certfile", "ssl_keyfile needs ssl_certfile")),
        (None, None) => {
            // Any other ssl_* setting asks for TLS, which needs a certificate.
            let given = [
                ("ssl_keyfile_password", password.is_some()),
                ("ssl_ca_certs", ca_certs.is_some()),
                ("ssl_cert_reqs", *cert_reqs != 0),
                ("ssl_version", *version != DEFAULT_VERSION),
                ("ssl_ciphers", ciphers != DEFAULT_CIPHERS),
                ("ssl_crl", !crls.is_empty()),
                ("ssl_min_version", min != DEFAULT_MIN_VERSION),
                ("ssl_sni", !sni.is_empty()),
            ];
            return match given.iter().find(|(_, g)| *g) {
                Some((name, _)) => Err(error(
                    "ssl_certfile",
                    format!("{name} is given without ssl_certfile and ssl_keyfile"),
                )),
                None => Ok(None),
            };
        }
    };
    let client_auth = match cert_reqs {
        0 => ClientAuth::None,
        1 => ClientAuth::Optional,
        2 => ClientAuth::Required,
        other => {
            return Err(error(
                "ssl_cert_reqs",
                format!("expected 0 (none), 1 (optional) or 2 (required), got {other}"),
            ))
        }
    };
    if client_auth != ClientAuth::None && ca_certs.is_none() {
        return Err(error(
            "ssl_ca_certs",
            format!("ssl_cert_reqs {cert_reqs} needs ssl_ca_certs to verify client certificates"),
        ));
    }
    if !crls.is_empty() && (ca_certs.is_none() || client_auth == ClientAuth::None) {
        return Err(error(
            "ssl_crl",
            "revocation lists apply to client certificates: give ssl_ca_certs and \
             ssl_cert_reqs 1 or 2",
        ));
    }
    let min_version = min_version(*version, min)?;
    let mut sni_certs: Vec<SniCert> = Vec::with_capacity(sni.len());
    for cert in sni {
        let host = cert.host.trim().to_ascii_lowercase();
        if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return Err(error(
                "ssl_sni",
                format!("expected a host name, got {:?}", cert.host),
            ));
        }
        if cert.certfile.as_os_str().is_empty() || cert.keyfile.as_os_str().is_empty() {
            return Err(error(
                "ssl_sni",
                format!("host {host:?}: expected a certificate file and a key file"),
            ));
        }
        if sni_certs.iter().any(|c| c.host == host) {
            return Err(error("ssl_sni", format!("host {host:?} is given twice")));
        }
        sni_certs.push(SniCert {
            host,
            ..cert.clone()
        });
    }
    Ok(Some(TlsSettings {
        certfile,
        keyfile,
        password: password.clone(),
        ca_certs: ca_certs.clone(),
        // ca_certs with cert_reqs 0: loaded but unused, as Python's ssl.
        client_auth,
        crls: crls.clone(),
        min_version,
        ciphers: Some(ciphers.clone()).filter(|c| !c.trim().is_empty()),
        sni: sni_certs,
        max_handshake_bytes: TlsSettings::DEFAULT_MAX_HANDSHAKE_BYTES,
        // The server sets what its protocol kinds speak (loop-server).
        alpn: Vec::new(),
    }))
}

impl TlsInputs {
    /// The `ssl_*` settings `values` give (their defaults otherwise): the
    /// command line's, or a `Config`'s (loop-py).
    pub fn from_values(values: &impl Lookup) -> TlsInputs {
        TlsInputs {
            certfile: rows::SSL_CERTFILE.read(values),
            keyfile: rows::SSL_KEYFILE.read(values),
            password: rows::SSL_KEYFILE_PASSWORD.read(values),
            ca_certs: rows::SSL_CA_CERTS.read(values),
            cert_reqs: rows::SSL_CERT_REQS.read(values),
            version: rows::SSL_VERSION.read(values),
            ciphers: rows::SSL_CIPHERS.read(values),
            crls: rows::SSL_CRL.read(values),
            min_version: rows::SSL_MIN_VERSION.read(values),
            // Each entry parsed when it was given (`Item::Sni`).
            sni: rows::SSL_SNI
                .read(values)
                .iter()
                .filter_map(|e| parse_sni(e).ok())
                .collect(),
        }
    }
}

/// The command line's check: [`tls_settings`]'s error with flags for the
/// settings' names.
pub(crate) fn check_cli(values: &Values) -> Result<(), CliError> {
    let Err(e) = tls_settings(&TlsInputs::from_values(values)) else {
        return Ok(());
    };
    let flag = |name: &str| find(name).and_then(|s| s.flag).map(|f| f.long);
    let mut problem = e.problem.clone();
    // Longest names first: ssl_keyfile_password before ssl_keyfile.
    let mut names: Vec<&str> = SETTINGS
        .iter()
        .map(|s| s.name)
        .filter(|n| n.starts_with("ssl_"))
        .collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    for name in names {
        if let Some(long) = flag(name) {
            problem = problem.replace(name, long);
        }
    }
    Err(CliError::Unusable {
        option: flag(e.setting).unwrap_or(e.setting),
        problem,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> TlsInputs {
        TlsInputs {
            version: DEFAULT_VERSION,
            ciphers: DEFAULT_CIPHERS.into(),
            min_version: DEFAULT_MIN_VERSION.into(),
            ..TlsInputs::default()
        }
    }

    fn with_cert() -> TlsInputs {
        TlsInputs {
            certfile: Some("c.pem".into()),
            keyfile: Some("k.pem".into()),
            ..base()
        }
    }

    #[test]
    fn plaintext_by_default() {
        assert_eq!(tls_settings(&base()), Ok(None));
    }

    #[test]
    fn cert_and_key_go_together() {
        let only_cert = TlsInputs {
            keyfile: None,
            ..with_cert()
        };
        assert_eq!(tls_settings(&only_cert).unwrap_err().setting, "ssl_keyfile");
        let only_key = TlsInputs {
            certfile: None,
            ..with_cert()
        };
        assert_eq!(tls_settings(&only_key).unwrap_err().setting, "ssl_certfile");
        let ca_only = TlsInputs {
            ca_certs: Some("ca.pem".into()),
            ..base()
        };
        let e = tls_settings(&ca_only).unwrap_err();
        assert!(
            e.to_string().contains("ssl_ca_certs is given without"),
            "{e}"
        );
    }

    #[test]
    fn uvicorn_meanings() {
        let s = tls_settings(&with_cert()).unwrap().unwrap();
        assert_eq!(s.min_version, MinVersion::Tls12);
        assert_eq!(s.client_auth, ClientAuth::None);
        let required = TlsInputs {
            cert_reqs: 2,
            ca_certs: Some("ca.pem".into()),
            ..with_cert()
        };
        let s = tls_settings(&required).unwrap().unwrap();
        assert_eq!(s.client_auth, ClientAuth::Required);
        for (version, ok) in [
            (2, true),
            (17, true),
            (5, true),
            (3, false),
            (4, false),
            (16, false),
        ] {
            let i = TlsInputs {
                version,
                ..with_cert()
            };
            assert_eq!(tls_settings(&i).is_ok(), ok, "{version}");
        }
        let e = tls_settings(&TlsInputs {
            version: 3,
            ..with_cert()
        })
        .unwrap_err();
        assert!(e.to_string().contains("PROTOCOL_TLSv1)"), "{e}");
        let tls13 = TlsInputs {
            min_version: "1.3".into(),
            ..with_cert()
        };
        assert_eq!(
            tls_settings(&tls13).unwrap().unwrap().min_version,
            MinVersion::Tls13
        );
    }

    #[test]
    fn client_auth_needs_a_ca() {
        let i = TlsInputs {
            cert_reqs: 1,
            ..with_cert()
        };
        assert_eq!(tls_settings(&i).unwrap_err().setting, "ssl_ca_certs");
        let crl = TlsInputs {
            crls: vec!["r.pem".into()],
            ..with_cert()
        };
        assert_eq!(tls_settings(&crl).unwrap_err().setting, "ssl_crl");
    }

    #[test]
    fn sni_entries() {
        let c = parse_sni("Example.com=a/c.pem:a/k.pem").unwrap();
        assert_eq!(c.host, "example.com");
        assert_eq!(c.certfile, PathBuf::from("a/c.pem"));
        assert_eq!(c.keyfile, PathBuf::from("a/k.pem"));
        for bad in ["example.com", "=c:k", "h=c", "h=:k", "h=c:"] {
            assert!(parse_sni(bad).is_err(), "{bad}");
        }
        let twice = TlsInputs {
            sni: vec![parse_sni("a=c:k").unwrap(), parse_sni("A=c2:k2").unwrap()],
            ..with_cert()
        };
        assert_eq!(tls_settings(&twice).unwrap_err().setting, "ssl_sni");
    }
}
