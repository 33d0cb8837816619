//! Where the hot path's threads run: with fewer HTTP workers than CPUs, each
//! worker stays on a CPU of its own and the GPS committer on the CPUs no worker
//! has (`--cpu-pinning auto`, the default).
//!
//! Why: the committer wakes thousands of times a second, and left to the
//! scheduler it lands on the busy worker's CPU and preempts it (measured:
//! docs/perf-notes.md, "CPU placement").
//!
//! With as many workers as CPUs (the default worker count) nothing is pinned:
//! every CPU has a worker and the committer has no CPU of its own to go to.
//!
//! A thread starts with the CPUs of the thread that created it, so the threads
//! a worker starts for blocking work (tokio's blocking pool: storage calls,
//! password hashing) would stay on the worker's CPU; blocking work goes through
//! [`spawn_blocking`], which lets them run anywhere again.

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The CPUs the process could use before anything was pinned; set once a
/// placement is planned.
static PROCESS_CPUS: OnceLock<Vec<usize>> = OnceLock::new();

thread_local! {
    /// Whether this thread's CPUs were checked by [`widen_inherited`] (or set
    /// on purpose by a placement).
    static SETTLED: Cell<bool> = const { Cell::new(false) };
}

/// `--cpu-pinning`: whether the workers and the GPS committer are placed on
/// CPUs of their own when there are more CPUs than workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum CpuPinning {
    #[default]
    Auto,
    Off,
}

/// The CPUs (as the kernel numbers them) each kind of thread is kept on; both
/// empty when nothing is pinned.
#[derive(Debug)]
pub struct CpuPlacement {
    workers: Vec<usize>,
    committer: Vec<usize>,
    /// Workers placed so far: the next one takes the next CPU.
    placed: AtomicUsize,
}

impl CpuPlacement {
    /// The placement of `workers` HTTP workers over the CPUs this process may
    /// run on.
    pub fn plan(pinning: CpuPinning, workers: usize) -> Self {
        let allowed = match pinning {
            CpuPinning::Off => None,
            CpuPinning::Auto => allowed_cpus(),
        };
        let placement = Self::over(allowed.as_deref().unwrap_or_default(), workers);
        if placement.pins()
            && let Some(allowed) = allowed
        {
            PROCESS_CPUS.get_or_init(|| allowed);
        }
        placement
    }

    /// Workers take the first CPUs, one each, and the committer the rest; with
    /// no CPU left over, nothing is pinned.
    fn over(allowed: &[usize], workers: usize) -> Self {
        let (workers, committer) = if workers >= 1 && allowed.len() > workers {
            (allowed[..workers].to_vec(), allowed[workers..].to_vec())
        } else {
            Default::default()
        };
        Self {
            workers,
            committer,
            placed: AtomicUsize::new(0),
        }
    }

    /// Whether any thread is kept on CPUs.
    pub fn pins(&self) -> bool {
        !self.workers.is_empty()
    }

    /// Keeps the calling thread, a worker starting, on the next worker CPU (a
    /// worker restarted after a panic shares one).
    pub fn place_worker(&self) {
        if self.pins() {
            let n = self.placed.fetch_add(1, Ordering::Relaxed);
            pin_current_thread(std::slice::from_ref(&self.workers[n % self.workers.len()]));
        }
    }

    /// Keeps the calling thread, the committer, off the workers' CPUs.
    pub fn place_committer(&self) {
        if self.pins() {
            pin_current_thread(&self.committer);
        }
    }

    /// For the start-up log line.
    pub fn describe(&self) -> String {
        format!(
            "HTTP workers on CPUs {:?}, GPS committer on CPUs {:?}",
            self.workers, self.committer
        )
    }
}

/// `tokio::task::spawn_blocking`, for every piece of blocking work: the pool's
/// thread may have been started by a pinned worker, and is let run on every
/// CPU of the process again first.
pub fn spawn_blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> tokio::task::JoinHandle<T> {
    tokio::task::spawn_blocking(|| {
        widen_inherited();
        work()
    })
}

