//! A small single-threaded runtime on the reactor, for Rust embedders.
//!
//! [`Runtime::block_on`] drives a future to completion on the current thread;
//! [`Handle::spawn`] runs more futures beside it; [`Handle::sleep`] and
//! [`Async`] (fd readiness) suspend them on the reactor's timers and poller.
//! Tasks are `async-task` tasks whose schedule function is `Send + Sync`:
//! a wake-up on the runtime's own thread pushes to its local ready queue,
//! one from any other thread goes through the runtime's door
//! ([`crate::door`]) and wakes the poller.
//!
//! ```no_run
//! use loop_core::executor::Runtime;
//! use std::time::Duration;
//! let rt = Runtime::new().unwrap();
//! let h = rt.handle();
//! let answer = rt.block_on(async move {
//!     let task = h.spawn(async { 40 + 2 });
//!     h.sleep(Duration::from_millis(1)).await;
//!     task.await
//! });
//! assert_eq!(answer, 42);
//! ```

use crate::door::Door;
use crate::injector::Injector;
use crate::poller::Interest;
use crate::reactor::{Reactor, Ready};
use crate::ready::ReadyQueue;
use crate::timers::{TimerEntry, Timers};
use crate::{clock, Error};
use async_task::{Runnable, Task};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;
use std::time::Duration;

static NEXT_RUNTIME_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The runtime whose `block_on` is running on this thread.
    static CURRENT: RefCell<Option<Rc<Inner>>> = const { RefCell::new(None) };
}

/// Per-fd readiness state: who waits for which direction.
#[derive(Default)]
struct IoSource {
    reader: Option<Waker>,
    writer: Option<Waker>,
    read_ready: bool,
    write_ready: bool,
}

struct TimerState {
    fired: Cell<bool>,
    cancelled: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

struct TimerSlot(Rc<TimerState>);

impl TimerEntry for TimerSlot {
    fn is_cancelled(&self) -> bool {
        self.0.cancelled.get()
    }
}

struct Inner {
    id: u64,
    owner: ThreadId,
    reactor: RefCell<Reactor<IoSource>>,
    timers: RefCell<Timers<TimerSlot>>,
    local: RefCell<ReadyQueue<Runnable>>,
    injector: Arc<Injector<Runnable>>,
}

/// Owns the reactor; runs futures on the thread that calls `block_on`.
pub struct Runtime {
    inner: Rc<Inner>,
}

/// A cheap, cloneable reference to a runtime, for spawning and timers.
#[derive(Clone)]
pub struct Handle {
    inner: Rc<Inner>,
}

/// Wakes `block_on`'s main future from any thread.
struct MainWaker {
    woken: AtomicBool,
    door: Door<Runnable>,
}

impl Wake for MainWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.door.wake();
    }
}

/// Restores the previous current runtime when `block_on` returns or unwinds.
struct EnterGuard(Option<Rc<Inner>>);

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

impl Runtime {
    pub fn new() -> Result<Runtime, Error> {
        let reactor = Reactor::new()?;
        let injector = Arc::new(Injector::new(reactor.notifier()));
        Ok(Runtime {
            inner: Rc::new(Inner {
                id: NEXT_RUNTIME_ID.fetch_add(1, Ordering::Relaxed),
                owner: std::thread::current().id(),
                reactor: RefCell::new(reactor),
                timers: RefCell::new(Timers::new()),
                local: RefCell::new(ReadyQueue::new()),
                injector,
            }),
        })
    }

    pub fn handle(&self) -> Handle {
        Handle {
            inner: Rc::clone(&self.inner),
        }
    }

    /// Run `future` to completion, running spawned tasks, timers and I/O.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(Rc::clone(&self.inner)));
        let _guard = EnterGuard(previous);
        let main = Arc::new(MainWaker {
            woken: AtomicBool::new(true),
            door: Door::new(Arc::clone(&self.inner.injector)),
        });
        let waker = Waker::from(Arc::clone(&main));
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        let mut ready = Vec::new();
        loop {
            if main.woken.swap(false, Ordering::AcqRel) {
                if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                    return output;
                }
            }
            self.inner.run_ready_tasks();
            let idle = self.inner.local.borrow().is_empty() && !main.woken.load(Ordering::Acquire);
            let timeout = if idle { self.inner.poll_timeout() } else { 0 };
            self.inner.poll_io(timeout, &mut ready);
            self.inner.fire_timers();
        }
    }
}

