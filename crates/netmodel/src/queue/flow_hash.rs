//! Keyed, deterministic hashing of a 5-tuple onto one of N flow queues.
//!
//! Linux hashes the flow with a boot-time random key and scales the 32-bit
//! result onto the table (`reciprocal_scale`). Here the key (ns-3's
//! "perturbation") comes from the run's seeded RNG, so which flows share a
//! queue is random across seeds yet identical for a given seed, on every
//! platform. The mix is SplitMix64's finalizer over 64-bit words: well
//! spread, not meant to resist an adversary choosing flows.

use brisk_wire::FlowKey;
use std::net::IpAddr;

/// Maps flows to queue indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowHasher {
    key: u64,
}

impl FlowHasher {
    pub(crate) fn new(key: u64) -> FlowHasher {
        FlowHasher { key }
    }

    /// A 32-bit hash of the 5-tuple.
    pub(crate) fn hash(&self, flow: &FlowKey) -> u32 {
        let mut h = self.key;
        for word in [
            addr_words(flow.src),
            addr_words(flow.dst),
            [
                (u64::from(flow.protocol) << 32)
                    | (u64::from(flow.src_port) << 16)
                    | u64::from(flow.dst_port),
                0,
            ],
        ]
        .iter()
        .flatten()
        {
            h = mix(h ^ word);
        }
        (h >> 32) as u32
    }

    /// The queue index in `0..buckets` for `flow` (`buckets` > 0).
    pub(crate) fn bucket(&self, flow: &FlowKey, buckets: u32) -> u32 {
        ((u64::from(self.hash(flow)) * u64::from(buckets)) >> 32) as u32
    }
}

/// An address as two words, tagged with its family so an IPv4 address never
/// collides with an IPv6 one by construction.
fn addr_words(a: IpAddr) -> [u64; 2] {
    match a {
        IpAddr::V4(v4) => [u64::from(u32::from(v4)), 4],
        IpAddr::V6(v6) => {
            let x = u128::from(v6);
            [(x >> 64) as u64, (x as u64) ^ (6 << 60)]
        }
    }
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(src: &str, dst: &str, sport: u16, dport: u16) -> FlowKey {
        FlowKey {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            protocol: 17,
            src_port: sport,
            dst_port: dport,
        }
    }

    #[test]
    fn same_key_same_bucket_other_key_other_layout() {
        let f = key("10.0.0.1", "10.0.1.1", 1000, 5000);
        let a = FlowHasher::new(1);
        assert_eq!(a.hash(&f), FlowHasher::new(1).hash(&f));
        assert_ne!(a.hash(&f), FlowHasher::new(2).hash(&f));
        // Each field matters.
        let h = a.hash(&f);
        assert_ne!(h, a.hash(&key("10.0.0.2", "10.0.1.1", 1000, 5000)));
        assert_ne!(h, a.hash(&key("10.0.0.1", "10.0.1.2", 1000, 5000)));
        assert_ne!(h, a.hash(&key("10.0.0.1", "10.0.1.1", 1001, 5000)));
        assert_ne!(h, a.hash(&key("10.0.0.1", "10.0.1.1", 1000, 5001)));
        assert_ne!(h, a.hash(&FlowKey { protocol: 6, ..f }));
        assert_ne!(
            h,
            a.hash(&key("::ffff:10.0.0.1", "::ffff:10.0.1.1", 1000, 5000))
        );
    }

    #[test]
    fn buckets_fill_evenly_for_v4_and_v6() {
        // 64 buckets, 64k flows: each bucket within 15% (about 5 standard
        // deviations) of its share.
        for v6 in [false, true] {
            let h = FlowHasher::new(0xfeed);
            let mut counts = [0u32; 64];
            for i in 0..65_536u32 {
                let src = if v6 {
                    format!("2001:db8::{:x}", i >> 8)
                } else {
                    format!("10.0.{}.1", i >> 8)
                };
                let dst = if v6 { "2001:db8:1::1" } else { "10.0.1.1" };
                let b = h.bucket(&key(&src, dst, i as u16 & 0xff, 443), 64);
                counts[b as usize] += 1;
            }
            for c in counts {
                assert!((870..=1178).contains(&c), "{c} {counts:?}");
            }
        }
    }
}
