//! ferroloop's reactor, with no Python in it.
//!
//! The parts mirror the layers of asyncio's `_run_once`:
//!
//! * [`clock`]: `time.monotonic()`-compatible seconds;
//! * [`poller`]: the OS readiness mechanism behind one small interface, a
//!   direct epoll backend on Linux and the portable `polling` crate elsewhere;
//! * [`reactor`]: fd registrations keyed by fd **and a generation**, so
//!   readiness reported for an earlier owner of an fd number is dropped;
//! * [`timers`]: a deadline heap with lazy cancellation;
//! * [`ready`]: the FIFO of callbacks ready to run, consumed a tick at a time;
//! * [`injector`] and [`door`]: the only way into a loop from other threads
//!   (the loop drains its injector; any thread holds a `Send + Sync` door);
//! * [`stats`]: the always-on counters behind `loop.stats()`;
//! * [`executor`]: a small single-threaded `async-task` runtime on top of the
//!   above for Rust embedders.
//!
//! The Python loop (`loop-py`) assembles the same parts with Python handles as
//! payloads; the executor assembles them with wakers.
#![cfg(unix)]

pub mod clock;
pub mod door;
pub mod error;
pub mod executor;
pub mod injector;
pub mod poller;
pub mod reactor;
pub mod ready;
pub mod stats;
pub mod timers;

pub use error::Error;
pub use poller::Interest;
