//! The server side of the opening handshake (RFC 6455 §4.2) and the
//! permessage-deflate negotiation (RFC 7692 §5–7).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use sha1::{Digest, Sha1};

use crate::config::Config;
use crate::fields::{is_token, list_has, list_items, parse_extensions, trim_ows, ExtensionOffer};
use crate::negotiate::negotiate;

/// RFC 6455 §1.3: appended to the key before hashing.
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Does this request ask for a WebSocket (its `Upgrade` lists the
/// `websocket` token)? Decides whether a request is a WebSocket session at
/// all; [`check_request`] then decides whether it is a valid one.
pub fn is_websocket_upgrade<'h>(headers: impl IntoIterator<Item = (&'h [u8], &'h [u8])>) -> bool {
    headers
        .into_iter()
        .any(|(name, value)| name.eq_ignore_ascii_case(b"upgrade") && list_has(value, b"websocket"))
}

/// Check an opening handshake: `method`, whether it is HTTP/1.1, and its
/// header fields (names in any case, repeated fields as repeated pairs).
pub fn check_request<'h>(
    method: &[u8],
    http11: bool,
    headers: impl IntoIterator<Item = (&'h [u8], &'h [u8])>,
) -> Result<Offer, Refusal> {
    if method != b"GET" {
        return Err(Refusal::bad("a WebSocket handshake must be a GET request"));
    }
    if !http11 {
        return Err(Refusal::bad("a WebSocket handshake needs HTTP/1.1"));
    }
    let mut upgrade = false;
    let mut connection = false;
    // Number of Sec-WebSocket-Version fields and whether the one seen is 13.
    let mut versions = 0usize;
    let mut version_13 = false;
    let mut keys = 0usize;
    let mut key: &[u8] = b"";
    let mut subprotocols = Vec::new();
    let mut protocols_valid = true;
    let mut extensions = Vec::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case(b"upgrade") {
            upgrade |= list_has(value, b"websocket");
        } else if name.eq_ignore_ascii_case(b"connection") {
            connection |= list_has(value, b"upgrade");
        } else if name.eq_ignore_ascii_case(b"sec-websocket-version") {
            versions += 1;
            version_13 = trim_ows(value) == b"13";
        } else if name.eq_ignore_ascii_case(b"sec-websocket-key") {
            keys += 1;
            key = trim_ows(value);
        } else if name.eq_ignore_ascii_case(b"sec-websocket-protocol") {
            for item in list_items(value) {
                if is_token(item) {
                    subprotocols.push(item.iter().map(|&b| char::from(b)).collect());
                } else {
                    protocols_valid = false;
                }
            }
        } else if name.eq_ignore_ascii_case(b"sec-websocket-extensions") {
            parse_extensions(value, &mut extensions);
        }
    }
    if !upgrade {
        return Err(Refusal::bad("missing Upgrade: websocket"));
    }
    if !connection {
        return Err(Refusal::bad("missing Connection: upgrade"));
    }
    if versions != 1 || !version_13 {
        return Err(Refusal {
            status: 426,
            reason: "unsupported Sec-WebSocket-Version (13 is supported)",
            headers: &[("sec-websocket-version", "13")],
        });
    }
    if keys != 1 || !valid_key(key) {
        return Err(Refusal::bad(
            "missing, repeated or invalid Sec-WebSocket-Key",
        ));
    }
    if !protocols_valid {
        return Err(Refusal::bad("invalid Sec-WebSocket-Protocol"));
    }
    Ok(Offer {
        accept_key: accept_key(key),
        subprotocols,
        extensions,
    })
}

/// A key is the base64 of 16 bytes (RFC 6455 §4.2.1 item 5): 24 characters
/// with canonical padding.
fn valid_key(key: &[u8]) -> bool {
    key.len() == 24 && BASE64.decode(key).is_ok_and(|k| k.len() == 16)
}

/// `Sec-WebSocket-Accept`: base64(SHA-1(key ++ GUID)) (RFC 6455 §4.2.2).
pub fn accept_key(key: &[u8]) -> String {
    let mut sha = Sha1::new();
    sha.update(key);
    sha.update(GUID);
    BASE64.encode(sha.finalize())
}

/// A valid opening handshake: what the client offered.
#[derive(Clone, Debug)]
pub struct Offer {
    accept_key: String,
    subprotocols: Vec<String>,
    extensions: Vec<ExtensionOffer>,
}

impl Offer {
    /// The subprotocols offered (`Sec-WebSocket-Protocol`), in order.
    pub fn subprotocols(&self) -> &[String] {
        &self.subprotocols
    }

    /// The extensions offered (`Sec-WebSocket-Extensions`), in order;
    /// malformed elements are left out.
    pub fn extensions(&self) -> &[ExtensionOffer] {
        &self.extensions
    }

    /// Accept with `subprotocol` (the application's choice, if any): the
    /// `101` response's header fields and the negotiated deflate. Whether
    /// the choice was among the offers is the caller's rule to apply; the
    /// HTTP serializer checks the value's bytes.
    pub fn accept(&self, config: &Config, subprotocol: Option<&str>) -> Accept {
        let mut headers = vec![
            ("upgrade", "websocket".to_string()),
            ("connection", "Upgrade".to_string()),
            ("sec-websocket-accept", self.accept_key.clone()),
        ];
        if let Some(protocol) = subprotocol {
            headers.push(("sec-websocket-protocol", protocol.to_string()));
        }
        let negotiated = if config.per_message_deflate {
            negotiate(&self.extensions)
        } else {
            None
        };
        let deflate = negotiated.map(|(params, answer)| {
            headers.push(("sec-websocket-extensions", answer));
            params
        });
        Accept { headers, deflate }
    }
}

/// The `101 Switching Protocols` answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accept {
    /// `upgrade`, `connection`, `sec-websocket-accept`, and when chosen
    /// `sec-websocket-protocol` and `sec-websocket-extensions`; lower-case
    /// names.
    pub headers: Vec<(&'static str, String)>,
    /// permessage-deflate as negotiated, for [`crate::Connection::new`].
    pub deflate: Option<DeflateParams>,
}

/// An invalid opening handshake: how to answer it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// 400, or 426 for an unsupported `Sec-WebSocket-Version`.
    pub status: u16,
    /// Why, for the log and the response body.
    pub reason: &'static str,
    /// Header fields the answer must carry (426: `sec-websocket-version:
    /// 13`).
    pub headers: &'static [(&'static str, &'static str)],
}

impl Refusal {
    fn bad(reason: &'static str) -> Refusal {
        Refusal {
            status: 400,
            reason,
            headers: &[],
        }
    }
}

/// Negotiated permessage-deflate parameters (RFC 7692 §7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeflateParams {
    pub server_no_context_takeover: bool,
    pub client_no_context_takeover: bool,
    /// 8..=15: the largest window our compressor may use. 8 (256 bytes)
    /// is below what zlib can produce, so such a session sends every
    /// message uncompressed, which RFC 7692 allows.
    pub server_max_window_bits: u8,
    /// 9..=15: the window our inflater uses (the client's declared limit,
    /// 8 read as 9, or 15).
    pub client_max_window_bits: u8,
}