impl Inner {
    /// Run the tasks that are ready now (those they wake run next round).
    fn run_ready_tasks(&self) {
        if !self.injector.is_empty() {
            let mut injected = Vec::new();
            self.injector.take_all(&mut injected);
            let mut local = self.local.borrow_mut();
            for runnable in injected {
                local.push(runnable);
            }
        }
        let n = self.local.borrow().begin_tick();
        for _ in 0..n {
            let next = self.local.borrow_mut().pop();
            match next {
                Some(runnable) => {
                    runnable.run();
                }
                None => break,
            }
        }
    }

    fn poll_timeout(&self) -> i32 {
        let mut discarded = Vec::new();
        let next = self.timers.borrow_mut().next_deadline(&mut discarded);
        drop(discarded);
        match next {
            Some(deadline) => clock::timeout_millis(deadline - clock::monotonic()),
            None => -1,
        }
    }

    fn poll_io(&self, timeout: i32, ready: &mut Vec<Ready>) {
        ready.clear();
        let wait = self.reactor.borrow_mut().poll(timeout, ready);
        match wait {
            Ok(w) if w.woken => self.injector.acknowledge_wake(),
            Ok(_) => {}
            // A signal interrupted the wait (or, impossible for a valid epoll
            // fd, the wait failed): the next round simply polls again.
            Err(_) => {}
        }
        let mut wakers = Vec::new();
        {
            let mut reactor = self.reactor.borrow_mut();
            for r in ready.iter() {
                let Some(source) = reactor.get_mut(r.fd) else {
                    continue;
                };
                let mut interest = source.interest;
                if r.readable {
                    source.data.read_ready = true;
                    interest.readable = false;
                    wakers.extend(source.data.reader.take());
                }
                if r.writable {
                    source.data.write_ready = true;
                    interest.writable = false;
                    wakers.extend(source.data.writer.take());
                }
                // One-shot: the waiter re-arms when it waits again, so a
                // level-triggered fd nobody waits on does not spin the loop.
                let _ = reactor.set_interest(r.fd, interest);
            }
        }
        wakers.into_iter().for_each(Waker::wake);
    }

