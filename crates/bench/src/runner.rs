//! Running one test: spreading connections over threads and runtimes,
//! starting the clock when all are connected, the live progress line, and
//! collecting the result.
//!
//! Without `--threads` everything runs on one current-thread tokio runtime
//! on the main thread, as redis-benchmark runs one event loop. With
//! `--threads N` they are all spawned on one multi-thread runtime of N
//! workers (`--runtime multi`, the default, which measured faster: see
//! [`RuntimeKind`]), or dealt round-robin to N OS threads, each with its own
//! current-thread runtime (`--runtime per-thread`).
//! Each thread (or group) records into its own histogram, merged at the end.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::args::{Config, RuntimeKind};
use crate::driver::{drive, Job, Shared, Target};
use crate::histogram::Histogram;
use crate::suite::Test;

/// How often the progress line is redrawn (redis-benchmark's rate).
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// What a test measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub title: String,
    /// Requests answered.
    pub requests: u64,
    /// Error replies among them.
    pub errors: u64,
    /// The text of the first error reply, when there was one.
    pub first_error: Option<String>,
    /// From the moment all connections were ready to the last reply.
    pub seconds: f64,
    pub latency: Histogram,
}

impl Outcome {
    /// Requests per second (infinite for a run too short to time).
    pub fn rps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.requests as f64 / self.seconds
        } else {
            f64::INFINITY
        }
    }

    /// True when replies came and every one was an error: the test measured
    /// nothing but the server's refusal.
    pub fn all_errors(&self) -> bool {
        self.requests > 0 && self.errors >= self.requests
    }
}

/// Run `test` as `cfg` says; `progress` draws the live line on stderr.
pub fn run_test(cfg: &Config, test: &Test, progress: bool) -> Result<Outcome, String> {
    let target = Arc::new(Target::from_config(cfg)?);
    let shared = Arc::new(Shared::new(cfg.requests));
    let conns = cfg.connections();
    let groups = cfg.threads.clamp(1, conns.max(1));
    let hists: Vec<Arc<Mutex<Histogram>>> = (0..groups).map(|_| Arc::new(Mutex::new(Histogram::new()))).collect();
    let gate = Arc::new(tokio::sync::Barrier::new(conns));
    let jobs: Vec<Job> = (0..conns)
        .map(|i| Job {
            test: test.clone(),
            pipeline: cfg.pipeline,
            keyspace: cfg.keyspace,
            keepalive: cfg.keepalive,
            show_errors: cfg.show_errors,
            channels: cfg.channels_on(i),
            seed: 0x5EED_0000_0000 ^ (i as u64).wrapping_mul(0x9E37_79B9),
        })
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let painter = progress.then(|| {
        let (shared, done, title) = (shared.clone(), done.clone(), test.title.clone());
        std::thread::spawn(move || draw_progress(&title, &shared, &done))
    });
    let launched = Instant::now();
    let ctx = Ctx { target, shared: shared.clone(), hists: hists.clone(), gate };
    let result = match (cfg.threads, cfg.runtime) {
        (0, _) => run_on_current_thread(&ctx, jobs),
        (_, RuntimeKind::PerThread) => run_per_thread(&ctx, jobs, groups),
        (_, RuntimeKind::Multi) => run_multi(&ctx, jobs, cfg.threads),
    };
    let ended = Instant::now();
    done.store(true, Ordering::Relaxed);
    if let Some(p) = painter {
        let _ = p.join();
    }
    result?;
    let started = shared.started.get().copied().unwrap_or(launched);
    let mut latency = Histogram::new();
    for h in &hists {
        latency.merge(&h.lock().unwrap_or_else(|e| e.into_inner()));
    }
    Ok(Outcome {
        title: test.title.clone(),
        requests: shared.finished.load(Ordering::Relaxed),
        errors: shared.errors.load(Ordering::Relaxed),
        first_error: shared.first_error.get().cloned(),
        seconds: ended.duration_since(started).as_secs_f64(),
        latency,
    })
}

/// What every connection task needs.
struct Ctx {
    target: Arc<Target>,
    shared: Arc<Shared>,
    hists: Vec<Arc<Mutex<Histogram>>>,
    gate: Arc<tokio::sync::Barrier>,
}

impl Ctx {
    /// The task for job number `i`, recording into group `i % groups`.
    fn task(&self, i: usize, job: Job) -> impl std::future::Future<Output = Result<(), String>> + Send + 'static {
        let (target, shared, gate) = (self.target.clone(), self.shared.clone(), self.gate.clone());
        let hist = self.hists[i % self.hists.len()].clone();
        async move { drive(&target, &job, &shared, &hist, &gate).await }
    }
}

fn runtime(threads: Option<usize>) -> Result<tokio::runtime::Runtime, String> {
    let mut b = match threads {
        None => tokio::runtime::Builder::new_current_thread(),
        Some(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n);
            b
        }
    };
    b.enable_all().build().map_err(|e| format!("cannot start the runtime: {e}"))
}

