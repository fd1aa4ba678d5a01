// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! What every stored value carries to check itself: per dkey, a record of the write that stored
//! it and a checksum of each block of its bytes, written in the same update as the bytes and
//! fetched in the same RPC as them.
//!
//! - `REC_AKEY`, a single value of `RECORD_BYTES`: a magic, the write's id (one per posting)
//!   and the whole key's length. Every dkey a write touches holds the same record, and so
//!   does the key's first dkey (chunk 0) whether the write put bytes there or not.
//! - `SUMS_AKEY`, an array of 4-byte records: entry `b` is the CRC-32C of block `b` (bytes
//!   `b * BLOCK ..` up to the next block or the value's end), seeded with the write's id and
//!   the block's index, so a block left from another write, or moved within its key, does not
//!   verify. A CRC of 0 is stored as 1: 0 is what DAOS returns for an entry never written (a
//!   block its write did not cover whole), and it never verifies. The seed has no dkey: a fetch
//!   of one dkey returns that dkey's own bytes.
//!
//! DAOS applies one update of one dkey as a unit, and a fetch of one dkey reads one version,
//! so a fetch that finds the record, its blocks' sums and bytes agreeing has read exactly one
//! write's bytes; a read agrees across dkeys by the write id (`crate::attempt`).
//!
//! CRC-32C because x86-64 (SSE 4.2) and aarch64 (the CRC extension) compute it in hardware, at
//! several GB/s per core; DAOS's own checksums offer it too.

/// Single-value akey of a dkey's record.
pub const REC_AKEY: &[u8] = b"rec";
/// Array akey (4-byte records) of the blocks' checksums.
pub const SUMS_AKEY: &[u8] = b"sums";
/// Bytes per checksummed block: a read fetches whole blocks, so a read of part of a block costs
/// the rest of it; a chunk (64 KiB at least, a power of two) holds whole blocks.
pub const BLOCK: u64 = 64 << 10;
/// Size of a checksum entry.
pub const SUM_BYTES: u64 = 4;
/// "NDR1": a record of this layout. A record of another size or magic is not one this version
/// wrote: the value reads as absent.
const MAGIC: u32 = u32::from_le_bytes(*b"NDR1");
pub const RECORD_BYTES: usize = 24;

/// The write that stored a dkey: its id and the key's whole length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub id: u64,
    pub len: u64,
}

impl Record {
    pub fn to_bytes(self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[8..16].copy_from_slice(&self.id.to_le_bytes());
        b[16..24].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// None for anything but a record of this layout (another size, another magic, bits set
    /// that this version does not write): such a value is treated as absent.
    pub fn from_bytes(b: &[u8]) -> Option<Record> {
        if b.len() != RECORD_BYTES || b[0..4] != MAGIC.to_le_bytes() || b[4..8] != [0; 4] {
            return None;
        }
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let len = word(16);
        (len <= i64::MAX as u64).then_some(Record { id: word(8), len })
    }
}

/// The checksum of block `index` of the value written by write `id`: `bytes` are the block's
/// bytes up to the block's end or the value's. Never 0: that is what DAOS returns for an entry
/// never written (a block its write did not cover whole), which must never verify; a CRC of 0
/// is stored as 1.
pub fn block_sum(id: u64, index: u64, bytes: &[u8]) -> u32 {
    let mut sum = BlockSum::new(id, index);
    sum.update(bytes);
    sum.finish()
}

/// `block_sum` taken piece by piece, the block's bytes given in order.
struct BlockSum(crc_fast::Digest);

impl BlockSum {
    fn new(id: u64, index: u64) -> BlockSum {
        let mut seed = [0u8; 16];
        seed[..8].copy_from_slice(&id.to_le_bytes());
        seed[8..].copy_from_slice(&index.to_le_bytes());
        let mut crc = crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi);
        crc.update(&seed);
        BlockSum(crc)
    }

    fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(self) -> u32 {
        (self.0.finalize() as u32).max(1)
    }
}

/// The sums of the blocks a write covers whole, taken as its bytes go by: pieces of the value,
/// each within one block, given in offset order and never overlapping (`block_pieces`). A
/// block is summed when the pieces from its first byte on reach its end (the next block's
/// start or the value's); any other block gets no sum.
pub struct WriteSums {
    record: Record,
    /// The block being summed: its index, the offset its pieces reach, and the sum so far.
    running: Option<(u64, u64, BlockSum)>,
    /// The sums, and the indices of the blocks they are of, in offset order.
    pub sums: Vec<u32>,
    pub blocks: Vec<u64>,
}

impl WriteSums {
    /// `sums` is emptied and reused.
    pub fn new(record: Record, mut sums: Vec<u32>) -> WriteSums {
        sums.clear();
        WriteSums { record, running: None, sums, blocks: Vec::new() }
    }

