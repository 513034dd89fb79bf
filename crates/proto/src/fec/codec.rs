//! The erasure code: source shards made from packet payloads, and
//! Reed-Solomon repair shards over them (the `reed-solomon-erasure`
//! crate: a systematic code over GF(2^8) from a Vandermonde matrix).
//!
//! A source shard is a payload behind its length (2 bytes, big-endian),
//! padded with zeros to the block's shard length, so payloads of any size
//! share one block and a rebuilt shard says where its payload ends. The
//! shard length is even: the code before this one worked on 16-bit
//! symbols, and keeping its lengths keeps every repair packet the size it
//! was, so FEC's packet sizes and timing (and every simulated result that
//! depends on them) are unchanged by the change of code.
//!
//! GF(2^8) rather than a code over a larger field: Brisk's blocks are
//! small (at most 32 packets and 16 repair symbols by default, 256
//! symbols is the code's limit), and a GF(2^8) decoder's work grows with
//! the block, where an FFT decoder over GF(2^16) pays a transform over
//! the whole field for every block, about half a millisecond, whatever
//! its size.
//!
//! A block with a single repair symbol takes XOR parity instead: it
//! rebuilds any one loss as Reed-Solomon would in one pass over the
//! bytes.

use reed_solomon_erasure::galois_8::ReedSolomon;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Bytes of the length in front of each payload in its source shard.
pub const LEN_PREFIX: usize = 2;

/// Source symbols of one block at most, and repair symbols: together the
/// 256 elements of GF(2^8), the code's limit.
pub const MAX_SOURCES: usize = 192;
/// See [`MAX_SOURCES`].
pub const MAX_REPAIRS: usize = 64;

/// Block shapes (source count, repair count) whose code is kept built.
const CODES_KEPT: usize = 32;

/// A built code and its block shape (source count, repair count).
type KeptCode = ((usize, usize), Arc<ReedSolomon>);

/// Why a block could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CodecError {
    /// The erasure code refused the block (counts it does not support,
    /// shards of different lengths, fewer shards than sources).
    #[error("erasure code: {0}")]
    Code(#[from] reed_solomon_erasure::Error),
    /// A payload does not fit the shard length, or its length is over 64 KiB.
    #[error("payload of {len} bytes does not fit a {shard_len}-byte shard")]
    TooLong {
        /// The payload's bytes.
        len: usize,
        /// The shard's bytes.
        shard_len: usize,
    },
    /// More sources are missing than repair symbols arrived.
    #[error("{missing} sources missing and only {repairs} repair symbols")]
    TooFewRepairs {
        /// Sources missing from the block.
        missing: usize,
        /// Repair symbols at hand.
        repairs: usize,
    },
    /// A repair symbol's length differs from the block's shard length.
    #[error("repair symbol of {got} bytes in a block of {shard_len}-byte shards")]
    RepairLength {
        /// The block's shard length.
        shard_len: usize,
        /// The symbol's length.
        got: usize,
    },
    /// A source or repair index outside the block.
    #[error("symbol index {index} outside a block of {count}")]
    BadIndex {
        /// The index given.
        index: usize,
        /// Symbols of that kind in the block.
        count: usize,
    },
    /// A rebuilt shard names a payload longer than itself: the repair
    /// symbols did not belong to this block.
    #[error("rebuilt shard {index} names a {len}-byte payload")]
    BadRebuild {
        /// The source index in the block.
        index: usize,
        /// The length it named.
        len: usize,
    },
}

/// The shard length (bytes, even) for payloads of at most `max_payload`
/// bytes.
pub fn shard_len_for(max_payload: usize) -> usize {
    (max_payload + LEN_PREFIX).next_multiple_of(2)
}

/// `payload` as a source shard of `shard_len` bytes.
pub fn source_shard(payload: &[u8], shard_len: usize) -> Result<Vec<u8>, CodecError> {
    let too_long = CodecError::TooLong {
        len: payload.len(),
        shard_len,
    };
    let len = u16::try_from(payload.len()).map_err(|_| too_long.clone())?;
    if payload.len() + LEN_PREFIX > shard_len {
        return Err(too_long);
    }
    let mut s = Vec::with_capacity(shard_len);
    s.extend_from_slice(&len.to_be_bytes());
    s.extend_from_slice(payload);
    s.resize(shard_len, 0);
    Ok(s)
}

/// The Reed-Solomon code for `sources` + `repairs` symbols. Building one
/// inverts a `sources`-square matrix, which costs about as much as coding
/// a whole block, so the last [`CODES_KEPT`] shapes are kept, shared by
/// every connection of the process (a block's shape repeats: the sender's
/// block size and repair count change only with the loss rate). A kept
/// code also remembers the inverted matrices of the loss patterns it
/// decoded last.
fn code_for(sources: usize, repairs: usize) -> Result<Arc<ReedSolomon>, CodecError> {
    static CODES: Mutex<Vec<KeptCode>> = Mutex::new(Vec::new());
    let shape = (sources, repairs);
    // A panic elsewhere while the lock was held leaves a list that is
    // still whole: each entry is pushed or removed in one step.
    let mut codes = CODES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = codes.iter().position(|(s, _)| *s == shape) {
        let entry = codes.remove(i);
        let code = entry.1.clone();
        codes.push(entry);
        return Ok(code);
    }
    let code = Arc::new(ReedSolomon::new(sources, repairs)?);
    if codes.len() >= CODES_KEPT {
        codes.remove(0);
    }
    codes.push((shape, code.clone()));
    Ok(code)
}