/// Spawn every job on the current runtime and wait for all; the first error wins.
async fn run_all(ctx: &Ctx, jobs: Vec<(usize, Job)>) -> Result<(), String> {
    let mut set = tokio::task::JoinSet::new();
    for (i, job) in jobs {
        set.spawn(ctx.task(i, job));
    }
    let mut first_error = None;
    while let Some(joined) = set.join_next().await {
        let result = joined.unwrap_or_else(|e| Err(format!("a connection task failed: {e}")));
        if let Err(e) = result {
            ctx.shared.stop.store(true, Ordering::Relaxed);
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

fn run_on_current_thread(ctx: &Ctx, jobs: Vec<Job>) -> Result<(), String> {
    runtime(None)?.block_on(run_all(ctx, jobs.into_iter().enumerate().collect()))
}

fn run_multi(ctx: &Ctx, jobs: Vec<Job>, threads: usize) -> Result<(), String> {
    runtime(Some(threads))?.block_on(run_all(ctx, jobs.into_iter().enumerate().collect()))
}

fn run_per_thread(ctx: &Ctx, jobs: Vec<Job>, groups: usize) -> Result<(), String> {
    let mut shares: Vec<Vec<(usize, Job)>> = (0..groups).map(|_| Vec::new()).collect();
    for (i, job) in jobs.into_iter().enumerate() {
        shares[i % groups].push((i, job));
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            shares.into_iter().map(|share| scope.spawn(move || runtime(None)?.block_on(run_all(ctx, share)))).collect();
        let mut first_error = None;
        for h in handles {
            let result = h.join().unwrap_or_else(|_| Err("a benchmark thread panicked".into()));
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    })
}

/// Redraw `TITLE: rps=… (overall: …) avg_msec=… (overall: …)` on stderr
/// until `done`, then clear it.
fn draw_progress(title: &str, shared: &Shared, done: &AtomicBool) {
    let mut last = (Instant::now(), 0u64, 0u64);
    let mut width = 0;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(PROGRESS_EVERY);
        let Some(&started) = shared.started.get() else { continue };
        let now = Instant::now();
        let finished = shared.finished.load(Ordering::Relaxed);
        let lat_sum = shared.latency_sum.load(Ordering::Relaxed);
        let line = progress_line(
            title,
            now.duration_since(started),
            now.duration_since(last.0),
            finished,
            last.1,
            lat_sum,
            last.2,
        );
        last = (now, finished, lat_sum);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{:width$}\r{line}\r", "");
        let _ = err.flush();
        width = line.len();
    }
    if width > 0 {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{:width$}\r", "");
        let _ = err.flush();
    }
}

/// The progress line from the counters now and at the previous redraw.
pub fn progress_line(
    title: &str,
    since_start: Duration,
    since_last: Duration,
    finished: u64,
    finished_before: u64,
    latency_sum: u64,
    latency_sum_before: u64,
) -> String {
    let per_sec = |n: u64, d: Duration| if d.is_zero() { 0.0 } else { n as f64 / d.as_secs_f64() };
    let avg_ms = |sum: u64, n: u64| if n == 0 { 0.0 } else { sum as f64 / n as f64 / 1e6 };
    let recent = finished.saturating_sub(finished_before);
    format!(
        "{title}: rps={:.1} (overall: {:.1}) avg_msec={:.3} (overall: {:.3})",
        per_sec(recent, since_last),
        per_sec(finished, since_start),
        avg_ms(latency_sum.saturating_sub(latency_sum_before), recent),
        avg_ms(latency_sum, finished),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_shows_recent_and_overall_rates() {
        let line = progress_line(
            "SET",
            Duration::from_secs(2),
            Duration::from_millis(250),
            20_000,
            17_500,
            20_000 * 100_000,
            17_500 * 100_000,
        );
        assert_eq!(line, "SET: rps=10000.0 (overall: 10000.0) avg_msec=0.100 (overall: 0.100)");
        assert_eq!(
            progress_line("GET", Duration::ZERO, Duration::ZERO, 0, 0, 0, 0),
            "GET: rps=0.0 (overall: 0.0) avg_msec=0.000 (overall: 0.000)"
        );
    }

    #[test]
    fn rps_of_an_instant_run_is_infinite() {
        let o = Outcome {
            title: "x".into(),
            requests: 5,
            errors: 0,
            first_error: None,
            seconds: 0.0,
            latency: Histogram::new(),
        };
        assert!(o.rps().is_infinite());
        let o = Outcome { seconds: 0.5, ..o };
        assert_eq!(o.rps(), 10.0);
    }

    #[test]
    fn all_errors_needs_every_reply_to_be_one() {
        let o = Outcome {
            title: "x".into(),
            requests: 5,
            errors: 5,
            first_error: Some("ERR no".into()),
            seconds: 0.5,
            latency: Histogram::new(),
        };
        assert!(o.all_errors());
        assert!(!Outcome { errors: 4, ..o.clone() }.all_errors());
        assert!(!Outcome { requests: 0, errors: 0, first_error: None, ..o }.all_errors());
    }
}
