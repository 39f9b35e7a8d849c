//! IOR's `-z` (each transfer of a task's share once, in a shuffled order) without holding the
//! order: a keyed permutation of `0..n` evaluated one index at a time.
//!
//! IOR, and this engine until it was bounded, allocates every offset of a task and shuffles
//! the array: 8 bytes per transfer, 32 GiB for 16 TiB in 4 KiB transfers, asked for by a
//! request before any I/O. Shuffling in bounded chunks would cap the memory but confine each
//! access to its chunk's neighbourhood, which is not the random pattern `-z` stands for. A
//! Feistel network over the smallest even power of two that holds `n`, walking the cycle
//! until it lands below `n` (cycle walking, as format-preserving encryption does), is a
//! bijection on `0..n` in O(1) memory and a few hash rounds per offset. It is not drawn
//! uniformly from all n! orders, as Fisher-Yates is; it scatters accesses over the whole
//! range with no locality a cache or read-ahead could use, which is what the benchmark
//! measures.

/// A pseudo-random permutation of `0..n`, fixed by its seed.
#[derive(Debug, Clone)]
pub(crate) struct Permutation {
    n: u64,
    /// Bits in each half of the Feistel block (the block is `2 * half` bits).
    half: u32,
    keys: [u64; 4],
}

impl Permutation {
    pub(crate) fn new(n: u64, seed: u64) -> Permutation {
        let bits = (u64::BITS - n.saturating_sub(1).leading_zeros()).max(2);
        let mut rng = fastrand::Rng::with_seed(seed);
        Permutation { n, half: bits.div_ceil(2), keys: std::array::from_fn(|_| rng.u64(..)) }
    }

    /// The `i`-th index of the order (`i < n`).
    pub(crate) fn at(&self, i: u64) -> u64 {
        // The block holds fewer than 4n values, so the walk takes under 4 steps on average;
        // it ends because `i` itself lies on the cycle and is below n.
        let mut x = self.encrypt(i);
        while x >= self.n {
            x = self.encrypt(x);
        }
        x
    }

    /// Four Feistel rounds: a bijection on `0..2^(2 * half)`.
    fn encrypt(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half) - 1;
        let (mut left, mut right) = (x >> self.half, x & mask);
        for key in self.keys {
            (left, right) = (right, left ^ (mix(right ^ key) & mask));
        }
        (left << self.half) | right
    }
}

/// SplitMix64's finaliser: a fast 64-bit hash whose every output bit depends on every input bit.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_comes_exactly_once() {
        for n in [1, 2, 3, 7, 8, 9, 1000, 4096, 4097, 100_003] {
            for seed in [0, 7, u64::MAX] {
                let p = Permutation::new(n, seed);
                let mut seen = vec![false; n as usize];
                for i in 0..n {
                    let x = p.at(i);
                    assert!(x < n && !seen[x as usize], "n={n} seed={seed}: {x} twice or out of range");
                    seen[x as usize] = true;
                }
            }
        }
    }

    #[test]
    fn the_order_is_shuffled_and_depends_on_the_seed() {
        let order = |seed| (0..1000).map(|i| Permutation::new(1000, seed).at(i)).collect::<Vec<_>>();
        let a = order(1);
        assert_ne!(a, (0..1000).collect::<Vec<_>>());
        assert_ne!(a, order(2));
        // Scattered: consecutive accesses are rarely neighbours.
        let near = a.windows(2).filter(|w| w[0].abs_diff(w[1]) <= 8).count();
        assert!(near < 50, "{near} of 999 steps stay within 8 transfers");
    }

    #[test]
    fn a_huge_range_costs_nothing_up_front() {
        // 2^32 transfers (16 TiB in 4 KiB): no allocation, and any index at once.
        let p = Permutation::new(1 << 32, 3);
        assert!(size_of_val(&p) <= 64);
        let first: Vec<u64> = (0..4).map(|i| p.at(i)).collect();
        assert!(first.iter().all(|x| *x < 1 << 32));
        assert_ne!(first, [0, 1, 2, 3]);
    }
}