/// `repair_count` repair shards over `payloads` (the block's source
/// packets in order), and the shard length they have.
pub fn encode<P: AsRef<[u8]>>(
    payloads: &[P],
    repair_count: usize,
) -> Result<(usize, Vec<Vec<u8>>), CodecError> {
    let max = payloads.iter().map(|p| p.as_ref().len()).max().unwrap_or(0);
    let shard_len = shard_len_for(max);
    let shards = payloads
        .iter()
        .map(|p| source_shard(p.as_ref(), shard_len))
        .collect::<Result<Vec<_>, _>>()?;
    if repair_count == 1 {
        return Ok((shard_len, vec![xor(shards.iter(), shard_len)]));
    }
    let mut repair = vec![vec![0u8; shard_len]; repair_count];
    code_for(shards.len(), repair_count)?.encode_sep(&shards[..], &mut repair[..])?;
    Ok((shard_len, repair))
}

/// The XOR of `shards`, each `shard_len` bytes.
fn xor<S: AsRef<[u8]>>(shards: impl Iterator<Item = S>, shard_len: usize) -> Vec<u8> {
    let mut out = vec![0u8; shard_len];
    for s in shards {
        for (o, b) in out.iter_mut().zip(s.as_ref()) {
            *o ^= b;
        }
    }
    out
}

