//! `SimRng`: the one pseudo-random generator every simulator component draws from.
//!
//! A thin wrapper over xoshiro256++ with the handful of draws the simulator needs,
//! written out here rather than taken from `rand`'s distributions. The reason is
//! replay: a seed must produce the same run on the same build, and a `rand` upgrade
//! that changes its range reduction would silently reshuffle every schedule. With
//! the reductions spelled out below, only a change to this file (or to
//! rand_xoshiro's core generator, which is frozen by its specification) moves draws.
//!
//! What it does not model: anything cryptographic. Never use it for secrets.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

/// A seeded xoshiro256++ stream with explicit, stable draw algorithms.
#[derive(Clone, Debug)]
pub struct SimRng {
    inner: Xoshiro256PlusPlus,
}

impl SimRng {
    /// A stream seeded from one 64-bit seed (expanded with SplitMix64 by rand_xoshiro).
    pub fn new(seed: u64) -> Self {
        Self {
            inner: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// Reseed this stream for a branch of the run (see [`crate::timeline`]): one draw
    /// of its own, mixed with the branch's key, seeds what follows. The prefix fixes
    /// that draw, so the child stream is a pure function of the seed and the branch
    /// points; two streams never collapse into one, as each mixes its own draw.
    pub fn branch(&mut self, key: crate::timeline::BranchKey) {
        let own = self.next_u64();
        *self = Self::new(own ^ key.0);
    }

    /// The next raw 64-bit draw.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// A uniform draw in `0..bound`. `bound` must be non-zero.
    ///
    /// Lemire's multiply-shift with rejection: unbiased, one multiplication in the
    /// common case.
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "SimRng::below(0) has no value to return");
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let product = u128::from(self.next_u64()) * u128::from(bound);
            // Truncation intended: the low half decides rejection.
            let low = product as u64;
            if low >= threshold {
                return (product >> 64) as u64;
            }
        }
    }

    /// A uniform index in `0..len`. `len` must be non-zero.
    #[inline]
    pub fn index(&mut self, len: usize) -> usize {
        // usize fits in u64 on every platform we build for; the result is < len.
        self.below(len as u64) as usize
    }

    /// A uniform draw in `min..=max` (inclusive). Requires `min <= max`.
    #[inline]
    pub fn range_inclusive(&mut self, min: u64, max: u64) -> u64 {
        assert!(min <= max, "SimRng::range_inclusive({min}, {max}) is empty");
        let span = max - min;
        if span == u64::MAX {
            return self.next_u64();
        }
        min + self.below(span + 1)
    }

    /// A uniform float in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `probability` (clamped to `[0, 1]`).
    ///
    /// Always consumes exactly one draw, even for 0 and 1, so that turning a fault
    /// on or off never shifts the draws that follow it in the same stream.
    #[inline]
    pub fn chance(&mut self, probability: f64) -> bool {
        self.unit() < probability
    }

    /// An exponentially distributed value with the given mean, rounded down.
    /// Always consumes exactly one draw.
    #[inline]
    pub fn exponential(&mut self, mean: f64) -> u64 {
        // 1 - unit() is in (0, 1], so ln() is finite and <= 0.
        let sample = -mean * (1.0 - self.unit()).ln();
        if sample.is_finite() && sample > 0.0 {
            // Saturating cast: an absurd mean cannot wrap into a small delay.
            sample as u64
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_different_seed_different_stream() {
        let mut a = SimRng::new(7);
        let mut b = SimRng::new(7);
        let mut c = SimRng::new(8);
        let xs: Vec<u64> = (0..16).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..16).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..16).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn below_stays_in_bounds_and_covers_every_value() {
        let mut rng = SimRng::new(1);
        let mut seen = [0u32; 7];
        for _ in 0..70_000 {
            let v = rng.below(7);
            assert!(v < 7);
            seen[v as usize] += 1;
        }
        for (value, count) in seen.iter().enumerate() {
            // Expected 10,000 each; 5 sigma is about 450.
            assert!((9_500..10_500).contains(count), "value {value} drawn {count} times");
        }
    }

    #[test]
    fn range_inclusive_hits_both_ends() {
        let mut rng = SimRng::new(2);
        let draws: Vec<u64> = (0..1000).map(|_| rng.range_inclusive(3, 5)).collect();
        assert!(draws.iter().all(|v| (3..=5).contains(v)));
        assert!(draws.contains(&3) && draws.contains(&5));
        assert_eq!(rng.range_inclusive(9, 9), 9);
    }

    #[test]
    fn chance_consumes_one_draw_even_at_the_extremes() {
        let mut a = SimRng::new(3);
        let mut b = SimRng::new(3);
        assert!(!a.chance(0.0));
        assert!(b.chance(1.0));
        assert_eq!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn exponential_mean_is_close_to_requested() {
        let mut rng = SimRng::new(4);
        let n = 200_000;
        let total: u64 = (0..n).map(|_| rng.exponential(20.0)).sum();
        // Flooring subtracts about 0.5 on average.
        let mean = total as f64 / n as f64;
        assert!((19.0..20.0).contains(&mean), "mean {mean}");
        assert_eq!(rng.exponential(0.0), 0);
    }
}
