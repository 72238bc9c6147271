//! permessage-deflate negotiation, server side (RFC 7692 §5, §7.1): pick
//! the first acceptable offer and say what we answer.
//!
//! The deflate backend (flate2 on zlib-rs) takes window bits 9..=15 only
//! (and panics outside), so 8 needs care:
//! - `server_max_window_bits=8` limits *our* window to 256 bytes, which
//!   zlib cannot produce (it silently uses 512). RFC 7692 lets a sender
//!   leave any message uncompressed, so we accept, answer 8, and send every
//!   message uncompressed on that session: the client still compresses.
//! - `client_max_window_bits=8` promises the client's window is at most
//!   256 bytes; an inflater with a 512-byte window reads that, so we use 9.

use crate::fields::ExtensionOffer;
use crate::handshake::DeflateParams;

pub(crate) const NAME: &str = "permessage-deflate";

/// The first acceptable permessage-deflate offer: the parameters and the
/// `Sec-WebSocket-Extensions` value that accepts it.
pub(crate) fn negotiate(offers: &[ExtensionOffer]) -> Option<(DeflateParams, String)> {
    offers
        .iter()
        .filter(|o| o.name.eq_ignore_ascii_case(NAME))
        .find_map(accept_offer)
}

/// A window-bits value: `1*DIGIT` without leading zero, 8..=15.
fn window_bits(value: &str) -> Option<u8> {
    if value.starts_with('0') || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse::<u8>().ok().filter(|b| (8..=15).contains(b))
}

/// Accept one offer, or `None` to decline it (a parameter unknown,
/// duplicated, with a missing or malformed value, or one we cannot honour).
fn accept_offer(offer: &ExtensionOffer) -> Option<(DeflateParams, String)> {
    let mut server_nct = false;
    let mut client_nct = false;
    let mut server_bits: Option<u8> = None;
    // Absent, present without a value, present with a value.
    let mut client_bits: Option<Option<u8>> = None;
    for (name, value) in &offer.params {
        let name = name.to_ascii_lowercase();
        match (name.as_str(), value) {
            ("server_no_context_takeover", None) if !server_nct => server_nct = true,
            ("client_no_context_takeover", None) if !client_nct => client_nct = true,
            ("server_max_window_bits", Some(v)) if server_bits.is_none() => {
                server_bits = Some(window_bits(v)?);
            }
            ("client_max_window_bits", v) if client_bits.is_none() => {
                client_bits = Some(match v {
                    None => None,
                    Some(v) => Some(window_bits(v)?),
                });
            }
            _ => return None,
        }
    }
    let params = DeflateParams {
        server_no_context_takeover: server_nct,
        client_no_context_takeover: client_nct,
        server_max_window_bits: server_bits.unwrap_or(15),
        // The client compresses within its own limit (or 15): an inflater
        // with that window reads it. We never ask for a smaller one.
        client_max_window_bits: client_bits.flatten().map_or(15, |b| b.max(9)),
    };
    let mut answer = String::from(NAME);
    if server_nct {
        answer.push_str("; server_no_context_takeover");
    }
    if client_nct {
        answer.push_str("; client_no_context_takeover");
    }
    if let Some(bits) = server_bits {
        answer.push_str("; server_max_window_bits=");
        answer.push_str(&bits.to_string());
    }
    Some((params, answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::parse_extensions;

    fn neg(header: &str) -> Option<(DeflateParams, String)> {
        let mut offers = Vec::new();
        parse_extensions(header.as_bytes(), &mut offers);
        negotiate(&offers)
    }

    fn params(snct: bool, cnct: bool, sbits: u8, cbits: u8) -> DeflateParams {
        DeflateParams {
            server_no_context_takeover: snct,
            client_no_context_takeover: cnct,
            server_max_window_bits: sbits,
            client_max_window_bits: cbits,
        }
    }

    #[test]
    fn plain_offer() {
        let (p, a) = neg("permessage-deflate").unwrap();
        assert_eq!(p, params(false, false, 15, 15));
        assert_eq!(a, "permessage-deflate");
        let (p, a) = neg("permessage-deflate; client_max_window_bits").unwrap();
        assert_eq!(p, params(false, false, 15, 15));
        assert_eq!(a, "permessage-deflate");
    }

    #[test]
    fn every_parameter() {
        let (p, a) = neg(
            "Permessage-Deflate; server_no_context_takeover; client_no_context_takeover; \
             server_max_window_bits=10; client_max_window_bits=\"12\"",
        )
        .unwrap();
        assert_eq!(p, params(true, true, 10, 12));
        assert_eq!(
            a,
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover; \
             server_max_window_bits=10"
        );
    }

    #[test]
    fn window_bits_eight() {
        // Accepted; the session then sends uncompressed (see the module doc).
        let (p, a) = neg("permessage-deflate; server_max_window_bits=8").unwrap();
        assert_eq!(p, params(false, false, 8, 15));
        assert_eq!(a, "permessage-deflate; server_max_window_bits=8");
        let (p, _) = neg("permessage-deflate; client_max_window_bits=8").unwrap();
        assert_eq!(p.client_max_window_bits, 9);
        // A declined offer gives way to the next one.
        let (p, a) =
            neg("permessage-deflate; server_max_window_bits=7, permessage-deflate").unwrap();
        assert_eq!(
            (p, a.as_str()),
            (params(false, false, 15, 15), "permessage-deflate")
        );
    }

    #[test]
    fn declined_offers() {
        for bad in [
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; server_max_window_bits=7",
            "permessage-deflate; server_max_window_bits=010",
            "permessage-deflate; client_max_window_bits=x",
            "permessage-deflate; server_no_context_takeover=1",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; client_max_window_bits; client_max_window_bits=10",
            "permessage-deflate; unknown",
            "x-webkit-deflate-frame",
            "permessage-deflate; p=\"a b\"",
        ] {
            assert_eq!(neg(bad), None, "{bad}");
        }
        // Unknown extensions are ignored, the first acceptable offer wins.
        let (p, _) =
            neg("foo, permessage-deflate; bogus, permessage-deflate; server_max_window_bits=9")
                .unwrap();
        assert_eq!(p, params(false, false, 9, 15));
    }
}
