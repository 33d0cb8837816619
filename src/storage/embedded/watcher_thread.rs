//! A thread that looks at the store every so often until it is dropped: the
//! shape both the memtable reaper and the journal pacer take.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use fjall::{Database, Keyspace, KeyspaceCreateOptions};

/// The running thread; dropping it stops the thread and waits for it, so
/// whatever store handles the thread holds are let go by then.
pub(super) struct WatcherThread {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl WatcherThread {
    /// Starts a thread named `name` that runs `start` once, then `look` every
    /// `every` until dropped.
    pub(super) fn spawn(
        name: &str,
        every: Duration,
        start: impl FnOnce() + Send + 'static,
        mut look: impl FnMut() + Send + 'static,
    ) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                start();
                loop {
                    look();
                    match stopped.recv_timeout(every) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })?;
        Ok(WatcherThread {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for WatcherThread {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Every keyspace `db` has now, opened, for a watcher to look at (a keyspace
/// that cannot be opened fails the watcher's start rather than going unwatched).
pub(super) fn every_keyspace(db: &Database) -> std::io::Result<Vec<Keyspace>> {
    db.list_keyspace_names()
        .iter()
        .map(|name| db.keyspace(name, KeyspaceCreateOptions::default))
        .collect::<Result<Vec<Keyspace>, _>>()
        .map_err(std::io::Error::other)
}