/// Lets a thread that may have inherited a pinned thread's CPU run on every CPU
/// of the process again. Cheap after the first call in a thread (one
/// thread-local read); does nothing while nothing is pinned.
fn widen_inherited() {
    if SETTLED.replace(true) {
        return;
    }
    if let Some(cpus) = PROCESS_CPUS.get()
        && allowed_cpus().as_ref() != Some(cpus)
    {
        pin_current_thread(cpus);
    }
}

/// The CPUs the calling thread may run on, or `None` if the kernel will not say.
pub fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: `set` is a plain bit set the kernel fills in; its size is passed.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
                .collect(),
        )
    }
}

/// Restricts the calling thread to `cpus`. A refusal (a container that forbids
/// it) costs only the placement: it is logged and the thread runs anywhere.
fn pin_current_thread(cpus: &[usize]) {
    SETTLED.set(true);
    // SAFETY: as in `allowed_cpus`; CPU_SET only sets bits below CPU_SETSIZE.
    let refused = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
    };
    if refused {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            ?cpus,
            "could not keep a thread on its CPUs; it runs wherever the scheduler puts it"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewer_workers_than_cpus_get_a_cpu_each_and_the_committer_the_rest() {
        let placement = CpuPlacement::over(&[0, 1, 2, 3], 1);
        assert_eq!(
            (placement.workers, placement.committer),
            (vec![0], vec![1, 2, 3])
        );
        // The CPUs the process may use, whatever their numbers (taskset -c 2,5,7).
        let placement = CpuPlacement::over(&[2, 5, 7], 2);
        assert_eq!(
            (placement.workers, placement.committer),
            (vec![2, 5], vec![7])
        );
    }

    #[test]
    fn as_many_workers_as_cpus_or_more_pin_nothing() {
        assert!(!CpuPlacement::over(&[0, 1], 2).pins());
        assert!(!CpuPlacement::over(&[0, 1], 8).pins());
        assert!(!CpuPlacement::over(&[0], 1).pins());
        assert!(!CpuPlacement::plan(CpuPinning::Off, 1).pins());
        // Placing threads by a placement that pins nothing leaves them as they are.
        let allowed = allowed_cpus().unwrap();
        let nothing = CpuPlacement::over(&[0, 1], 2);
        assert_eq!(placed_on(|| nothing.place_worker()), allowed);
        assert_eq!(placed_on(|| nothing.place_committer()), allowed);
    }

    /// The CPUs a thread that places itself by `place` is then allowed.
    fn placed_on(place: impl FnOnce() + Send) -> Vec<usize> {
        std::thread::scope(|s| {
            s.spawn(|| {
                place();
                allowed_cpus().unwrap()
            })
            .join()
            .unwrap()
        })
    }

    #[test]
    fn threads_are_kept_on_their_cpus() {
        let allowed = allowed_cpus().unwrap();
        if allowed.len() < 2 {
            eprintln!("skipped: pinning needs two CPUs, this process may use {allowed:?}");
            return;
        }
        // One CPU left for the committer, a worker on each of the others.
        let workers = allowed.len() - 1;
        let placement = CpuPlacement::over(&allowed, workers);
        for n in 0..=workers {
            // The last one is a worker restarted: it shares the first CPU.
            let expected = allowed[n % workers];
            assert_eq!(placed_on(|| placement.place_worker()), [expected]);
        }
        assert_eq!(
            placed_on(|| placement.place_committer()),
            [allowed[workers]]
        );
        // The placing thread itself is untouched.
        assert_eq!(allowed_cpus().unwrap(), allowed);

        // A thread a pinned worker starts inherits the worker's CPU, and widens
        // itself back to all of the process's.
        PROCESS_CPUS.get_or_init(|| allowed.clone());
        let (inherited, widened) = std::thread::scope(|s| {
            s.spawn(|| {
                placement.place_worker();
                std::thread::spawn(|| {
                    let inherited = allowed_cpus().unwrap();
                    widen_inherited();
                    (inherited, allowed_cpus().unwrap())
                })
                .join()
                .unwrap()
            })
            .join()
            .unwrap()
        });
        assert_eq!(inherited.len(), 1);
        assert_eq!(widened, allowed);
    }
}
