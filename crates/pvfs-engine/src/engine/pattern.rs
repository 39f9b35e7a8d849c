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

/// The seed as IOR's C adds it to a word's index: an `int` (IOR's signature and mdtest's `-G`
/// arrive as unsigned and are stored in one) widened to 64 bits with its sign.
fn widened(seed: u32) -> u64 {
    seed as i32 as i64 as u64
}

/// The timestamp word `i` of `rank`'s buffer (`rank << 32 | seed + i`, as C computes it).
fn timestamp_word(seed: u32, rank: u32, i: usize) -> u64 {
    u64::from(rank) << 32 | widened(seed).wrapping_add(i as u64)
}

/// Fills a transfer buffer once per phase, as IOR's `generate_memory_pattern` does before
/// each write phase: `signature` is IOR's timestamp signature (the phase's start, in seconds),
/// `rank` the task.
pub fn generate(buf: &mut [u8], packet: DataPacket, signature: u32, rank: u32) {
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
                w.copy_from_slice(&timestamp_word(signature, rank, i).to_ne_bytes());
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

/// Stamps a transfer before it is written at `offset` (IOR) or as item `offset` (mdtest), as
/// IOR's `update_write_memory_pattern` does; `seed` is IOR's `-G` (0 unless set) or mdtest's.
pub fn update(buf: &mut [u8], packet: DataPacket, seed: u32, offset: u64, rank: u32) {
    if buf.len() < 8 {
        return;
    }
    let high = u64::from(rank) << 32;
    match packet {
        DataPacket::Timestamp => {}
        DataPacket::Random => {
            // IOR: `unsigned seed = rand_seed + pretendRank + item`, truncated to 32 bits.
            let mut seed = (u64::from(seed).wrapping_add(u64::from(rank)).wrapping_add(offset)) as u32;
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

/// Whether `buf` holds what [`generate`] then [`update`] make for item (or offset) `item` of
/// `rank` with `seed`: IOR's `verify_memory_pattern`, word for word, every word compared (as IOR
/// reads them all, so a verified read costs what it costs there).
pub fn verify(buf: &[u8], packet: DataPacket, seed: u32, item: u64, rank: u32) -> bool {
    let high = u64::from(rank) << 32;
    let mut state = {
        let mut seed = (u64::from(seed).wrapping_add(u64::from(rank)).wrapping_add(item)) as u32;
        u64::from(rand_r(&mut seed))
    };
    let incompressible = {
        let mut seed = seed.wrapping_add(rank);
        u64::from(rand_r(&mut seed)) << 32 | u64::from(rand_r(&mut seed))
    };
    let mut k: u32 = 1;
    let mut good = true;
    for (i, w) in buf.chunks_exact(8).enumerate() {
        let mut expected = match packet {
            DataPacket::Random => {
                state = state.wrapping_mul(GOLDEN_RATIO_PRIME) >> 3;
                state
            }
            DataPacket::Incompressible => incompressible,
            DataPacket::Offset | DataPacket::Timestamp => timestamp_word(seed, rank, i),
        };
        if i % STAMP_EVERY == 0 && matches!(packet, DataPacket::Offset | DataPacket::Incompressible) {
            expected = u64::from((item as u32).wrapping_mul(k)) | high;
            k = k.wrapping_add(1);
        }
        good &= w == expected.to_ne_bytes();
    }
    let whole = buf.len() / 8 * 8;
    good && buf.iter().enumerate().skip(whole).all(|(i, b)| *b == i as u8)
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
        update(&mut buf, DataPacket::Timestamp, 0, 1 << 20, 3);
        assert_eq!(buf, before);
        assert!(!changes_per_transfer(DataPacket::Timestamp));
    }

    #[test]
    fn offset_stamps_the_first_word_of_each_4k() {
        let mut buf = vec![0u8; 8192];
        generate(&mut buf, DataPacket::Offset, 10, 1);
        update(&mut buf, DataPacket::Offset, 0, 4096, 1);
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
        update(&mut a, DataPacket::Random, 0, 0, 0);
        update(&mut b, DataPacket::Random, 0, 4096, 0);
        assert_ne!(a, b);
        let mut seed = 0;
        let first = u64::from(rand_r(&mut seed)).wrapping_mul(GOLDEN_RATIO_PRIME) >> 3;
        assert_eq!(word(&a, 0), first);
    }

    /// What is written verifies, for every packet; one byte changed anywhere does not.
    #[test]
    fn what_is_written_verifies_and_a_changed_byte_does_not() {
        for packet in DataPacket::ALL {
            for (seed, item, rank) in [(0, 0, 0), (1_700_000_000, 12_345, 3), (0xFFFF_FFF0, 7, 2)] {
                let mut buf = vec![0u8; 3901];
                generate(&mut buf, packet, seed, rank);
                update(&mut buf, packet, seed, item, rank);
                assert!(verify(&buf, packet, seed, item, rank), "{packet} {seed} {item} {rank}");
                for at in [0, 8, 4096 % 3901, 3900] {
                    let mut bad = buf.clone();
                    bad[at] ^= 1;
                    assert!(!verify(&bad, packet, seed, item, rank), "{packet}: byte {at}");
                }
                assert!(!verify(&buf, packet, seed, item, rank + 1), "{packet}: another rank's");
            }
        }
    }

    /// C adds an `int` seed to a `size_t` index: a seed above 2^31 is negative there, and its
    /// sign fills the rank's half of the word (io500's seeds are hashes, any 32 bits).
    #[test]
    fn a_seed_above_2_31_is_negative_as_in_c() {
        let mut buf = vec![0u8; 24];
        generate(&mut buf, DataPacket::Timestamp, 0xFFFF_FFF0, 2);
        assert_eq!(word(&buf, 0), 0xFFFF_FFFF_FFFF_FFF0);
        assert_eq!(word(&buf, 2), 0xFFFF_FFFF_FFFF_FFF2);
        generate(&mut buf, DataPacket::Timestamp, 0x7FFF_FFFF, 2);
        assert_eq!(word(&buf, 1), 2 << 32 | 0x8000_0000);
    }
}
