//! A log-linear latency histogram in the spirit of HdrHistogram: fixed
//! memory, no allocation when recording, ~0.8% worst-case relative error.
//!
//! Values are nanoseconds. Values below 256 have a bucket each; above that,
//! every power-of-two range is split into 128 equal sub-buckets, so a bucket
//! is never wider than 1/128 of its values. Values past [`MAX_VALUE`]
//! (about 18 minutes) are counted in the last bucket. The exact minimum,
//! maximum and sum are kept beside the buckets, so `min`, `max` and `mean`
//! carry no bucket error.

/// Sub-buckets per power of two (above the linear range).
const HALF: usize = 128;
/// The linear range: values below this have a bucket each.
const LINEAR: usize = 2 * HALF;
/// log2 of the largest value tracked precisely.
const MAX_LOG2: u32 = 40;
/// Largest value recorded as itself; larger ones are clamped to it.
pub const MAX_VALUE: u64 = (1 << MAX_LOG2) - 1;
/// Number of buckets.
const BUCKETS: usize = LINEAR + (MAX_LOG2 as usize - 8) * HALF;

/// Latency counts in log-linear buckets.
#[derive(Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: Box<[u64]>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram").field("total", &self.total).field("min", &self.min).field("max", &self.max).finish()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

/// The bucket holding `v` (already clamped to [`MAX_VALUE`]).
fn index(v: u64) -> usize {
    if v < LINEAR as u64 {
        return v as usize;
    }
    let shift = (63 - v.leading_zeros()) - 7;
    LINEAR + (shift as usize - 1) * HALF + ((v >> shift) as usize - HALF)
}

/// Smallest and largest value bucket `i` holds.
fn bounds(i: usize) -> (u64, u64) {
    if i < LINEAR {
        return (i as u64, i as u64);
    }
    let shift = ((i - LINEAR) / HALF + 1) as u32;
    let sub = ((i - LINEAR) % HALF + HALF) as u64;
    let low = sub << shift;
    (low, low + (1 << shift) - 1)
}

impl Histogram {
    /// An empty histogram (one allocation of ~35 KiB, here and never again).
    pub fn new() -> Histogram {
        Histogram { counts: vec![0; BUCKETS].into_boxed_slice(), total: 0, sum: 0, min: u64::MAX, max: 0 }
    }

    /// Count one value.
    pub fn record(&mut self, v: u64) {
        self.record_n(v, 1);
    }

