//! The latency monitor: `latency-monitor-threshold` and the `LATENCY`
//! command's `LATEST`, `HISTORY`, `RESET`, `GRAPH` and `DOCTOR`.
//!
//! As in Redis, an event is a named time series of at most
//! [`SAMPLES_PER_EVENT`] samples, each a Unix second and the worst latency
//! (in milliseconds) seen in that second, plus the worst latency ever seen.
//! A series is made the first time its event reaches the threshold.
//!
//! The events kvik records are the ones it can measure honestly, the
//! duration of a command: `command` for commands without the `fast` flag
//! and `fast-command` for the others, the split Redis makes. Redis's other
//! events (fork, AOF writes and fsyncs, expire and eviction cycles) time
//! work kvik does not do or does not time, so they never appear rather than
//! read zero.
//!
//! Samples are taken only when a command reaches the threshold, so the
//! monitor sits behind a mutex; the command path compares the duration
//! with a cached threshold and takes it only then.

use std::fmt::Write as _;

/// Samples an event keeps, as Redis (`LATENCY_TS_LEN`).
pub const SAMPLES_PER_EVENT: usize = 160;

/// Columns of a `LATENCY GRAPH`, as Redis.
const GRAPH_COLUMNS: usize = 80;

/// Rows of a `LATENCY GRAPH`'s bars, as Redis.
const GRAPH_ROWS: usize = 4;

/// One sample: the worst latency seen in one second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// Unix time in seconds (0: an empty place).
    pub time: i64,
    /// Milliseconds.
    pub latency: u64,
}

/// The samples of one event, in a ring.
#[derive(Debug, Clone)]
pub struct Series {
    samples: [Sample; SAMPLES_PER_EVENT],
    /// Where the next sample goes.
    next: usize,
    /// The worst latency ever recorded, in milliseconds.
    pub max: u64,
}

impl Default for Series {
    fn default() -> Self {
        Series { samples: [Sample::default(); SAMPLES_PER_EVENT], next: 0, max: 0 }
    }
}

impl Series {
    /// Add a latency seen at `now`: a second that has a sample keeps the worse one.
    fn add(&mut self, latency: u64, now: i64) {
        self.max = self.max.max(latency);
        let prev = (self.next + SAMPLES_PER_EVENT - 1) % SAMPLES_PER_EVENT;
        if let Some(last) = self.samples.get_mut(prev).filter(|s| s.time == now) {
            last.latency = last.latency.max(latency);
            return;
        }
        if let Some(place) = self.samples.get_mut(self.next) {
            *place = Sample { time: now, latency };
        }
        self.next = (self.next + 1) % SAMPLES_PER_EVENT;
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..SAMPLES_PER_EVENT)
            .filter_map(move |j| self.samples.get((self.next + j) % SAMPLES_PER_EVENT).copied())
            .filter(|s| s.time != 0)
    }

    /// The newest sample.
    pub fn latest(&self) -> Sample {
        let last = (self.next + SAMPLES_PER_EVENT - 1) % SAMPLES_PER_EVENT;
        self.samples.get(last).copied().unwrap_or_default()
    }

    /// Redis's `analyzeLatencyForEvent`: count, mean, mean absolute
    /// deviation and the seconds since the oldest sample (at least 1).
    fn summary(&self, now: i64) -> Summary {
        let mut s = Summary::default();
        let mut sum = 0u64;
        let mut oldest = 0i64;
        for sample in self.samples() {
            s.samples += 1;
            sum = sum.wrapping_add(sample.latency);
            if oldest == 0 || sample.time < oldest {
                oldest = sample.time;
            }
        }
        if s.samples == 0 {
            return s;
        }
        s.avg = sum / s.samples;
        s.period = (now - oldest).max(0);
        if s.period == 0 {
            s.period = 1;
        }
        let deviation: u64 = self.samples().map(|x| x.latency.abs_diff(s.avg)).fold(0, u64::wrapping_add);
        s.mad = deviation / s.samples;
        s
    }

    /// `LATENCY GRAPH`: Redis's header and its ASCII sparkline of the
    /// samples, each labelled with how long ago it was taken.
    pub fn graph(&self, event: &str, now: i64) -> String {
        let samples: Vec<Sample> = self.samples().collect();
        let low = samples.iter().map(|s| s.latency).min().unwrap_or(0);
        let high = samples.iter().map(|s| s.latency).max().unwrap_or(0);
        let mut out = format!("{event} - high {high} ms, low {low} ms (all time high {} ms)\n", self.max);
        out.push_str(&"-".repeat(GRAPH_COLUMNS));
        out.push('\n');
        let labelled: Vec<(u64, String)> = samples.iter().map(|s| (s.latency, age_label(now - s.time))).collect();
        for (n, chunk) in labelled.chunks(GRAPH_COLUMNS).enumerate() {
            if n > 0 {
                out.push('\n');
            }
            sparkline(&mut out, chunk, low, high);
        }
        out
    }
}

