//! Keeps an HTTP worker awake for a short while after its last request began
//! or ended, polling for work instead of sleeping at once (`--idle-poll-us`).
//!
//! Why: a worker whose requests wait for the GPS group commit goes to sleep,
//! and on a virtual machine waking its halted virtual CPU costs tens of
//! microseconds per answer; polling a short while avoids it (measured:
//! docs/perf-notes.md, 26 November, "A worker that polls before it sleeps").
//! Once the window passes with no request beginning or ending, the worker
//! sleeps as before, so an idle server costs nothing.
//!
//! While it polls, the worker's runtime checks its sockets (a non-blocking
//! `epoll_wait`) between every two polls of its tasks, so nothing waits on it,
//! and the thread yields its CPU to any other thread ready to run there.
//!
//! The server polls only where a worker has a CPU of its own (`--cpu-pinning`
//! placed it): with a worker on every CPU, polling takes the CPU the GPS
//! committer and the actors need (same notes).

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The default window: a few GPS syncs' worth, long enough to span the wait
/// for a batch's fdatasync (150-250 µs on the machines measured) and the
/// client's next request.
pub const DEFAULT_WINDOW: Duration = Duration::from_micros(250);

/// One worker thread's poller, shared by its requests and its polling task.
struct Poller {
    window: Duration,
    last_activity: Cell<Instant>,
    sleeping: Cell<bool>,
    wake: Notify,
}

thread_local! {
    static POLLER: std::cell::RefCell<Option<Rc<Poller>>> = const { std::cell::RefCell::new(None) };
}

/// Starts this worker thread's poller (once; later calls do nothing). Call on
/// the worker's thread, inside its runtime. A zero window turns it off.
pub fn start(window: Duration) {
    if window.is_zero() {
        return;
    }
    let poller = POLLER.with_borrow_mut(|slot| {
        if slot.is_some() {
            return None;
        }
        let poller = Rc::new(Poller {
            window,
            last_activity: Cell::new(Instant::now()),
            sleeping: Cell::new(false),
            wake: Notify::new(),
        });
        *slot = Some(poller.clone());
        Some(poller)
    });
    if let Some(poller) = poller {
        tokio::task::spawn_local(poll(poller));
    }
}

/// A request began or ended on this thread at `now`: poll on for another window.
pub fn activity(now: Instant) {
    POLLER.with_borrow(|poller| {
        if let Some(poller) = poller {
            poller.last_activity.set(now);
            if poller.sleeping.replace(false) {
                // Stores a permit if the task is not waiting yet: never lost.
                poller.wake.notify_one();
            }
        }
    });
}

async fn poll(poller: Rc<Poller>) {
    loop {
        // `yield_now` has the runtime poll its sockets and timers without
        // blocking before it runs this task again: a busy wait that still
        // serves every connection.
        while poller.last_activity.get().elapsed() < poller.window {
            // Lets any other thread ready to run on this CPU (the GPS
            // committer, an actor, the client on the same machine) go first.
            std::thread::yield_now();
            tokio::task::yield_now().await;
        }
        poller.sleeping.set(true);
        poller.wake.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a fresh thread with a current-thread runtime and a local set,
    /// as an actix worker has.
    fn on_a_worker<T: Send + 'static>(f: impl AsyncFnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            tokio::task::LocalSet::new().block_on(&runtime, f())
        })
        .join()
        .unwrap()
    }

    #[test]
    fn polls_while_requests_come_and_sleeps_once_they_stop() {
        let (spun, slept) = on_a_worker(async || {
            start(Duration::from_millis(20));
            let first = POLLER.with_borrow(|p| p.clone()).expect("started");
            start(Duration::from_millis(20));
            let again = POLLER.with_borrow(|p| p.clone()).expect("started");
            assert!(
                Rc::ptr_eq(&first, &again),
                "a second start replaced the poller"
            );
            drop((first, again));
            let sleeping = || POLLER.with_borrow(|p| p.as_ref().unwrap().sleeping.get());
            // Busy: the task keeps polling.
            let busy = Instant::now();
            activity(busy);
            tokio::task::yield_now().await;
            let spun = !sleeping();
            // Quiet for longer than the window: it sleeps, and new activity wakes it.
            while !sleeping() {
                assert!(busy.elapsed() < Duration::from_secs(10), "never slept");
                tokio::task::yield_now().await;
            }
            let slept = busy.elapsed() >= Duration::from_millis(20);
            activity(Instant::now());
            assert!(!sleeping(), "activity wakes the poller");
            tokio::task::yield_now().await;
            assert!(!sleeping());
            (spun, slept)
        });
        assert!(spun, "the poller slept while requests came");
        assert!(slept, "the poller slept before its window passed");
    }

    #[test]
    fn a_zero_window_starts_nothing_and_activity_is_harmless() {
        on_a_worker(async || {
            start(Duration::ZERO);
            activity(Instant::now());
            assert!(POLLER.with_borrow(Option::is_none));
        });
    }
}
