//! ferroloop's WebSocket server side, sans-IO: bytes in, messages and
//! bytes out; no sockets, no clock of its own (the caller passes `now`), no
//! Python. The HTTP side (the request head, the `101` response) belongs to
//! whoever owns HTTP (`loop-http` in ferroloop); this crate only decides.
//!
//! - [`handshake`]: is this request a valid opening handshake (RFC 6455
//!   §4.2.1)? [`handshake::check_request`] answers with an [`Offer`] (the
//!   subprotocols and extensions the client offered) or a [`Refusal`] (the
//!   status, 400 or 426, and headers of the answer). [`Offer::accept`]
//!   gives the `101`'s headers and the negotiated permessage-deflate.
//! - [`Connection`]: the session after the `101`: frames, masking,
//!   fragmentation, UTF-8, control frames, the closing handshake, pings,
//!   limits, the receive queue, permessage-deflate.
//! - [`Config`]: every limit and timeout.

pub mod close;
pub mod config;
mod connection;
mod fields;
pub mod handshake;
mod negotiate;

pub use close::CloseCode;
pub use config::Config;
pub use connection::{
    Connection, Message, MessageKind, SendError, State, TimerAction, RECYCLE_MAX,
};
pub use fields::ExtensionOffer;
pub use handshake::{Accept, DeflateParams, Offer, Refusal};