/// How long ago, as Redis labels a graph's samples: `12s`, `5m`, `3h`, `2d`.
fn age_label(elapsed: i64) -> String {
    if elapsed < 60 {
        format!("{elapsed}s")
    } else if elapsed < 3600 {
        format!("{}m", elapsed / 60)
    } else if elapsed < 86400 {
        format!("{}h", elapsed / 3600)
    } else {
        format!("{}d", elapsed / 86400)
    }
}

/// Redis's `sparklineRenderRange` with its fill style: [`GRAPH_ROWS`] rows
/// of bars (`_`, `o`, `#` within a row, `|` below the top of a bar), one
/// blank row, then each label written downwards.
fn sparkline(out: &mut String, samples: &[(u64, String)], low: u64, high: u64) {
    const FILL: [char; 3] = ['_', 'o', '#'];
    let steps = (FILL.len() * GRAPH_ROWS) as u64;
    let range = (high - low).max(1);
    let step_of = |value: u64| (((value - low) * steps) / range).min(steps - 1) as usize;
    for row in 0..GRAPH_ROWS {
        let floor = (GRAPH_ROWS - row - 1) * FILL.len();
        for (value, _) in samples {
            let step = step_of(*value);
            out.push(match step.checked_sub(floor) {
                Some(i) if i < FILL.len() => FILL[i],
                Some(_) => '|',
                None => ' ',
            });
        }
        out.push('\n');
    }
    out.push_str(&" ".repeat(samples.len()));
    out.push('\n');
    let longest = samples.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
    for at in 0..longest {
        for (_, label) in samples {
            out.push(label.as_bytes().get(at).map_or(' ', |&b| char::from(b)));
        }
        out.push('\n');
    }
}

/// What `LATENCY DOCTOR` says of one event.
#[derive(Debug, Default, Clone, Copy)]
struct Summary {
    samples: u64,
    avg: u64,
    mad: u64,
    period: i64,
}

/// Every event's samples, in the order the events first appeared.
#[derive(Debug, Default)]
pub struct LatencyMonitor {
    events: Vec<(&'static str, Box<Series>)>,
}

impl LatencyMonitor {
    /// Record that `event` took `latency` ms at Unix second `now`.
    pub fn add(&mut self, event: &'static str, latency: u64, now: i64) {
        match self.events.iter_mut().find(|(name, _)| *name == event) {
            Some((_, series)) => series.add(latency, now),
            None => {
                let mut series = Box::<Series>::default();
                series.add(latency, now);
                self.events.push((event, series));
            }
        }
    }

    /// The series of `event`, named exactly (as Redis looks it up).
    pub fn find(&self, event: &[u8]) -> Option<(&'static str, &Series)> {
        self.events.iter().find(|(name, _)| name.as_bytes() == event).map(|(name, s)| (*name, &**s))
    }

    /// Every event with its series.
    pub fn events(&self) -> impl Iterator<Item = (&'static str, &Series)> {
        self.events.iter().map(|(name, s)| (*name, &**s))
    }