    fn fire_timers(&self) {
        let until = clock::monotonic() + clock::resolution();
        let mut discarded = Vec::new();
        let mut due = Vec::new();
        {
            let mut timers = self.timers.borrow_mut();
            while let Some(slot) = timers.pop_due(until, &mut discarded) {
                due.push(slot);
            }
        }
        for slot in due {
            slot.0.fired.set(true);
            let waker = slot.0.waker.borrow_mut().take();
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

impl Handle {
    /// The runtime running on this thread.
    pub fn current() -> Result<Handle, Error> {
        CURRENT
            .with(|c| c.borrow().clone())
            .map(|inner| Handle { inner })
            .ok_or(Error::NoRuntime)
    }

    /// Run `future` on this runtime beside the `block_on` future.
    pub fn spawn<F>(&self, future: F) -> Task<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let door = Door::new(Arc::clone(&self.inner.injector));
        let owner = self.inner.owner;
        let id = self.inner.id;
        let schedule = move |runnable: Runnable| {
            let mut runnable = Some(runnable);
            if std::thread::current().id() == owner {
                CURRENT.with(|c| {
                    if let Some(inner) = c.borrow().as_ref().filter(|i| i.id == id) {
                        inner.local.borrow_mut().push_opt(runnable.take());
                    }
                });
            }
            if let Some(runnable) = runnable {
                // A closed door means the runtime is gone: dropping the
                // runnable cancels the task, which is what its owner expects.
                let _ = door.send(runnable);
            }
        };
        let (runnable, task) = async_task::spawn_local(future, schedule);
        runnable.schedule();
        task
    }

    /// Complete after `duration`.
    pub fn sleep(&self, duration: Duration) -> Sleep {
        Sleep {
            inner: Rc::clone(&self.inner),
            deadline: clock::monotonic() + duration.as_secs_f64(),
            state: None,
        }
    }
}

/// Future returned by [`Handle::sleep`]; dropping it cancels the timer.
pub struct Sleep {
    inner: Rc<Inner>,
    deadline: f64,
    state: Option<Rc<TimerState>>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(state) = &self.state {
            if state.fired.get() {
                return Poll::Ready(());
            }
            *state.waker.borrow_mut() = Some(cx.waker().clone());
            return Poll::Pending;
        }
        if clock::monotonic() >= self.deadline {
            return Poll::Ready(());
        }
        let state = Rc::new(TimerState {
            fired: Cell::new(false),
            cancelled: Cell::new(false),
            waker: RefCell::new(Some(cx.waker().clone())),
        });
        self.inner
            .timers
            .borrow_mut()
            .push(self.deadline, TimerSlot(Rc::clone(&state)));
        self.state = Some(state);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(state) = &self.state {
            if !state.fired.get() {
                state.cancelled.set(true);
                let mut discarded = Vec::new();
                if let Ok(mut timers) = self.inner.timers.try_borrow_mut() {
                    timers.note_cancelled(&mut discarded);
                }
            }
        }
    }
}

/// An I/O object registered with the runtime for readiness.
///
/// The fd is registered on creation (and set non-blocking) and deregistered
/// before the object is dropped, so its number can never outlive the
/// registration.
pub struct Async<T: AsRawFd> {
    io: Option<T>,
    fd: RawFd,
    inner: Rc<Inner>,
}

impl<T: AsRawFd> Async<T> {
    /// Register `io` with the runtime running on this thread.
    pub fn new(io: T) -> io::Result<Async<T>> {
        let handle = Handle::current()?;
        let fd = io.as_raw_fd();
        set_nonblocking(fd)?;
        handle
            .inner
            .reactor
            .borrow_mut()
            .register(fd, Interest::NONE, IoSource::default())?;
        Ok(Async {
            io: Some(io),
            fd,
            inner: handle.inner,
        })
    }

    pub fn get_ref(&self) -> &T {
        // `io` is only taken in `drop`.
        self.io.as_ref().expect("Async io is present until drop")
    }

    /// Wait until the fd is readable.
    pub fn readable(&self) -> Readiness<'_, T> {
        Readiness {
            source: self,
            write: false,
        }
    }

    /// Wait until the fd is writable.
    pub fn writable(&self) -> Readiness<'_, T> {
        Readiness {
            source: self,
            write: true,
        }
    }

    /// Retry a non-blocking read-side operation until it stops blocking.
    pub async fn read_with<R>(&self, mut op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        loop {
            match op(self.get_ref()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable().await?,
                result => return result,
            }
        }
    }

    /// Retry a non-blocking write-side operation until it stops blocking.
    pub async fn write_with<R>(&self, mut op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        loop {
            match op(self.get_ref()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable().await?,
                result => return result,
            }
        }
    }
}

impl<T: AsRawFd> Drop for Async<T> {
    fn drop(&mut self) {
        let source = self.inner.reactor.borrow_mut().deregister(self.fd);
        drop(source);
        drop(self.io.take());
    }
}

/// Future returned by [`Async::readable`] / [`Async::writable`].
pub struct Readiness<'a, T: AsRawFd> {
    source: &'a Async<T>,
    write: bool,
}

