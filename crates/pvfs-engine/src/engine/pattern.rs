//! The bytes IOR writes, word for word (its `-l`, dataPacketType; `generate_memory_pattern`
//! and `update_write_memory_pattern` in IOR 4's `utilities.c`), so that a file system or
//! device that compresses or deduplicates sees from the engine what it sees from IOR.
//!
//! Words are 64-bit in the machine's byte order, as IOR stores them through a `uint64_t *`;
//! the bytes past the last whole word hold their index, as IOR's do.

use pvfs_bench::params::DataPacket;

/// IOR's multiplier for `random` packets (`RANDALGO_GOLDEN_RATIO_PRIME`).
const GOLDEN_RATIO_PRIME: u64 = 0x9e37_ffff_fffc_0001;

/// Words between two per-transfer stamps (4 KiB).
const STAMP_EVERY: usize = 512;

/// glibc's `rand_r`, which IOR's patterns are defined by: three steps of the same LCG, 11 + 10
/// + 10 bits. Written out because the pattern must be this generator's, not any good one.
fn rand_r(seed: &mut u32) -> u32 {
    let mut next = *seed;
    let mut step = || {
        next = next.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        next / 65_536
    };
    let mut result = step() % 2048;
    result = (result << 10) ^ (step() % 1024);
    result = (result << 10) ^ (step() % 1024);
    *seed = next;
    result
}

fn words(buf: &mut [u8]) -> impl Iterator<Item = &mut [u8]> {
    buf.chunks_exact_mut(8)
}

/// Fills a transfer buffer once per phase, as IOR's `generate_memory_pattern` does before
/// each write phase: `signature` is IOR's timestamp signature (the phase's start, in seconds),
/// `rank` the task.
pub fn generate(buf: &mut [u8], packet: DataPacket, signature: u32, rank: u32) {
    let high = u64::from(rank) << 32;
    match packet {
        // Filled per transfer by `update`.
        DataPacket::Random => {}
        DataPacket::Incompressible => {
            // IOR re-seeds for every word, so every word is the same value.
            let mut seed = signature.wrapping_add(rank);
            let word = u64::from(rand_r(&mut seed)) << 32 | u64::from(rand_r(&mut seed));
            words(buf).for_each(|w| w.copy_from_slice(&word.to_ne_bytes()));
        }
        DataPacket::Offset | DataPacket::Timestamp => {
            for (i, w) in words(buf).enumerate() {
                w.copy_from_slice(&(high | u64::from(signature).wrapping_add(i as u64)).to_ne_bytes());
            }
        }
    }
    let whole = buf.len() / 8 * 8;
    for (i, b) in buf.iter_mut().enumerate().skip(whole) {
        *b = i as u8;
    }
}

/// Whether [`update`] changes the buffer: only `timestamp` leaves it as generated.
pub fn changes_per_transfer(packet: DataPacket) -> bool {
    packet != DataPacket::Timestamp
}

/// Stamps a transfer before it is written at `offset`, as IOR's `update_write_memory_pattern`
/// does (whose seed is IOR's `-G`, 0 unless set).
pub fn update(buf: &mut [u8], packet: DataPacket, offset: u64, rank: u32) {
    if buf.len() < 8 {
        return;
    }
    let high = u64::from(rank) << 32;
    match packet {
        DataPacket::Timestamp => {}
        DataPacket::Random => {
            // IOR: `unsigned seed = rand_seed + pretendRank + item`, truncated to 32 bits.
            let mut seed = (u64::from(rank).wrapping_add(offset)) as u32;
            let mut state = u64::from(rand_r(&mut seed));
            for w in words(buf) {
                state = state.wrapping_mul(GOLDEN_RATIO_PRIME) >> 3;
                w.copy_from_slice(&state.to_ne_bytes());
            }
        }
        DataPacket::Offset | DataPacket::Incompressible => {
            for (k, w) in words(buf).step_by(STAMP_EVERY).enumerate() {
                // `(uint32_t) item * k`: 32-bit arithmetic, k from 1.
                let stamp = (offset as u32).wrapping_mul(k as u32 + 1);
                w.copy_from_slice(&(u64::from(stamp) | high).to_ne_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(buf: &[u8], i: usize) -> u64 {
        u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap())
    }

    #[test]
    fn rand_r_is_glibcs() {
        // glibc 2.36: `unsigned s = 1; rand_r(&s)` three times, and from seed 42.
        let mut seed = 1;
        assert_eq!(
            [rand_r(&mut seed), rand_r(&mut seed), rand_r(&mut seed)],
            [476707713, 1186278907, 505671508]
        );
        let mut seed = 42;
        assert_eq!(rand_r(&mut seed), 681191333);
    }

    #[test]
    fn timestamp_words_are_rank_and_signature_plus_index_and_never_change() {
        let mut buf = vec![0u8; 4096 + 3];
        generate(&mut buf, DataPacket::Timestamp, 1_700_000_000, 3);
        assert_eq!(word(&buf, 0), 3 << 32 | 1_700_000_000);
        assert_eq!(word(&buf, 511), 3 << 32 | 1_700_000_511);
        assert_eq!(&buf[4096..], &[0u8, 1, 2]);
        let before = buf.clone();
        update(&mut buf, DataPacket::Timestamp, 1 << 20, 3);
        assert_eq!(buf, before);
        assert!(!changes_per_transfer(DataPacket::Timestamp));
    }

    #[test]
    fn offset_stamps_the_first_word_of_each_4k() {
        let mut buf = vec![0u8; 8192];
        generate(&mut buf, DataPacket::Offset, 10, 1);
        update(&mut buf, DataPacket::Offset, 4096, 1);
        assert_eq!(word(&buf, 0), 1 << 32 | 4096);
        assert_eq!(word(&buf, 1), 1 << 32 | 11);
        assert_eq!(word(&buf, 512), 1 << 32 | 8192);
    }

    #[test]
    fn incompressible_repeats_one_word_as_ior_4_does_and_random_differs_per_offset() {
        let mut buf = vec![0u8; 4096];
        generate(&mut buf, DataPacket::Incompressible, 7, 0);
        let mut seed = 7;
        let expected = u64::from(rand_r(&mut seed)) << 32 | u64::from(rand_r(&mut seed));
        assert!((1..512).all(|i| word(&buf, i) == expected));

        let (mut a, mut b) = (vec![0u8; 4096], vec![0u8; 4096]);
        update(&mut a, DataPacket::Random, 0, 0);
        update(&mut b, DataPacket::Random, 4096, 0);
        assert_ne!(a, b);
        let mut seed = 0;
        let first = u64::from(rand_r(&mut seed)).wrapping_mul(GOLDEN_RATIO_PRIME) >> 3;
        assert_eq!(word(&a, 0), first);
    }
}
