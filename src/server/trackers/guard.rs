//! What keeps a listener within bounds: connections capped in total and per
//! address (a refused connection is closed at once, as a 503 would be), and
//! identifiers refused lately remembered per address, so that an unknown unit
//! reconnecting every few seconds costs no store read each time.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::TrackerSettings;

/// How long a refused identifier is refused again from memory.
const REFUSAL_MEMORY: Duration = Duration::from_secs(60);
/// Refusals remembered at most (past it, the expired are dropped, then all).
const MAX_REMEMBERED: usize = 10_000;

pub struct Guard {
    open: AtomicUsize,
    max_open: usize,
    max_per_address: usize,
    per_address: Mutex<HashMap<IpAddr, usize>>,
    refused: Mutex<HashMap<(IpAddr, String), Instant>>,
}

/// A connection counted against the caps until dropped.
pub struct Admitted {
    guard: Arc<Guard>,
    ip: IpAddr,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.guard.open.fetch_sub(1, Ordering::Relaxed);
        let mut per_address = lock(&self.guard.per_address);
        if let Some(n) = per_address.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                per_address.remove(&self.ip);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Guard {
    pub fn new(settings: &TrackerSettings) -> Self {
        Guard {
            open: AtomicUsize::new(0),
            max_open: settings.max_connections,
            max_per_address: settings.max_per_address,
            per_address: Mutex::new(HashMap::new()),
            refused: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a new connection from `ip`, or says which cap it is over.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, &'static str> {
        let mut per_address = lock(&self.per_address);
        if self.open.load(Ordering::Relaxed) >= self.max_open {
            return Err("capacity");
        }
        let from_ip = per_address.entry(ip).or_insert(0);
        if *from_ip >= self.max_per_address {
            return Err("address_capacity");
        }
        *from_ip += 1;
        self.open.fetch_add(1, Ordering::Relaxed);
        Ok(Admitted {
            guard: self.clone(),
            ip,
        })
    }

    /// Whether `identifier` was refused from `ip` within the last minute.
    pub fn refused_lately(&self, ip: IpAddr, identifier: &str) -> bool {
        let refused = lock(&self.refused);
        refused
            .get(&(ip, identifier.to_owned()))
            .is_some_and(|at| at.elapsed() < REFUSAL_MEMORY)
    }

    /// Remembers that `identifier` was refused from `ip`.
    pub fn note_refused(&self, ip: IpAddr, identifier: &str) {
        let mut refused = lock(&self.refused);
        if refused.len() >= MAX_REMEMBERED {
            refused.retain(|_, at| at.elapsed() < REFUSAL_MEMORY);
            if refused.len() >= MAX_REMEMBERED {
                refused.clear();
            }
        }
        refused.insert((ip, identifier.to_owned()), Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_capped_per_address_and_in_total_and_freed_on_drop() {
        let settings = TrackerSettings {
            max_connections: 3,
            max_per_address: 2,
            ..TrackerSettings::default()
        };
        let guard = Arc::new(Guard::new(&settings));
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let first = guard.admit(a).unwrap();
        let _second = guard.admit(a).unwrap();
        assert_eq!(guard.admit(a).err(), Some("address_capacity"));
        let _third = guard.admit(b).unwrap();
        assert_eq!(guard.admit(b).err(), Some("capacity"));
        drop(first);
        assert!(guard.admit(a).is_ok());
    }

    #[test]
    fn a_refused_identifier_is_remembered_for_its_address_only() {
        let guard = Guard::new(&TrackerSettings::default());
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        guard.note_refused(a, "356307042441013");
        assert!(guard.refused_lately(a, "356307042441013"));
        assert!(!guard.refused_lately(b, "356307042441013"));
        assert!(!guard.refused_lately(a, "356307042441014"));
    }
}
