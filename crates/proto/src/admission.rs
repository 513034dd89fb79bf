//! A server endpoint's admission control (docs/PROTOCOL.md §3.7): what it
//! keeps to decide, for each Initial, between a Retry, a Refuse and a
//! handshake, before it spends a Diffie-Hellman operation or a byte of
//! per-connection memory.
//!
//! - Half-open handshakes (not yet both established and address-proved)
//!   are a set of their own, bounded by `max_half_open` apart from
//!   `max_connections`; the oldest is dropped for a newer one, and each
//!   lives only `half_open_timeout`.
//! - Handshakes start at no more than `handshakes_per_s`; past that, and
//!   once `retry` says the server is loaded (too many half-open or failed
//!   handshakes), Initials without a valid token get a Retry, which costs
//!   one HMAC and no state; a source that keeps drawing Retry packets
//!   without echoing a token gets no more that second (`retry_sources`).
//! - Retry, Refuse and stateless reset packets are rate-limited too, so a
//!   flood cannot turn the server into a packet source.

use crate::amplification::Allowances;
use crate::config::{AdmissionConfig, RetryPolicy, ServerConfig};
use crate::endpoint::ConnectionHandle;
use crate::rate_limit::RateLimit;
use crate::retry::RetryTokens;
use crate::retry_sources::RetrySources;
use crate::stateless_reset::ResetKey;
use brisk_time::Instant;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::collections::BTreeSet;

/// Stateless packets waiting to be sent at most; more are dropped, so a
/// driver that falls behind a flood does not pile them up.
pub(crate) const MAX_STATELESS_QUEUE: usize = 1024;

#[derive(Debug)]
pub(crate) struct Admission {
    pub config: AdmissionConfig,
    pub tokens: RetryTokens,
    pub reset_key: ResetKey,
    pub handshakes: RateLimit,
    pub replies: RateLimit,
    pub resets: RateLimit,
    /// Handshakes that failed (a forged IK Initial fails only after the
    /// Diffie-Hellman work): more than the half-open threshold of them in
    /// a burst, or faster than that many a second, is load too.
    pub failures: RateLimit,
    /// Half-open connections; handles grow with age, so the first is the
    /// oldest.
    pub half_open: BTreeSet<ConnectionHandle>,
    pub allowances: Allowances,
    /// Unpredictable bytes of stateless resets.
    pub rng: ChaCha20Rng,
    /// Retry packets drawn per source this second.
    pub retry_sources: RetrySources,
}

impl Admission {
    /// Secrets come from `seed`, apart from the endpoint's own stream so
    /// connection IDs stay as they were.
    pub(crate) fn new(server: &ServerConfig, seed: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0xad31_5510_7e7a_0c3d);
        let mut secret = [0u8; 32];
        rng.fill_bytes(&mut secret);
        let c = server.admission.clone();
        Admission {
            tokens: RetryTokens::new(secret, Instant::ZERO),
            reset_key: ResetKey::from_static(&server.keypair),
            handshakes: RateLimit::new(c.handshakes_per_s, c.handshake_burst),
            replies: RateLimit::new(c.stateless_replies_per_s, MAX_STATELESS_QUEUE as u64),
            resets: RateLimit::new(c.resets_per_s, (c.resets_per_s / 100).max(8)),
            failures: match c.retry {
                RetryPolicy::UnderLoad { half_open } => {
                    RateLimit::new(half_open as u64, half_open as u64)
                }
                _ => RateLimit::new(0, 0),
            },
            half_open: BTreeSet::new(),
            allowances: Allowances::default(),
            rng,
            retry_sources: RetrySources::default(),
            config: c,
        }
    }

    /// An Initial without a valid token must prove its address first.
    pub(crate) fn wants_retry(&mut self, now: Instant) -> bool {
        match self.config.retry {
            RetryPolicy::Never => false,
            RetryPolicy::Always => true,
            RetryPolicy::UnderLoad { half_open } => {
                self.half_open.len() >= half_open
                    || !self.handshakes.has_token(now)
                    || !self.failures.has_token(now)
            }
        }
    }
}
