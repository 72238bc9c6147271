//! The server side of the opening handshake (RFC 6455 §4.2) and the
//! permessage-deflate negotiation (RFC 7692 §5–7).

use crate::config::Config;

/// Does this request ask for a WebSocket (its `Upgrade` lists the
/// `websocket` token)? Decides whether a request is a WebSocket session at
/// all; [`check_request`] then decides whether it is a valid one.
pub fn is_websocket_upgrade<'h>(headers: impl IntoIterator<Item = (&'h [u8], &'h [u8])>) -> bool {
    let _ = headers;
    todo!("loop-ws: handshake")
}

/// Check an opening handshake: `method`, whether it is HTTP/1.1, and its
/// header fields (names in any case, repeated fields as repeated pairs).
pub fn check_request<'h>(
    method: &[u8],
    http11: bool,
    headers: impl IntoIterator<Item = (&'h [u8], &'h [u8])>,
) -> Result<Offer, Refusal> {
    let _ = (method, http11, headers);
    todo!("loop-ws: handshake")
}

/// A valid opening handshake: what the client offered.
#[derive(Clone, Debug)]
pub struct Offer {
    _private: (),
}

impl Offer {
    /// The subprotocols offered (`Sec-WebSocket-Protocol`), in order.
    pub fn subprotocols(&self) -> &[String] {
        todo!("loop-ws: handshake")
    }

    /// Accept with `subprotocol` (the application's choice, if any): the
    /// `101` response's header fields and the negotiated deflate.
    pub fn accept(&self, config: &Config, subprotocol: Option<&str>) -> Accept {
        let _ = (config, subprotocol);
        todo!("loop-ws: handshake")
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

/// Negotiated permessage-deflate parameters (RFC 7692 §7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeflateParams {
    pub server_no_context_takeover: bool,
    pub client_no_context_takeover: bool,
    /// 9..=15.
    pub server_max_window_bits: u8,
    /// 9..=15.
    pub client_max_window_bits: u8,
}