    /// `bytes` of the value from offset `at`, all within one block.
    pub fn piece(&mut self, at: u64, bytes: &[u8]) {
        let b = at / BLOCK;
        let running = match self.running.take() {
            _ if at == b * BLOCK => Some((b, at, BlockSum::new(self.record.id, b))),
            r => r.filter(|&(rb, upto, _)| rb == b && upto == at),
        };
        if let Some((rb, upto, mut sum)) = running {
            sum.update(bytes);
            let upto = upto + bytes.len() as u64;
            if upto == block_span(rb, self.record.len).1 {
                self.sums.push(sum.finish());
                self.blocks.push(rb);
            } else {
                self.running = Some((rb, upto, sum));
            }
        }
    }
}

/// The pieces of the range [offset, offset + len) of a value, split at block boundaries:
/// (offset, length) of each, in order.
pub fn block_pieces(offset: u64, len: u64) -> impl Iterator<Item = (u64, u64)> {
    let end = offset + len;
    let mut at = offset;
    std::iter::from_fn(move || {
        (at < end).then(|| {
            let n = (end - at).min(BLOCK - at % BLOCK);
            at += n;
            (at - n, n)
        })
    })
}

/// Bytes of block `index` of a value of `len` bytes: [start, end).
pub fn block_span(index: u64, len: u64) -> (u64, u64) {
    let start = index * BLOCK;
    (start, (start + BLOCK).min(len).max(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_and_others_are_refused() {
        let r = Record { id: 0x0102_0304_0506_0708, len: 40 << 20 };
        assert_eq!(Record::from_bytes(&r.to_bytes()), Some(r));
        let b = r.to_bytes();
        assert_eq!(Record::from_bytes(&b[..16]), None, "short");
        assert_eq!(Record::from_bytes(&[b.as_slice(), &[0]].concat()), None, "long");
        assert_eq!(Record::from_bytes(&8u64.to_le_bytes()), None, "an earlier version's write id alone");
        let mut bad = b;
        bad[0] ^= 1;
        assert_eq!(Record::from_bytes(&bad), None, "magic");
        let mut bad = b;
        bad[5] = 1;
        assert_eq!(Record::from_bytes(&bad), None, "reserved bits");
        let mut bad = b;
        bad[23] = 0x80;
        assert_eq!(Record::from_bytes(&bad), None, "length past DAOS's largest index");
    }

    #[test]
    fn sums_depend_on_the_write_the_block_and_every_byte() {
        let data = vec![7u8; BLOCK as usize];
        let s = block_sum(1, 0, &data);
        assert_eq!(s, block_sum(1, 0, &data));
        assert_ne!(s, block_sum(2, 0, &data), "another write");
        assert_ne!(s, block_sum(1, 1, &data), "another block");
        let mut flipped = data.clone();
        flipped[12345] ^= 0x10;
        assert_ne!(s, block_sum(1, 0, &flipped));
        assert_ne!(s, block_sum(1, 0, &data[..data.len() - 1]), "shorter");
        assert_eq!(block_span(0, 100), (0, 100));
        assert_eq!(block_span(1, 3 * BLOCK), (BLOCK, 2 * BLOCK));
        assert_eq!(block_span(3, 3 * BLOCK + 5), (3 * BLOCK, 3 * BLOCK + 5));
    }

    /// CRC-32C bit by bit (reflected, polynomial 0x82F63B78, initial and final XOR all ones).
    fn castagnoli(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
            }
        }
        !crc
    }

    #[test]
    fn a_sum_is_crc32c_of_the_write_id_block_index_and_bytes() {
        // What is stored stays readable whichever CRC implementation computes it.
        assert_eq!(castagnoli(b"123456789"), 0xE306_9283, "the reference itself");
        let data: Vec<u8> = (0..BLOCK as usize + 77).map(|i| (i * 131 + 7) as u8).collect();
        for (id, index, bytes) in [(0u64, 0u64, &data[..0]), (9, 3, &data[..1]), (u64::MAX, 1 << 40, &data[..])] {
            let seeded = [&id.to_le_bytes()[..], &index.to_le_bytes(), bytes].concat();
            assert_eq!(
                block_sum(id, index, bytes),
                castagnoli(&seeded).max(1),
                "id {id} block {index}, {} bytes",
                bytes.len()
            );
        }
    }
}

