//! The erasure code: source shards made from packet payloads, and
//! Reed-Solomon repair shards over them (the `reed-solomon-simd` crate,
//! O(n log n) Leopard codes with SIMD).
//!
//! A source shard is a payload behind its length (2 bytes, big-endian),
//! padded with zeros to the block's shard length, so payloads of any size
//! share one block and a rebuilt shard says where its payload ends. The
//! shard length is even, as the code works on 16-bit symbols.
//!
//! A block with a single repair symbol takes XOR parity instead: it
//! rebuilds any one loss as Reed-Solomon would, and costs a pass over the
//! bytes where Reed-Solomon's decoder pays a fixed half millisecond per
//! block (a transform over its whole 2^16-element field).

use std::collections::BTreeMap;

/// Bytes of the length in front of each payload in its source shard.
pub const LEN_PREFIX: usize = 2;

/// Why a block could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CodecError {
    /// The erasure code refused the block (counts it does not support,
    /// shards of different lengths).
    #[error("erasure code: {0}")]
    Code(#[from] reed_solomon_simd::Error),
    /// A payload does not fit the shard length, or its length is over 64 KiB.
    #[error("payload of {len} bytes does not fit a {shard_len}-byte shard")]
    TooLong {
        /// The payload's bytes.
        len: usize,
        /// The shard's bytes.
        shard_len: usize,
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
    let repair = reed_solomon_simd::encode(shards.len(), repair_count, &shards)?;
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
    let shards = present
        .iter()
        .map(|(i, p)| Ok((*i, source_shard(p.as_ref(), shard_len)?)))
        .collect::<Result<Vec<_>, CodecError>>()?;
    let rebuilt = if repair_count == 1 {
        parity_decode(source_count, shard_len, &shards, repair)?
    } else {
        reed_solomon_simd::decode(
            source_count,
            repair_count,
            shards.iter().map(|(i, s)| (*i, s)),
            repair.iter().map(|(i, r)| (*i, r.as_ref())),
        )?
    };
    rebuilt
        .into_iter()
        .map(|(index, shard)| {
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

/// The one missing shard of a block with XOR parity.
fn parity_decode<R: AsRef<[u8]>>(
    source_count: usize,
    shard_len: usize,
    shards: &[(usize, Vec<u8>)],
    repair: &[(usize, R)],
) -> Result<BTreeMap<usize, Vec<u8>>, CodecError> {
    let mut rebuilt = BTreeMap::new();
    let missing: Vec<usize> = (0..source_count)
        .filter(|i| !shards.iter().any(|(j, _)| j == i))
        .collect();
    let (Some(parity), [index]) = (repair.first(), missing.as_slice()) else {
        if missing.is_empty() {
            return Ok(rebuilt);
        }
        return Err(reed_solomon_simd::Error::NotEnoughShards {
            original_count: source_count,
            original_received_count: shards.len(),
            recovery_received_count: repair.len(),
        }
        .into());
    };
    if parity.1.as_ref().len() != shard_len {
        return Err(reed_solomon_simd::Error::DifferentShardSize {
            shard_bytes: shard_len,
            got: parity.1.as_ref().len(),
        }
        .into());
    }
    let all = shards
        .iter()
        .map(|(_, s)| s.as_slice())
        .chain([parity.1.as_ref()]);
    rebuilt.insert(*index, xor(all, shard_len));
    Ok(rebuilt)
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
        assert_eq!(shard_len % 2, 0);
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
