//! A certificate subject as an RFC 4514 distinguished name: the RDNs in
//! reverse order of the encoding (most specific first), joined with `,`,
//! multi-valued RDNs with `+`, values escaped.

use std::fmt::Write;
use x509_parser::der_parser::asn1_rs::ToDer;
use x509_parser::prelude::{FromDer, X509Certificate, X509Name};

/// RFC 4514 section 3's short names; other types by dotted OID.
const SHORT_NAMES: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.6", "C"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// The subject of a DER certificate; `None` if it does not parse.
pub(crate) fn subject_of(der: &[u8]) -> Option<String> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    Some(rfc4514(cert.subject()))
}

pub(crate) fn rfc4514(name: &X509Name<'_>) -> String {
    let mut out = String::new();
    let rdns: Vec<_> = name.iter().collect();
    for (i, rdn) in rdns.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, attr) in rdn.iter().enumerate() {
            if j > 0 {
                out.push('+');
            }
            let oid = attr.attr_type().to_id_string();
            match SHORT_NAMES.iter().find(|(o, _)| *o == oid) {
                Some((_, short)) => out.push_str(short),
                None => out.push_str(&oid),
            }
            out.push('=');
            match attr.as_str() {
                Ok(value) => escape(value, &mut out),
                // Not a string type: `#` and the value's DER, in hex.
                Err(_) => {
                    out.push('#');
                    for b in attr.attr_value().to_der_vec().unwrap_or_default() {
                        let _ = write!(out, "{b:02x}");
                    }
                }
            }
        }
    }
    out
}

fn escape(value: &str, out: &mut String) {
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if c == '\0' {
            out.push_str("\\00");
            continue;
        }
        if special {
            out.push('\\');
        }
        out.push(c);
    }
}
