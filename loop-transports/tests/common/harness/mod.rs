//! The tests' harness: asyncio's stream-protocol lifecycle driven over the
//! cores on a loop-core reactor (what loop-py's native transports do with
//! Python protocols), so the cores' contract is tested with Rust protocols.

pub mod driver;
pub mod protocol;
pub mod transport;
