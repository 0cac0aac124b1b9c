//! `INFO`'s instantaneous rates (`instantaneous_ops_per_sec`,
//! `instantaneous_input_kbps`, `instantaneous_output_kbps`), measured as
//! Redis measures them: ten times a second the server samples its running
//! totals, each sample is the rate since the one before, and a report is
//! the mean of the last [`SAMPLES`] samples (1.6 s).

use std::time::Duration;

/// Samples a rate is the mean of.
pub const SAMPLES: usize = 16;

/// Time between samples.
pub const PERIOD: Duration = Duration::from_millis(100);

/// The running totals one sample reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Commands processed.
    pub commands: u64,
    /// Bytes read from clients.
    pub input_bytes: u64,
    /// Bytes written to clients.
    pub output_bytes: u64,
}

/// The rates a report gives.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    /// Commands per second.
    pub ops_per_sec: u64,
    /// KiB read per second.
    pub input_kbps: f64,
    /// KiB written per second.
    pub output_kbps: f64,
}

/// One total's last [`SAMPLES`] rates, per second.
#[derive(Debug, Clone, Copy, Default)]
struct Track {
    last_count: u64,
    samples: [u64; SAMPLES],
    next: usize,
}

impl Track {
    /// Record the rate of `count`'s growth over `elapsed_ms`. A count that
    /// went down (the totals were reset) grew by nothing.
    fn sample(&mut self, elapsed_ms: u64, count: u64) {
        let grown = count.saturating_sub(self.last_count);
        let rate = grown.saturating_mul(1000).checked_div(elapsed_ms).unwrap_or(0);
        if let Some(slot) = self.samples.get_mut(self.next) {
            *slot = rate;
        }
        self.next = (self.next + 1) % SAMPLES;
        self.last_count = count;
    }

    fn mean(&self) -> u64 {
        self.samples.iter().sum::<u64>() / SAMPLES as u64
    }
}

/// The sampled rates of commands and client traffic.
#[derive(Debug, Clone, Copy)]
pub struct InstantMetrics {
    last_ms: u64,
    commands: Track,
    input: Track,
    output: Track,
}

impl InstantMetrics {
    /// No samples yet; the first one measures from `now_ms` and zero totals.
    pub fn new(now_ms: u64) -> InstantMetrics {
        InstantMetrics {
            last_ms: now_ms,
            commands: Track::default(),
            input: Track::default(),
            output: Track::default(),
        }
    }

    /// Take one sample of `totals` at `now_ms`.
    pub fn sample(&mut self, now_ms: u64, totals: Totals) {
        let elapsed_ms = now_ms.saturating_sub(self.last_ms);
        self.commands.sample(elapsed_ms, totals.commands);
        self.input.sample(elapsed_ms, totals.input_bytes);
        self.output.sample(elapsed_ms, totals.output_bytes);
        self.last_ms = now_ms;
    }

    /// The mean rates over the last [`SAMPLES`] samples.
    pub fn rates(&self) -> Rates {
        Rates {
            ops_per_sec: self.commands.mean(),
            input_kbps: self.input.mean() as f64 / 1024.0,
            output_kbps: self.output.mean() as f64 / 1024.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(commands: u64, bytes: u64) -> Totals {
        Totals { commands, input_bytes: bytes, output_bytes: bytes / 2 }
    }

    #[test]
    fn a_steady_rate_is_reported_once_the_window_is_full() {
        let mut m = InstantMetrics::new(0);
        for i in 1..=SAMPLES as u64 / 2 {
            m.sample(i * 100, totals(i * 500, i * 10_240));
        }
        // Half the window at 5,000 commands/s and 100 KiB/s in.
        assert_eq!(m.rates().ops_per_sec, 2_500);
        for i in SAMPLES as u64 / 2 + 1..=SAMPLES as u64 * 3 {
            m.sample(i * 100, totals(i * 500, i * 10_240));
        }
        assert_eq!(m.rates(), Rates { ops_per_sec: 5_000, input_kbps: 100.0, output_kbps: 50.0 });
    }

    #[test]
    fn idle_samples_bring_the_rates_back_to_zero() {
        let mut m = InstantMetrics::new(1_000);
        m.sample(1_100, totals(1_000, 1_000));
        assert_eq!(m.rates().ops_per_sec, 10_000 / SAMPLES as u64);
        for i in 2..=SAMPLES as u64 + 1 {
            m.sample(1_000 + i * 100, totals(1_000, 1_000));
        }
        assert_eq!(m.rates(), Rates::default());
    }

    #[test]
    fn totals_that_go_down_count_as_no_growth_and_late_samples_as_their_own_span() {
        let mut m = InstantMetrics::new(0);
        m.sample(100, totals(100, 0));
        m.sample(200, totals(3, 0));
        // A sample 400 ms late: 400 commands over 400 ms.
        m.sample(600, totals(403, 0));
        // Samples: 1,000/s, 0/s, 1,000/s.
        assert_eq!(m.rates().ops_per_sec, 2_000 / SAMPLES as u64);
        // Two samples at the same instant divide by nothing.
        m.sample(600, totals(500, 0));
        assert_eq!(m.rates().ops_per_sec, 2_000 / SAMPLES as u64);
    }
}
