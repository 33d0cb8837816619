//! What a phase cost: the CPU time of the process, of each of its threads and
//! of the whole machine, read from `/proc`, and the medians taken over rounds.

use std::collections::HashMap;

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// What the scheduler says of one thread (`/proc/.../schedstat`): seconds run
/// on a CPU, and seconds spent ready to run but waiting for one.
#[derive(Clone, Copy, Default)]
pub struct Sched {
    pub cpu: f64,
    pub waiting: f64,
}

impl Sched {
    pub fn per(self, n: usize) -> Self {
        Sched {
            cpu: self.cpu / n as f64,
            waiting: self.waiting / n as f64,
        }
    }

    /// The medians of each field.
    pub fn median(all: Vec<Sched>) -> Sched {
        let mut cpu: Vec<f64> = all.iter().map(|s| s.cpu).collect();
        let mut waiting: Vec<f64> = all.iter().map(|s| s.waiting).collect();
        Sched {
            cpu: median(&mut cpu),
            waiting: median(&mut waiting),
        }
    }
}

/// The scheduler's figures so far for each thread of this process.
pub type ThreadCpu = HashMap<String, Sched>;

pub fn thread_cpu() -> ThreadCpu {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return HashMap::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            let mut fields = stat.split_whitespace().map(|f| f.parse::<f64>().ok());
            let (Some(Some(run)), Some(Some(wait))) = (fields.next(), fields.next()) else {
                return None;
            };
            Some((
                task.file_name().to_string_lossy().into_owned(),
                Sched {
                    cpu: run / 1e9,
                    waiting: wait / 1e9,
                },
            ))
        })
        .collect()
}

/// The median, over rounds, of each round's `numerators` over its `denominators`.
pub fn paired_median(numerators: &[f64], denominators: &[f64]) -> f64 {
    let mut ratios: Vec<f64> = numerators
        .iter()
        .zip(denominators)
        .map(|(n, d)| n / d)
        .collect();
    median(&mut ratios)
}

/// With `BENCH_THREADS=1`: a phase's CPU per request since the readings given,
/// by thread (name and id) and machine-wide (kernel threads included), to see
/// where one phase's extra cost is.
pub fn print_cpu(phase: &str, threads_before: &ThreadCpu, machine_before: f64, n: usize) {
    print_by_thread(threads_before, &thread_cpu(), n);
    println!(
        "    {phase}: machine-wide busy CPU per request {:.1} µs",
        (machine_busy() - machine_before) * 1e6 / n as f64
    );
}

/// CPU per request between two readings, by thread (name and id).
pub fn print_by_thread(before: &ThreadCpu, after: &ThreadCpu, n: usize) {
    let mut by_name: HashMap<String, f64> = HashMap::new();
    for (tid, now) in after {
        let then = before.get(tid).copied().unwrap_or_default();
        let name = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
            .map(|n| n.trim().to_owned())
            .unwrap_or_else(|_| "(gone)".into());
        *by_name.entry(format!("{name}#{tid}")).or_default() += now.cpu - then.cpu;
    }
    let mut rows: Vec<_> = by_name
        .into_iter()
        .filter(|(_, cpu)| *cpu * 1e6 > 0.1 * n as f64)
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rows: Vec<String> = rows
        .iter()
        .map(|(name, cpu)| format!("{name} {:.1}", cpu * 1e6 / n as f64))
        .collect();
    println!("    µs per request by thread: {}", rows.join(", "));
}

/// The figures, between two readings, of the thread that ran the most.
pub fn busiest(before: &ThreadCpu, after: &ThreadCpu) -> Sched {
    after
        .iter()
        .map(|(tid, now)| {
            let then = before.get(tid).copied().unwrap_or_default();
            Sched {
                cpu: now.cpu - then.cpu,
                waiting: now.waiting - then.waiting,
            }
        })
        .max_by(|a, b| a.cpu.total_cmp(&b.cpu))
        .unwrap_or_default()
}

/// CPU seconds the whole machine has spent busy, kernel threads (writeback,
/// the file system's journal) and anything else on the machine included.
pub fn machine_busy() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user, nice, system, irq and softirq: not idle or I/O wait, and not steal
    // (another guest's) or guest time (already in user and nice).
    let busy: f64 = [0, 1, 2, 5, 6].iter().filter_map(|&i| fields.get(i)).sum();
    busy / 100.0
}

/// CPU time this process has used (user + system), in seconds.
pub fn cpu_seconds() -> f64 {
    stat_cpu_seconds(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default())
}

/// utime + stime of a `/proc/.../stat` line, in seconds.
pub fn stat_cpu_seconds(stat: &str) -> f64 {
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// CPU seconds the calling thread has used (its schedstat).
pub fn own_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|stat| stat.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}
