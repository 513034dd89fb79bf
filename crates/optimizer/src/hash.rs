//! [`Keyed`]: the hasher of the connection table, a few multiplications
//! per key where the standard SipHash takes a dozen rounds per call.
//!
//! Every packet looks its connection up twice (its own tuple, and the
//! mirrored one that would betray asymmetric routing), so the hash is
//! on the per-packet path. Keys come from the network, so the state is
//! seeded at random per table (from the standard library's random
//! state): an attacker who cannot see the seed cannot aim many tuples at
//! one bucket. It is not a cryptographic function; the table's size is
//! bounded by `Config::max_connections` either way.

use std::hash::{BuildHasher, Hasher, RandomState};

/// Odd constant from the golden ratio: multiplying by it spreads every
/// input bit over the high half of the word.
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

/// Builds [`KeyedHasher`]s with one random seed.
#[derive(Debug, Clone)]
pub(crate) struct Keyed {
    seed: u64,
}

impl Default for Keyed {
    fn default() -> Self {
        Keyed {
            seed: RandomState::new().hash_one(SPREAD),
        }
    }
}

impl BuildHasher for Keyed {
    type Hasher = KeyedHasher;
    fn build_hasher(&self) -> KeyedHasher {
        KeyedHasher { state: self.seed }
    }
}

/// Folds each written word into the state with a multiply and a rotate.
#[derive(Debug, Clone)]
pub(crate) struct KeyedHasher {
    state: u64,
}

impl KeyedHasher {
    fn word(&mut self, w: u64) {
        self.state = (self.state ^ w).wrapping_mul(SPREAD).rotate_left(26);
    }
}

impl Hasher for KeyedHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            // The length keeps "ab" and "ab\0" apart.
            self.word(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.word(u64::from(i));
    }
    fn write_u16(&mut self, i: u16) {
        self.word(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.word(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.word(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.word(i as u64);
    }
    fn finish(&self) -> u64 {
        // A last mix so the low bits (the bucket) depend on every input
        // bit, not only on the last word's low ones.
        let x = self.state ^ (self.state >> 32);
        x.wrapping_mul(SPREAD) ^ (x >> 29)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConnectionKey;
    use std::collections::HashSet;
    use std::net::SocketAddr;

    /// 10,000 connections of one client address, told apart only by port
    /// (the benchmark's and a busy subscriber's case), spread over the low
    /// bits a table indexes by; for IPv4 and IPv6.
    #[test]
    fn ports_of_one_client_spread_over_buckets() {
        let keyed = Keyed::default();
        for (client, server) in [("10.0.0.2", "10.0.1.2:443"), ("fd00::2", "[fd00:1::2]:443")] {
            let server: SocketAddr = server.parse().unwrap();
            let mut buckets = HashSet::new();
            for port in 20_000..30_000u16 {
                let key =
                    ConnectionKey::new(SocketAddr::new(client.parse().unwrap(), port), server);
                buckets.insert(keyed.hash_one(key) & 0x3fff);
            }
            // 10,000 keys in 16,384 buckets at random fill about 7,200.
            assert!(buckets.len() > 6_500, "{client}: {} buckets", buckets.len());
        }
    }
}