    /// Forget `event` (any case), or every event; how many were forgotten.
    pub fn reset(&mut self, event: Option<&[u8]>) -> usize {
        let before = self.events.len();
        self.events.retain(|(name, _)| event.is_some_and(|e| !name.as_bytes().eq_ignore_ascii_case(e)));
        before - self.events.len()
    }

    /// Whether any event was recorded (and not reset).
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// What `LATENCY DOCTOR` looks at besides the events.
#[derive(Debug, Clone, Copy)]
pub struct DoctorInputs {
    /// `latency-monitor-threshold`, in milliseconds.
    pub threshold_ms: i64,
    /// `slowlog-log-slower-than`, in microseconds (negative: off).
    pub slowlog_slower_than: i64,
    /// Bytes of the process in transparent huge pages.
    pub anon_huge_pages: u64,
    /// Unix time in seconds.
    pub now: i64,
}

/// Redis's reply while monitoring is off and nothing was recorded.
const DISABLED: &str = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n";

/// `LATENCY DOCTOR`: Redis's report (`createLatencyReport`) from the
/// recorded events, with its advice for the events kvik records and for
/// transparent huge pages.
pub fn doctor(monitor: &LatencyMonitor, inputs: DoctorInputs) -> String {
    if monitor.is_empty() && inputs.threshold_ms == 0 {
        return DISABLED.to_string();
    }
    let mut report = String::new();
    let mut advices = 0;
    let (mut slowlog_enable, mut slowlog_tune, mut slowlog_inspect) = (false, false, false);
    let (mut scheduler, mut large_objects) = (false, false);
    let mut count = 0;
    for (event, series) in monitor.events() {
        count += 1;
        if count == 1 {
            report.push_str(
                "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n",
            );
        }
        let s = series.summary(inputs.now);
        let per_sample = if s.samples > 0 { s.period as f64 / s.samples as f64 } else { 0.0 };
        let _ = write!(
            report,
            "{count}. {event}: {} latency spikes (average {}ms, mean deviation {}ms, period {per_sample:.2} sec). Worst all time event {}ms.",
            s.samples, s.avg, s.mad, series.max
        );
        match event {
            "command" => {
                if inputs.slowlog_slower_than < 0 {
                    slowlog_enable = true;
                    advices += 1;
                } else if inputs.slowlog_slower_than / 1000 > inputs.threshold_ms {
                    slowlog_tune = true;
                    advices += 1;
                }
                slowlog_inspect = true;
                large_objects = true;
                advices += 2;
            }
            "fast-command" => {
                scheduler = true;
                advices += 1;
            }
            _ => {}
        }
        report.push('\n');
    }
    let huge_pages = inputs.anon_huge_pages > 0;
    if huge_pages {
        advices += 1;
    }
    if count == 0 && advices == 0 {
        report.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
        return report;
    }
    if advices == 0 {
        report.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
        return report;
    }
    report.push_str("\nI have a few advices for you:\n\n");
    let suggested = u64::try_from(inputs.threshold_ms).unwrap_or(0).saturating_mul(1000);
    if slowlog_enable {
        let _ = writeln!(
            report,
            "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {suggested}'. If the Slow log is disabled Redis is not able to log slow commands execution for you."
        );
    }
    if slowlog_tune {
        let _ = writeln!(
            report,
            "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {suggested}'."
        );
    }
    if slowlog_inspect {
        report.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
    }
    if scheduler {
        report.push_str(concat!(
            "- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n",
            "  1) Lower the system load.\n",
            "  2) Use a computer / VM just for Redis if you are running other software in the same system.\n",
            "  3) Check if you have a \"noisy neighbour\" problem.\n",
            "  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n",
            "  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n",
        ));
    }
    if large_objects {
        report.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
    }
    if huge_pages {
        report.push_str("- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n");
    }
    report
}

/// Bytes of this process in anonymous transparent huge pages
/// (`AnonHugePages` of `/proc/self/smaps_rollup`, or summed over
/// `/proc/self/smaps`), which Redis's doctor warns about; 0 where unknown.
pub fn anon_huge_pages() -> u64 {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup")
        .or_else(|_| std::fs::read_to_string("/proc/self/smaps"))
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix("AnonHugePages:"))
        .filter_map(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .fold(0, |sum, kb| sum.saturating_add(kb.saturating_mul(1024)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_keeps_the_worst() {
        let mut m = LatencyMonitor::default();
        m.add("command", 10, 100);
        m.add("command", 30, 100);
        m.add("command", 20, 100);
        m.add("command", 5, 101);
        let (_, series) = m.find(b"command").expect("recorded");
        let samples: Vec<_> = series.samples().collect();
        assert_eq!(samples, [Sample { time: 100, latency: 30 }, Sample { time: 101, latency: 5 }]);
        assert_eq!((series.latest(), series.max), (Sample { time: 101, latency: 5 }, 30));
        assert!(m.find(b"COMMAND").is_none(), "looked up exactly");
    }

    #[test]
    fn the_ring_keeps_the_newest_samples() {
        let mut m = LatencyMonitor::default();
        for t in 1..=(SAMPLES_PER_EVENT as i64 + 5) {
            m.add("command", t as u64, t);
        }
        let (_, series) = m.find(b"command").expect("recorded");
        let samples: Vec<_> = series.samples().collect();
        assert_eq!(samples.len(), SAMPLES_PER_EVENT);
        assert_eq!(samples.first().map(|s| s.time), Some(6));
        assert_eq!(series.latest().time, SAMPLES_PER_EVENT as i64 + 5);
    }

    #[test]
    fn reset_matches_any_case_and_counts() {
        let mut m = LatencyMonitor::default();
        m.add("command", 1, 1);
        m.add("fast-command", 1, 1);
        assert_eq!(m.reset(Some(b"nosuch")), 0);
        assert_eq!(m.reset(Some(b"COMMAND")), 1);
        assert_eq!(m.events().map(|(n, _)| n).collect::<Vec<_>>(), ["fast-command"]);
        assert_eq!(m.reset(None), 1);
        assert!(m.is_empty());
    }

    #[test]
    fn graph_is_redis_sparkline() {
        // Redis 7.0.15 after DEBUG SLEEP 0.01, 0.03 and 0.02 a second apart.
        let mut m = LatencyMonitor::default();
        m.add("command", 10, 98);
        m.add("command", 30, 99);
        m.add("command", 20, 100);
        let (name, series) = m.find(b"command").expect("recorded");
        let expected = format!(
            "command - high 30 ms, low 10 ms (all time high 30 ms)\n{}\n # \n |_\n ||\n_||\n   \n210\nsss\n",
            "-".repeat(80)
        );
        assert_eq!(series.graph(name, 100), expected);
    }

    #[test]
    fn doctor_reports_the_recorded_events() {
        let mut m = LatencyMonitor::default();
        let inputs = DoctorInputs { threshold_ms: 0, slowlog_slower_than: 10_000, anon_huge_pages: 0, now: 100 };
        assert_eq!(doctor(&m, inputs), DISABLED);
        let on = DoctorInputs { threshold_ms: 5, ..inputs };
        assert!(doctor(&m, on).starts_with("Dave, no latency spike was observed"));
        m.add("command", 10, 98);
        m.add("command", 30, 99);
        m.add("command", 20, 100);
        let report = doctor(&m, on);
        assert!(report.starts_with(
            "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n\
             1. command: 3 latency spikes (average 20ms, mean deviation 6ms, period 0.67 sec). Worst all time event 30ms.\n\n\
             I have a few advices for you:\n\n\
             - Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than 5000'.\n\
             - Check your Slow Log"
        ), "{report}");
        let off = doctor(&m, DoctorInputs { slowlog_slower_than: -1, ..on });
        assert!(off.contains("'CONFIG SET slowlog-log-slower-than 5000'. If the Slow log is disabled"), "{off}");
        let huge = doctor(&LatencyMonitor::default(), DoctorInputs { anon_huge_pages: 4096, ..on });
        assert!(huge.starts_with("\nI have a few advices for you:\n\n- I detected a non zero amount"), "{huge}");
    }
}
