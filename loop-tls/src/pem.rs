//! Reading PEM files: certificate chains, private keys (PKCS#8, PKCS#1,
//! SEC1, encrypted PKCS#8), CA bundles and CRLs. Every error names the
//! file, and where one is at fault the PEM block (its index and line).

use crate::error::ConfigError;
use pkcs8::der::pem::LineEnding;
use rustls_pki_types::pem::{PemObject, SectionKind};
use rustls_pki_types::{
    CertificateDer, CertificateRevocationListDer, PrivateKeyDer, PrivatePkcs1KeyDer,
    PrivatePkcs8KeyDer, PrivateSec1KeyDer,
};
use std::path::Path;

/// One `-----BEGIN ...-----` .. `-----END ...-----` block of a file.
struct Block<'a> {
    /// 1-based, counting every block of the file.
    index: usize,
    /// 1-based line of the BEGIN marker.
    line: usize,
    label: &'a str,
    /// The block's text, markers included.
    text: &'a str,
}

impl Block<'_> {
    fn error(&self, path: &Path, what: impl std::fmt::Display) -> ConfigError {
        file_error(
            path,
            format!(
                "PEM block {} ({}, line {}): {what}",
                self.index, self.label, self.line
            ),
        )
    }

    /// RFC 1421 headers (`Proc-Type: 4,ENCRYPTED`) between the BEGIN
    /// marker and the base64 body.
    fn is_legacy_encrypted(&self) -> bool {
        self.text
            .lines()
            .skip(1)
            .take_while(|l| l.contains(':'))
            .any(|l| l.trim_start().starts_with("Proc-Type:") && l.contains("ENCRYPTED"))
    }
}

pub(crate) fn file_error(path: &Path, what: impl Into<String>) -> ConfigError {
    ConfigError::File {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

fn read_text(path: &Path) -> Result<String, ConfigError> {
    let bytes = std::fs::read(path).map_err(|e| file_error(path, format!("cannot read: {e}")))?;
    String::from_utf8(bytes).map_err(|_| file_error(path, "not a PEM file (not text)"))
}

/// Split PEM text into its blocks; text between blocks is ignored (as
/// OpenSSL does), an unterminated block is an error.
fn blocks<'a>(path: &Path, text: &'a str) -> Result<Vec<Block<'a>>, ConfigError> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut open: Option<(usize, usize, &'a str)> = None;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim();
        match open {
            None => {
                if let Some(label) = marker(trimmed, "-----BEGIN ") {
                    open = Some((start, n + 1, label));
                }
            }
            Some((begin, line_no, label)) => {
                if let Some(end) = marker(trimmed, "-----END ") {
                    if end != label {
                        return Err(file_error(
                            path,
                            format!(
                                "PEM block {} (line {line_no}): BEGIN {label} ended by END {end}",
                                out.len() + 1
                            ),
                        ));
                    }
                    out.push(Block {
                        index: out.len() + 1,
                        line: line_no,
                        label,
                        text: &text[begin..offset],
                    });
                    open = None;
                }
            }
        }
    }
    if let Some((_, line_no, label)) = open {
        return Err(file_error(
            path,
            format!(
                "PEM block {} ({label}, line {line_no}): no END marker",
                out.len() + 1
            ),
        ));
    }
    Ok(out)
}

fn marker<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.strip_prefix(prefix)?.strip_suffix("-----")
}

/// The block's DER, through rustls-pki-types' decoder.
fn decode(path: &Path, block: &Block<'_>) -> Result<(SectionKind, Vec<u8>), ConfigError> {
    <(SectionKind, Vec<u8>)>::from_pem_slice(block.text.as_bytes())
        .map_err(|e| block.error(path, format!("unreadable PEM: {e}")))
}

/// A certificate chain, leaf first. At least one certificate.
pub(crate) fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let text = read_text(path)?;
    let mut certs = Vec::new();
    for block in blocks(path, &text)? {
        if block.label != "CERTIFICATE" && block.label != "TRUSTED CERTIFICATE" {
            continue;
        }
        let (_, mut der) = decode(path, &block)?;
        let rest = x509_parser::parse_x509_certificate(&der)
            .map_err(|e| block.error(path, format!("not an X.509 certificate: {e}")))?
            .0
            .len();
        // OpenSSL's TRUSTED CERTIFICATE appends trust settings after the
        // certificate: keep the certificate only.
        der.truncate(der.len() - rest);
        certs.push(CertificateDer::from(der));
    }
    if certs.is_empty() {
        return Err(file_error(
            path,
            "no certificate (no CERTIFICATE PEM block)",
        ));
    }
    Ok(certs)
}

