//! Choosing the certificate by the client's SNI: an exact host name
//! (case-insensitive), then a `*.example.com` entry for one more label,
//! else the default certificate.

use crate::config::SniCert;
use crate::error::ConfigError;
use crate::pem::{self, Password};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// A certificate chain with its key, and its leaf as PEM for `TlsInfo`.
#[derive(Debug)]
pub(crate) struct Served {
    pub(crate) key: Arc<CertifiedKey>,
    pub(crate) leaf_pem: String,
}

#[derive(Debug)]
pub(crate) struct SniResolver {
    default: Arc<Served>,
    exact: HashMap<String, Arc<Served>>,
    /// Keyed by what follows `*.`.
    wildcard: HashMap<String, Arc<Served>>,
}

impl SniResolver {
    pub(crate) fn load(
        certfile: &Path,
        keyfile: &Path,
        password: Option<&str>,
        sni: &[SniCert],
    ) -> Result<SniResolver, ConfigError> {
        let default = Arc::new(load_served(certfile, keyfile, password, Password::Exact)?);
        let mut exact = HashMap::new();
        let mut wildcard = HashMap::new();
        for entry in sni {
            let host = entry.host.trim().trim_end_matches('.').to_ascii_lowercase();
            let bad = |what: &str| {
                ConfigError::Invalid(format!("ssl_sni entry {:?}: {what}", entry.host))
            };
            let (map, name) = match host.strip_prefix("*.") {
                Some(rest) => (&mut wildcard, rest.to_string()),
                None => (&mut exact, host.clone()),
            };
            if name.is_empty() || name.split('.').any(|l| l.is_empty()) || name.contains('*') {
                return Err(bad(
                    "not a host name (a wildcard is `*.` and one label only)",
                ));
            }
            if map.contains_key(&name) {
                return Err(bad("host given twice"));
            }
            // The entry has no password setting of its own: the default's
            // applies when its key is encrypted.
            let served = load_served(
                &entry.certfile,
                &entry.keyfile,
                password,
                Password::IfEncrypted,
            )
            .map_err(|e| ConfigError::Invalid(format!("ssl_sni entry {:?}: {e}", entry.host)))?;
            map.insert(name, Arc::new(served));
        }
        Ok(SniResolver {
            default,
            exact,
            wildcard,
        })
    }

    /// The certificate for `server_name`.
    pub(crate) fn pick(&self, server_name: Option<&str>) -> &Arc<Served> {
        let Some(name) = server_name else {
            return &self.default;
        };
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        if let Some(served) = self.exact.get(&name) {
            return served;
        }
        name.split_once('.')
            .and_then(|(_, parent)| self.wildcard.get(parent))
            .unwrap_or(&self.default)
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.pick(client_hello.server_name()).key.clone())
    }
}

fn load_served(
    certfile: &Path,
    keyfile: &Path,
    password: Option<&str>,
    use_: Password,
) -> Result<Served, ConfigError> {
    let chain = pem::load_certs(certfile)?;
    let key = pem::load_key(keyfile, password, use_)?;
    let signer = crate::provider::sign::any_supported_type(&key)
        .map_err(|e| pem::file_error(keyfile, format!("unusable private key: {e}")))?;
    let leaf_pem = pem::cert_pem(&chain[0]);
    let key = CertifiedKey::new(chain, signer);
    key.keys_match().map_err(|e| {
        let what = match e {
            rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown) => {
                "cannot be checked against the certificate in"
            }
            // The usual case: the key of another certificate.
            _ => "does not match (is not the key pair of) the certificate in",
        };
        ConfigError::Invalid(format!(
            "{}: the private key {what} {}",
            keyfile.display(),
            certfile.display()
        ))
    })?;
    Ok(Served {
        key: Arc::new(key),
        leaf_pem,
    })
}
