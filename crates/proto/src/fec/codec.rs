//! The erasure code: source shards made from packet payloads, and
//! Reed-Solomon repair shards over them (the `reed-solomon-simd` crate,
//! O(n log n) Leopard codes with SIMD).
//!
//! A source shard is a payload behind its length (2 bytes, big-endian),
//! padded with zeros to the block's shard length, so payloads of any size
//! share one block and a rebuilt shard says where its payload ends. The
//! shard length is even, as the code works on 16-bit symbols.

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
    let repair = reed_solomon_simd::encode(shards.len(), repair_count, &shards)?;
    Ok((shard_len, repair))
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
    let rebuilt = reed_solomon_simd::decode(
        source_count,
        repair_count,
        shards.iter().map(|(i, s)| (*i, s)),
        repair.iter().map(|(i, r)| (*i, r.as_ref())),
    )?;
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