/// How a password applies to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Password {
    /// Given exactly when the key is encrypted (`ssl_keyfile_password`).
    Exact,
    /// Used when the key is encrypted (SNI entries share the default's).
    IfEncrypted,
}

/// The first private key in the file (which may also hold certificates).
pub(crate) fn load_key(
    path: &Path,
    password: Option<&str>,
    use_: Password,
) -> Result<PrivateKeyDer<'static>, ConfigError> {
    let text = read_text(path)?;
    for block in blocks(path, &text)? {
        let key = match block.label {
            "PRIVATE KEY" | "RSA PRIVATE KEY" | "EC PRIVATE KEY" => {
                if block.is_legacy_encrypted() {
                    return Err(block.error(
                        path,
                        "legacy OpenSSL-encrypted PEM key (Proc-Type: 4,ENCRYPTED) is not supported; \
                         convert it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`",
                    ));
                }
                if password.is_some() && use_ == Password::Exact {
                    return Err(
                        block.error(path, "a password was given but the key is not encrypted")
                    );
                }
                let (kind, der) = decode(path, &block)?;
                match kind {
                    SectionKind::PrivateKey => PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)),
                    SectionKind::RsaPrivateKey => {
                        PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(der))
                    }
                    _ => PrivateKeyDer::Sec1(PrivateSec1KeyDer::from(der)),
                }
            }
            "ENCRYPTED PRIVATE KEY" => decrypt(path, &block, password)?,
            _ => continue,
        };
        // The key's own encoding is checked when a signer is made of it.
        return Ok(key);
    }
    Err(file_error(
        path,
        "no private key (no PRIVATE KEY, RSA PRIVATE KEY, EC PRIVATE KEY or ENCRYPTED PRIVATE KEY PEM block)",
    ))
}

fn decrypt(
    path: &Path,
    block: &Block<'_>,
    password: Option<&str>,
) -> Result<PrivateKeyDer<'static>, ConfigError> {
    let Some(password) = password else {
        return Err(block.error(path, "the key is encrypted and no password was given"));
    };
    let (_, der) = pkcs8::der::pem::decode_vec(block.text.as_bytes())
        .map_err(|e| block.error(path, format!("unreadable PEM: {e}")))?;
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
        .map_err(|e| block.error(path, format!("not an encrypted PKCS#8 key: {e}")))?;
    let plain = info
        .decrypt(password)
        .map_err(|_| block.error(path, "wrong password (the key cannot be decrypted)"))?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        plain.as_bytes().to_vec(),
    )))
}

/// CRLs from a PEM file (`X509 CRL` blocks) or a DER file.
pub(crate) fn load_crls(
    path: &Path,
) -> Result<Vec<CertificateRevocationListDer<'static>>, ConfigError> {
    let bytes = std::fs::read(path).map_err(|e| file_error(path, format!("cannot read: {e}")))?;
    let check = |der: &[u8], what: &str| {
        x509_parser::parse_x509_crl(der).map(|_| ()).map_err(|e| {
            file_error(
                path,
                format!("{what}not a certificate revocation list: {e}"),
            )
        })
    };
    let pem_text = std::str::from_utf8(&bytes)
        .ok()
        .filter(|t| t.contains("-----BEGIN "));
    let Some(text) = pem_text else {
        check(&bytes, "")?;
        return Ok(vec![CertificateRevocationListDer::from(bytes)]);
    };
    let mut crls = Vec::new();
    for block in blocks(path, text)? {
        if block.label != "X509 CRL" {
            continue;
        }
        let (_, der) = decode(path, &block)?;
        check(
            &der,
            &format!("PEM block {} (line {}): ", block.index, block.line),
        )?;
        crls.push(CertificateRevocationListDer::from(der));
    }
    if crls.is_empty() {
        return Err(file_error(path, "no CRL (no X509 CRL PEM block)"));
    }
    Ok(crls)
}

/// A certificate as PEM text (the ASGI TLS extension's form).
pub(crate) fn cert_pem(der: &[u8]) -> String {
    // Encoding a certificate-sized input into a String cannot fail.
    pkcs8::der::pem::encode_string("CERTIFICATE", LineEnding::LF, der).unwrap_or_default()
}
