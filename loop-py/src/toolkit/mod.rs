//! The toolkit (`ferroloop.toolkit`): multiloop's API for many loops in one
//! process, native where it crosses loops or threads.
//!
//! Every type here is safe to use from any loop and any thread at once, by
//! design and not by the GIL: shared state sits behind `std::sync` locks or
//! atomics, no lock is held while Python code runs, and a waiter on another
//! loop is woken through that loop's door ([`crate::event_loop::LoopDoor`])
//! or `call_soon_threadsafe`.
//!
//! - [`waiter`]: who waits (a task on any loop, or a plain thread) and how
//!   to wake them from anywhere;
//! - [`wait`]: driving a wait, as a native awaitable or a blocking call;
//! - [`channel`]: `Channel`, Go's `select`, multiloop's `select_channel`;
//! - [`signal`]: `Event` (set once) and `AsyncWaitGroup`'s counter;
//! - [`permits`]: the FIFO permit pool under `Lock`, `Semaphore` and
//!   `CapacityLimiter`;
//! - [`pool`]: `EventLoopThreadPool`'s submissions, run on worker loops.

mod channel;
mod permits;
mod pool;
mod signal;
mod wait;
mod waiter;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<wait::WaitOp>()?;
    m.add_class::<waiter::LoopCallback>()?;
    wait::install(m.py());
    channel::register(m)?;
    signal::register(m)?;
    permits::register(m)?;
    pool::register(m)?;
    Ok(())
}
