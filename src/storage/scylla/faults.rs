//! Fault injection for the ScyllaDB backend's algorithms, in tests: no cluster
//! runs here, so each algorithm is written against a small statements trait,
//! and tests run it against an in-memory fake that fails the statements a
//! test names (before they apply, or after, as a timeout after the write
//! reached the replicas looks to the client).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::storage::{StorageError, StorageResult};

/// Where a statement fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Nothing applied; the client sees an error.
    Before,
    /// Applied, but the client sees an error (an ambiguous timeout).
    After,
}

/// Statements to fail: (statement name, which execution counting from 1, how).
#[derive(Default)]
pub struct Faults {
    planned: Mutex<Vec<(&'static str, usize, Failure)>>,
    executed: Mutex<HashMap<&'static str, usize>>,
    log: Mutex<Vec<&'static str>>,
}

impl Faults {
    /// Fails the `nth` execution of `statement` (from 1).
    pub fn fail(&self, statement: &'static str, nth: usize, how: Failure) {
        self.planned.lock().unwrap().push((statement, nth, how));
    }

    /// Runs `statement`: `apply` changes the fake's state, unless a planned
    /// failure says it does not; the error a planned failure gives.
    pub fn run<T>(&self, statement: &'static str, apply: impl FnOnce() -> T) -> StorageResult<T> {
        self.log.lock().unwrap().push(statement);
        let nth = {
            let mut executed = self.executed.lock().unwrap();
            let n = executed.entry(statement).or_default();
            *n += 1;
            *n
        };
        let failure = {
            let planned = self.planned.lock().unwrap();
            planned
                .iter()
                .find(|(s, n, _)| *s == statement && *n == nth)
                .map(|(_, _, how)| *how)
        };
        let injected = || StorageError::unavailable(Injected(statement));
        match failure {
            None => Ok(apply()),
            Some(Failure::Before) => Err(injected()),
            Some(Failure::After) => {
                apply();
                Err(injected())
            }
        }
    }

    /// The statements run so far, in order.
    pub fn log(&self) -> Vec<&'static str> {
        self.log.lock().unwrap().clone()
    }

    /// How many times `statement` ran.
    pub fn count(&self, statement: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|s| **s == statement)
            .count()
    }
}

#[derive(Debug)]
struct Injected(&'static str);

impl std::fmt::Display for Injected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "injected failure of {}", self.0)
    }
}

impl std::error::Error for Injected {}