/// The payloads of a block's missing source packets, by source index,
/// rebuilt from the `present` payloads and the `repair` shards (by repair
/// index). The block had `source_count` source and `repair_count` repair
/// shards of `shard_len` bytes. Fails unless at least as many repair
/// shards as missing sources are given.
pub fn decode<P: AsRef<[u8]>, R: AsRef<[u8]>>(
    source_count: usize,
    repair_count: usize,
    shard_len: usize,
    present: &[(usize, P)],
    repair: &[(usize, R)],
) -> Result<BTreeMap<usize, Vec<u8>>, CodecError> {
    let mut shards: Vec<Option<Vec<u8>>> = vec![None; source_count + repair_count];
    for (i, p) in present {
        if *i >= source_count {
            return Err(CodecError::BadIndex {
                index: *i,
                count: source_count,
            });
        }
        shards[*i] = Some(source_shard(p.as_ref(), shard_len)?);
    }
    let missing: Vec<usize> = (0..source_count).filter(|&i| shards[i].is_none()).collect();
    if missing.is_empty() {
        return Ok(BTreeMap::new());
    }
    if repair.len() < missing.len() {
        return Err(CodecError::TooFewRepairs {
            missing: missing.len(),
            repairs: repair.len(),
        });
    }
    for (i, r) in repair {
        let r = r.as_ref();
        if *i >= repair_count {
            return Err(CodecError::BadIndex {
                index: *i,
                count: repair_count,
            });
        }
        if r.len() != shard_len {
            return Err(CodecError::RepairLength {
                shard_len,
                got: r.len(),
            });
        }
        shards[source_count + i] = Some(r.to_vec());
    }
    if repair_count == 1 {
        let [index] = missing.as_slice() else {
            return Err(CodecError::TooFewRepairs {
                missing: missing.len(),
                repairs: 1,
            });
        };
        let parity = xor(shards.iter().flatten(), shard_len);
        shards[*index] = Some(parity);
    } else {
        code_for(source_count, repair_count)?.reconstruct_data(&mut shards[..])?;
    }
    missing
        .into_iter()
        .map(|index| {
            let shard = shards[index].take().unwrap_or_default();
            let len = shard
                .get(..LEN_PREFIX)
                .map_or(usize::MAX, |b| u16::from_be_bytes([b[0], b[1]]) as usize);
            match shard.get(LEN_PREFIX..LEN_PREFIX.saturating_add(len)) {
                Some(p) => Ok((index, p.to_vec())),
                None => Err(CodecError::BadRebuild { index, len }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payloads() -> Vec<Vec<u8>> {
        (0..10u8)
            .map(|i| {
                (0..(100 + 37 * i as usize))
                    .map(|j| (j as u8) ^ i)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn any_missing_sources_up_to_the_repair_count_come_back_whole() {
        let p = payloads();
        let (shard_len, repair) = encode(&p, 3).unwrap();
        assert_eq!(shard_len, (100 + 37 * 9 + LEN_PREFIX).next_multiple_of(2));
        // Lose sources 0, 4 and 9; keep repair 0, 2 and 1.
        let present: Vec<(usize, &Vec<u8>)> = p
            .iter()
            .enumerate()
            .filter(|(i, _)| ![0, 4, 9].contains(i))
            .collect();
        let rep: Vec<(usize, &Vec<u8>)> = [0, 2, 1].iter().map(|&i| (i, &repair[i])).collect();
        let rebuilt = decode(10, 3, shard_len, &present, &rep).unwrap();
        assert_eq!(rebuilt.len(), 3);
        for (i, payload) in rebuilt {
            assert_eq!(payload, p[i], "source {i}");
        }
    }

    #[test]
    fn every_loss_pattern_up_to_the_repair_count_comes_back_in_brisks_block_shapes() {
        // The shapes the sender closes at 1 to 5% loss, plus the largest
        // the code takes; losses drawn with a fixed seed, repair symbols
        // lost too where the block has more than it needs.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for (k, m) in [(2, 2), (4, 2), (8, 3), (16, 4), (32, 5), (32, 16)] {
            let p: Vec<Vec<u8>> = (0..k)
                .map(|i| (0..(1 + (i * 53) % 1400)).map(|j| (i ^ j) as u8).collect())
                .collect();
            let (shard_len, repair) = encode(&p, m).unwrap();
            for _ in 0..20 {
                let lost_sources = 1 + next(m);
                let mut lost: Vec<usize> = Vec::new();
                while lost.len() < lost_sources {
                    let i = next(k);
                    if !lost.contains(&i) {
                        lost.push(i);
                    }
                }
                let present: Vec<(usize, &Vec<u8>)> = p
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !lost.contains(i))
                    .collect();
                // Only as many repair symbols as losses, from the back.
                let rep: Vec<(usize, &Vec<u8>)> =
                    repair.iter().enumerate().skip(m - lost_sources).collect();
                let rebuilt = decode(k, m, shard_len, &present, &rep).unwrap();
                assert_eq!(rebuilt.len(), lost_sources, "{k}+{m}, lost {lost:?}");
                for (i, payload) in rebuilt {
                    assert_eq!(payload, p[i], "{k}+{m}, source {i}");
                }
            }
        }
    }

    #[test]
    fn blocks_past_the_field_and_stray_indices_are_errors() {
        let p: Vec<Vec<u8>> = (0..250u8).map(|i| vec![i; 20]).collect();
        assert!(matches!(
            encode(&p, 7),
            Err(CodecError::Code(reed_solomon_erasure::Error::TooManyShards))
        ));
        let p = payloads();
        let (shard_len, repair) = encode(&p, 2).unwrap();
        let present: Vec<(usize, &Vec<u8>)> = p.iter().enumerate().skip(1).collect();
        let rep = [(2usize, &repair[0])];
        assert!(matches!(
            decode(10, 2, shard_len, &present, &rep),
            Err(CodecError::BadIndex { index: 2, count: 2 })
        ));
        let stray = [(10usize, &p[0])];
        assert!(matches!(
            decode(10, 2, shard_len, &stray, &rep),
            Err(CodecError::BadIndex {
                index: 10,
                count: 10
            })
        ));
        // Nothing missing: nothing to rebuild, whatever the repair.
        let all: Vec<(usize, &Vec<u8>)> = p.iter().enumerate().collect();
        assert_eq!(decode(10, 2, shard_len, &all, &rep), Ok(BTreeMap::new()));
    }

    #[test]
    fn one_repair_symbol_is_parity_and_rebuilds_any_one_loss() {
        let p = payloads();
        let (shard_len, repair) = encode(&p, 1).unwrap();
        let shards: Vec<Vec<u8>> = p
            .iter()
            .map(|x| source_shard(x, shard_len).unwrap())
            .collect();
        assert_eq!(repair[0], xor(shards.iter(), shard_len));
        for lost in [0, 5, 9] {
            let present: Vec<(usize, &Vec<u8>)> =
                p.iter().enumerate().filter(|(i, _)| *i != lost).collect();
            let rebuilt = decode(10, 1, shard_len, &present, &[(0, &repair[0])]).unwrap();
            assert_eq!(rebuilt.get(&lost), Some(&p[lost]));
        }
        let short = [(0usize, vec![0u8; 2])];
        let present: Vec<(usize, &Vec<u8>)> = p.iter().enumerate().skip(1).collect();
        assert!(decode(10, 1, shard_len, &present, &short).is_err());
    }

    #[test]
    fn more_missing_than_repair_is_an_error_not_a_panic() {
        let p = payloads();
        let (shard_len, repair) = encode(&p, 1).unwrap();
        let present: Vec<(usize, &Vec<u8>)> = p.iter().enumerate().skip(2).collect();
        let rep = [(0usize, &repair[0])];
        assert!(decode(10, 1, shard_len, &present, &rep).is_err());
    }

    #[test]
    fn a_payload_longer_than_its_shard_is_refused() {
        assert!(matches!(
            source_shard(&[1; 10], 11),
            Err(CodecError::TooLong { len: 10, .. })
        ));
        assert_eq!(source_shard(&[7; 3], 6).unwrap(), vec![0, 3, 7, 7, 7, 0]);
    }
}
