//! ferroloop's connection driver: every connection of a server, from the
//! accepted socket to the application's exchanges, in Rust without Python.
//!
//! ```text
//!  socket core      loop-transports  StreamCore: reads, writes, the write
//!                                    buffer and its water marks, the cork
//!  byte layer       plain | TLS      LayeredStream + loop-tls' session
//!                                    (this crate's `tls` adapter, ALPN)
//!  driver           this crate       listener, registry, reactor interest,
//!                                    end-of-tick flush, timeout sweep,
//!                                    drain, linger, how a connection ends
//!  protocol kind    HTTP/1.1 | WebSocket   behind one trait, `Protocol`
//!                                    (loop-http's ServerConnection,
//!                                    loop-ws' Connection), chosen after
//!                                    the handshake: ALPN, or the first
//!                                    bytes (the HTTP/2 preface is refused)
//!  exchange         one request's life, owned by its connection
//!  application      the host: loop-py's ASGI bridge, or a Rust handler
//!                   (examples/server.rs)
//! ```
//!
//! The driver does no I/O waiting and calls no one: the host owns the
//! reactor (loop-core's, as loop-py's loop and the example do), hands it
//! readiness and the clock's ticks, and takes back reactor updates
//! ([`IoUpdate`]) and application events ([`Event`]) after each call. So
//! the application can answer inside the call that delivered a request
//! without re-entering a borrowed driver, and the whole driver runs in
//! `cargo test` with socket pairs and a [`ManualClock`], and under a
//! fuzzer.
//!
//! Settings come from the settings table (loop-cli), typed
//! ([`ServerSettings::read`]): the same for `ferroloop.serve()` and for
//! the pure-Rust server.

#![cfg(unix)]

pub mod access;
mod addr;
mod clock;
mod conn;
pub mod counters;
mod driver;
mod event;
mod exchange;
mod http;
mod id;
mod logs;
pub mod protocol;
pub mod proxy;
pub mod runner;
mod settings;
pub mod tls;
mod ws;

pub use addr::Addr;
pub use clock::{Clock, ManualClock, Monotonic};
pub use driver::{
    Driver, Progress, SendRefused, WsNext, WsRefused, ACCEPT_BATCH, SHARED_ACCEPT_BATCH,
};
pub use event::{App, Event, IoUpdate};
pub use id::{ConnId, ExchangeId, Token};
pub use logs::Log;
pub use settings::{
    default_headers, ServerSettings, SettingsError, CLOSING_DRAIN, LINGER, PRODUCT,
};