    /// Count `n` occurrences of `v` (a pipelined batch shares one latency).
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        let v = v.min(MAX_VALUE);
        self.counts[index(v)] += n;
        self.total += n;
        self.sum += u128::from(v) * u128::from(n);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Add every count of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Forget everything, keeping the memory.
    pub fn clear(&mut self) {
        self.counts.fill(0);
        self.total = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Exact mean (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// Exact smallest value (0 when empty).
    pub fn min(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            self.min
        }
    }

    /// Exact largest value (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value at or below which `p` percent of the values lie: the top of
    /// the bucket where the count reaches `p`% (never above the exact max,
    /// never below the exact min). 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        if p <= 0.0 {
            return self.min;
        }
        let wanted = ((p.clamp(0.0, 100.0) / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut cum = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            cum += c;
            if cum >= wanted {
                return bounds(i).1.clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// The percentile ladder redis-benchmark prints ("Latency by percentile
    /// distribution"): 0%, 50%, 75%, 87.5%, … halving the distance to 100%
    /// each time, as far as the data reaches, then 100%. Each entry is
    /// (percentile, value, cumulative count).
    pub fn percentile_ladder(&self) -> Vec<(f64, u64, u64)> {
        let mut out = Vec::new();
        let mut next = 0.0f64;
        let mut cum = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            cum += c;
            let value = bounds(i).1.clamp(self.min, self.max);
            if cum == self.total {
                out.push((next, value, cum));
                out.push((100.0, value, cum));
                break;
            }
            let reached = 100.0 * cum as f64 / self.total as f64;
            while reached >= next {
                out.push((next, value, cum));
                let halvings = (100.0 / (100.0 - next)).log2().floor() + 1.0;
                next += 100.0 / 2f64.powf(halvings);
            }
        }
        out
    }

    /// redis-benchmark's "Cumulative distribution of latencies": steps of
    /// 0.1 ms up to 2 ms, then of 1 ms; one entry per step that holds values,
    /// as (cumulative percent, step's upper bound in ns, cumulative count).
    pub fn cumulative_steps(&self) -> Vec<(f64, u64, u64)> {
        const FINE: u64 = 100_000;
        const COARSE: u64 = 1_000_000;
        const SWITCH: u64 = 2_000_000;
        let step_end = |v: u64| if v < SWITCH { (v / FINE + 1) * FINE } else { (v / COARSE + 1) * COARSE };
        let mut out = Vec::new();
        let mut cum = 0;
        let mut limit: Option<u64> = None;
        for (i, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let low = bounds(i).0;
            if let Some(l) = limit {
                if low >= l {
                    out.push((100.0 * cum as f64 / self.total as f64, l, cum));
                    limit = None;
                }
            }
            limit.get_or_insert_with(|| step_end(low));
            cum += c;
        }
        if let Some(l) = limit {
            out.push((100.0, l, cum));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_range_without_gaps() {
        let mut expect = 0;
        for i in 0..BUCKETS {
            let (lo, hi) = bounds(i);
            assert_eq!(lo, expect, "bucket {i}");
            assert!(hi >= lo);
            assert_eq!(index(lo), i);
            assert_eq!(index(hi), i);
            // Relative width stays under 1/128.
            assert!((hi - lo) as f64 <= lo as f64 / 127.0, "bucket {i}: {lo}..{hi}");
            expect = hi + 1;
        }
        assert_eq!(expect, MAX_VALUE + 1);
    }

    #[test]
    fn percentiles_of_a_uniform_range_are_within_one_percent() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.count(), 100_000);
        assert_eq!(h.min(), 1000);
        assert_eq!(h.max(), 100_000_000);
        assert!((h.mean() - 50_000_500.0).abs() < 1.0);
        for (p, exact) in [(50.0, 50_000_000.0), (95.0, 95_000_000.0), (99.0, 99_000_000.0), (99.9, 99_900_000.0)] {
            let got = h.percentile(p) as f64;
            assert!((got - exact).abs() / exact < 0.01, "p{p}: {got} vs {exact}");
            assert!(got >= exact, "p{p} reports the top of its bucket");
        }
        assert_eq!(h.percentile(100.0), 100_000_000);
        assert_eq!(h.percentile(0.0), 1000);
    }

    #[test]
    fn small_values_are_exact_and_batches_count_n_times() {
        let mut h = Histogram::new();
        h.record_n(7, 3);
        h.record(200);
        assert_eq!((h.count(), h.percentile(50.0), h.percentile(75.0), h.percentile(76.0)), (4, 7, 7, 200));
        h.record_n(5, 0);
        assert_eq!(h.count(), 4);
    }

    #[test]
    fn huge_values_are_clamped_not_lost() {
        let mut h = Histogram::new();
        h.record(u64::MAX);
        assert_eq!((h.count(), h.max()), (1, MAX_VALUE));
    }

    #[test]
    fn merge_adds_and_clear_empties() {
        let (mut a, mut b) = (Histogram::new(), Histogram::new());
        a.record(10);
        b.record(1_000_000);
        a.merge(&b);
        assert_eq!((a.count(), a.min(), a.max()), (2, 10, 1_000_000));
        a.clear();
        assert_eq!((a.count(), a.min(), a.max(), a.percentile(50.0)), (0, 0, 0, 0));
        assert!(a.percentile_ladder().is_empty() && a.cumulative_steps().is_empty());
    }

    #[test]
    fn the_ladder_halves_the_distance_to_100_percent() {
        let mut h = Histogram::new();
        for v in 1..=2000u64 {
            h.record(v * 100);
        }
        let ladder = h.percentile_ladder();
        let pcts: Vec<f64> = ladder.iter().map(|e| e.0).take(5).collect();
        assert_eq!(pcts, [0.0, 50.0, 75.0, 87.5, 93.75]);
        let last = ladder.last().unwrap();
        assert_eq!((last.0, last.1, last.2), (100.0, 200_000, 2000));
        assert!(ladder.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1 && w[0].2 <= w[1].2));
        // A single value: the 0% line and the 100% line.
        let mut one = Histogram::new();
        one.record(42);
        assert_eq!(one.percentile_ladder(), vec![(0.0, 42, 1), (100.0, 42, 1)]);
    }

    #[test]
    fn cumulative_steps_are_fine_then_coarse() {
        let mut h = Histogram::new();
        h.record(50_000); // 0.05 ms
        h.record(150_000); // 0.15 ms
        h.record(160_000);
        h.record(5_500_000); // 5.5 ms
        let steps = h.cumulative_steps();
        assert_eq!(steps, vec![(25.0, 100_000, 1), (75.0, 200_000, 3), (100.0, 6_000_000, 4)]);
    }
}