/// A value's record as another writer to the container could have stored it: any bytes read as
/// a record of this layout or as absent, never a panic; what reads as a record is exactly what
/// `to_bytes` writes for it.
#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;

    fn near_records() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..40),
            // The magic in place, the rest anything: reaches the reserved-bits and length checks.
            proptest::collection::vec(any::<u8>(), 20..=20).prop_map(|b| [&MAGIC.to_le_bytes()[..], &b].concat()),
            (any::<u64>(), any::<u64>()).prop_map(|(id, len)| {
                let mut b = Record { id, len: 0 }.to_bytes();
                b[16..24].copy_from_slice(&len.to_le_bytes());
                b.to_vec()
            }),
        ]
    }

    proptest! {
        #![proptest_config(crate::fuzz(2048))]

        #[test]
        fn any_bytes_read_as_a_record_or_absent(b in near_records()) {
            if let Some(r) = Record::from_bytes(&b) {
                prop_assert_eq!(&r.to_bytes()[..], &b[..]);
                // A length no DAOS array index reaches is never taken for one.
                prop_assert!(r.len <= i64::MAX as u64);
            }
        }

        #[test]
        fn records_round_trip(id in any::<u64>(), len in 0..=i64::MAX as u64) {
            let r = Record { id, len };
            prop_assert_eq!(Record::from_bytes(&r.to_bytes()), Some(r));
        }
    }
}

/// The two costs the staged, self-checking data path adds per byte, measured apart:
/// `cargo test --release --lib checksum_and_copy_rates -- --ignored --nocapture`.
#[cfg(test)]
mod rates {
    use super::*;

    #[test]
    #[ignore = "a measurement: prints the rates"]
    fn checksum_and_copy_rates() {
        let n = 4usize << 20;
        let src: Vec<u8> = (0..n).map(|i| (i * 31) as u8).collect();
        let mut dst = vec![0u8; n];
        let reps = 200;
        let t = std::time::Instant::now();
        let mut x = 0u32;
        for r in 0..reps {
            for (b, block) in src.chunks(BLOCK as usize).enumerate() {
                x ^= block_sum(r, b as u64, block);
            }
        }
        let sum_gbps = (n * reps as usize) as f64 / t.elapsed().as_secs_f64() / 1e9;
        let t = std::time::Instant::now();
        for _ in 0..reps {
            dst.copy_from_slice(&src);
            std::hint::black_box(&mut dst);
        }
        let copy_gbps = (n * reps as usize) as f64 / t.elapsed().as_secs_f64() / 1e9;
        println!("4 MiB chunks, 64 KiB blocks: CRC-32C {sum_gbps:.1} GB/s, copy {copy_gbps:.1} GB/s ({x:x})");
        assert!(sum_gbps > 0.0 && copy_gbps > 0.0);
    }

    /// A write's staging as the plugin does it, from and into memory the cache does not hold
    /// (a 512 MiB source and a 64 MiB pool of buffers, both cycled through), side by side:
    /// a plain copy then the sum of the copied block, against the sum of the caller's block then
    /// a streaming copy of it (`crate::daos::io::IoDesc::stage_in`).
    #[test]
    #[ignore = "a measurement: prints the rates"]
    fn staging_a_write_from_cold_memory() {
        let (src_len, dst_len, piece) = (512usize << 20, 64usize << 20, BLOCK as usize);
        let src: Vec<u8> = (0..src_len).map(|i| (i.wrapping_mul(2654435761) >> 9) as u8).collect();
        let mut dst = vec![1u8; dst_len];
        let rate = |f: &mut dyn FnMut(usize, usize) -> u32| {
            let (mut x, mut done, t) = (0u32, 0usize, std::time::Instant::now());
            for round in 0..4 * src_len / piece {
                let (s, d) = (round * piece % src_len, round * piece % dst_len);
                x ^= f(s, d);
                done += piece;
            }
            (done as f64 / t.elapsed().as_secs_f64() / 1e9, x)
        };
        for _ in 0..2 {
            let (plain, a) = rate(&mut |s, d| {
                dst[d..d + piece].copy_from_slice(&src[s..s + piece]);
                block_sum(1, 0, &dst[d..d + piece])
            });
            let (streamed, b) = rate(&mut |s, d| {
                let sum = block_sum(1, 0, &src[s..s + piece]);
                // SAFETY: two distinct vectors, each holding `piece` bytes from its offset.
                unsafe { crate::stream_copy::copy(src[s..].as_ptr(), dst[d..].as_mut_ptr(), piece) };
                sum
            });
            let (after, c) = rate(&mut |s, d| {
                // SAFETY: as above.
                unsafe { crate::stream_copy::copy(src[s..].as_ptr(), dst[d..].as_mut_ptr(), piece) };
                block_sum(1, 0, &src[s..s + piece])
            });
            assert_eq!(a, b, "the same sums either way");
            assert_eq!(a, c, "the same sums either way");
            println!("64 KiB pieces from cold memory: copy then sum {plain:.1} GB/s, sum then streaming copy {streamed:.1} GB/s, streaming copy then sum of the source {after:.1} GB/s");
        }
    }
}