impl<T: AsRawFd> Future for Readiness<'_, T> {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let fd = self.source.fd;
        let mut reactor = self.source.inner.reactor.borrow_mut();
        let Some(source) = reactor.get_mut(fd) else {
            return Poll::Ready(Err(io::Error::from_raw_os_error(libc::EBADF)));
        };
        let mut interest = source.interest;
        if self.write {
            if std::mem::take(&mut source.data.write_ready) {
                return Poll::Ready(Ok(()));
            }
            source.data.writer = Some(cx.waker().clone());
            interest.writable = true;
        } else {
            if std::mem::take(&mut source.data.read_ready) {
                return Poll::Ready(Ok(()));
            }
            source.data.reader = Some(cx.waker().clone());
            interest.readable = true;
        }
        match reactor.set_interest(fd, interest) {
            Ok(()) => Poll::Pending,
            Err(e) => Poll::Ready(Err(e.into())),
        }
    }
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on an fd owned by the caller's I/O object; results checked.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    use std::time::Instant;

    #[test]
    fn block_on_returns_the_output() {
        let rt = Runtime::new().unwrap();
        assert_eq!(rt.block_on(async { 7 }), 7);
    }

    #[test]
    fn spawned_tasks_run_and_join() {
        let rt = Runtime::new().unwrap();
        let h = rt.handle();
        let sum = rt.block_on(async move {
            let tasks: Vec<_> = (0..100u64).map(|i| h.spawn(async move { i * 2 })).collect();
            let mut sum = 0;
            for t in tasks {
                sum += t.await;
            }
            sum
        });
        assert_eq!(sum, 9900);
    }

    #[test]
    fn sleeps_complete_in_deadline_order() {
        let rt = Runtime::new().unwrap();
        let h = rt.handle();
        let order = Rc::new(RefCell::new(Vec::new()));
        let o = Rc::clone(&order);
        let start = Instant::now();
        rt.block_on(async move {
            let mut tasks = Vec::new();
            for (i, ms) in [(0, 30u64), (1, 10), (2, 20)] {
                let h2 = h.clone();
                let o = Rc::clone(&o);
                tasks.push(h.spawn(async move {
                    h2.sleep(Duration::from_millis(ms)).await;
                    o.borrow_mut().push(i);
                }));
            }
            for t in tasks {
                t.await;
            }
        });
        assert_eq!(*order.borrow(), vec![1, 2, 0]);
        assert!(start.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn dropped_sleep_is_cancelled() {
        let rt = Runtime::new().unwrap();
        let h = rt.handle();
        rt.block_on(async move {
            let mut long = h.sleep(Duration::from_secs(3600));
            // Poll once to register the timer, then drop it.
            let waker = Waker::noop();
            let mut cx = Context::from_waker(waker);
            assert!(Pin::new(&mut long).poll(&mut cx).is_pending());
            drop(long);
            h.sleep(Duration::from_millis(1)).await;
        });
    }

    #[test]
    fn wake_from_another_thread() {
        let rt = Runtime::new().unwrap();
        let h = rt.handle();
        let (tx, rx) = std::sync::mpsc::channel::<Waker>();
        let flag = Arc::new(AtomicBool::new(false));
        let f2 = Arc::clone(&flag);
        let t = std::thread::spawn(move || {
            let waker = rx.recv().unwrap();
            std::thread::sleep(Duration::from_millis(20));
            f2.store(true, Ordering::Release);
            waker.wake();
        });
        let task = h.spawn(std::future::poll_fn(move |cx| {
            if flag.load(Ordering::Acquire) {
                Poll::Ready(5)
            } else {
                let _ = tx.send(cx.waker().clone());
                Poll::Pending
            }
        }));
        assert_eq!(rt.block_on(task), 5);
        t.join().unwrap();
    }

    #[test]
    fn fd_readiness_on_a_socketpair() {
        let rt = Runtime::new().unwrap();
        let h = rt.handle();
        let (a, mut b) = UnixStream::pair().unwrap();
        let got = rt.block_on(async move {
            let a = Async::new(a).unwrap();
            let writer = h.spawn(async move {
                b.write_all(b"ping").unwrap();
                b
            });
            let mut buf = [0u8; 16];
            let n = a.read_with(|mut s| s.read(&mut buf)).await.unwrap();
            let _b = writer.await;
            buf[..n].to_vec()
        });
        assert_eq!(got, b"ping");
    }

    #[test]
    fn handle_outside_a_runtime_is_an_error() {
        assert!(matches!(Handle::current(), Err(Error::NoRuntime)));
    }
}
