//! What a session costs in memory: its inline size, the heap an idle one
//! holds, and the peak while a deflate bomb is refused. Counted per thread
//! by a wrapping allocator, so parallel tests do not disturb each other.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use loop_ws::{Config, Connection, DeflateParams, MessageKind};
use support::*;

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn add(n: isize) {
    // `try_with`: the thread's slots may be gone while it exits.
    let _ = LIVE.try_with(|live| {
        let v = live.get() + n;
        live.set(v);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(v)));
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counters are plain thread-local cells that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Counts old and new at once, as a copying realloc holds both.
        add(new_size as isize);
        add(-(layout.size() as isize));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> isize {
    LIVE.with(Cell::get)
}

/// Reset the peak to now; return the peak since the last reset, above `base`.
fn peak_since(base: isize) -> isize {
    PEAK.with(Cell::get) - base
}

fn reset_peak() -> isize {
    let now = live();
    PEAK.with(|p| p.set(now));
    now
}

const DEFLATE: DeflateParams = DeflateParams {
    server_no_context_takeover: false,
    client_no_context_takeover: false,
    server_max_window_bits: 15,
    client_max_window_bits: 15,
};

#[test]
fn idle_session_size() {
    let size = std::mem::size_of::<Connection>();
    println!("size_of::<Connection>() = {size} bytes");
    assert!(size <= 400, "{size}");

    let before = live();
    let c = Connection::new(&Config::default(), Some(DEFLATE), 0.0);
    assert_eq!(
        live() - before,
        0,
        "new() allocates nothing, deflate negotiated or not"
    );
    drop(c);
    // Without deflate (with it, the first message sent allocates the
    // compressor: `deflate_state_after_use`).
    let mut c = Connection::new(&Config::default(), None, 0.0);

    // One small echo each way, then idle.
    c.receive(&text("hello"), 0.0);
    let m = c.next_message().unwrap();
    let mut out = Vec::new();
    c.send(MessageKind::Text, &m.data, &mut out).unwrap();
    drop((m, out));
    // A ping answered and its pong written out.
    c.receive(&frame(true, false, PING, b"x"), 0.0);
    let mut out = Vec::new();
    c.take_output(&mut out);
    drop(out);
    let idle = live() - before;
    drop(c);
    let leaked = live() - before;
    println!("heap of an idle session after an echo and a ping: {idle} bytes");
    assert!(idle <= 512, "{idle}");
    assert_eq!(leaked, 0, "nothing leaks");
}

#[test]
fn deflate_state_after_use() {
    let mut client = ClientDeflate::new(DEFLATE);
    let z = frame(true, true, TEXT, &client.compress(&[b'a'; 300]));
    let before = live();
    let mut c = Connection::new(&Config::default(), Some(DEFLATE), 0.0);
    c.receive(&z, 0.0);
    let _ = c.next_message();
    let inflate = live() - before;
    let mut out = Vec::new();
    c.send(MessageKind::Text, &[b'b'; 300], &mut out).unwrap();
    drop(out);
    let both = live() - before;
    println!("heap with inflater: {inflate} bytes; with inflater and compressor: {both} bytes");
}

#[test]
fn deflate_bomb_peak_memory() {
    let config = Config {
        max_message_size: 1 << 20,
        ..quiet()
    };
    let mut client = ClientDeflate::new(DEFLATE);
    let bomb = frame(true, true, BINARY, &client.compress(&vec![0u8; 16 << 20]));
    drop(client);
    let mut c = Connection::new(&config, Some(DEFLATE), 0.0);
    let base = reset_peak();
    c.receive(&bomb, 0.0);
    let peak = peak_since(base);
    assert_eq!(c.close_status().map(|(c, _)| c.0), Some(1009));
    println!(
        "peak heap while refusing a 16 MiB bomb ({} B on the wire) at a 1 MiB limit: {peak} bytes",
        bomb.len()
    );
    // The limit, doubled by Vec growth, plus a copy, plus the inflater.
    assert!(peak < 4 << 20, "{peak}");
}
