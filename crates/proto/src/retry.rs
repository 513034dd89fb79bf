//! Address validation before any key agreement (docs/PROTOCOL.md §3.7),
//! and the two packets a server sends without keeping state: Retry and
//! Refuse.
//!
//! A server under load answers an Initial that carries no token with a
//! Retry holding a token: a MAC, under a secret only the server knows,
//! over the client's IP address, UDP port, both connection IDs of its
//! Initial and a coarse timestamp. The client sends the same Initial again
//! with the token in front of its handshake message; only a client that
//! receives at its address can do that, so the server spends a
//! Diffie-Hellman operation, and keeps state, only for it. Checking a
//! token is one HMAC and needs no memory per client, like QUIC's Retry
//! (RFC 9000 §8.1.2) and WireGuard's cookie reply.
//!
//! The secret changes every [`SECRET_EPOCH_S`] seconds; a token is
//! accepted under the secret of its own epoch or the one before, for at
//! most [`TOKEN_LIFETIME_S`] seconds.
//!
//! ```text
//! token:  issued at, seconds (32) | HMAC-SHA256(secret, ...)[..16]
//! Retry:  1 1 1 0 0 0 0 0 | version | DCID len | DCID = client's SCID
//!         | SCID len | SCID = client's first DCID | token len (varint) | token
//! Refuse: 1 1 1 1 0 0 0 0 | version | DCID len | DCID = client's SCID
//!         | SCID len | SCID = client's first DCID | error code (varint)
//!         | reason len (varint) | reason (UTF-8)
//! ```

use crate::packet::{ConnectionId, MAX_CID_LEN, SUPPORTED_VERSIONS};
use crate::varint::{self, DecodeError, Reader};
use aws_lc_rs::hmac;
use brisk_time::Instant;
use rand::RngCore;
use std::net::{IpAddr, SocketAddr};

/// Seconds a token stays valid after it was issued: long enough for a
/// client's Initial to be lost and resent a few times.
pub(crate) const TOKEN_LIFETIME_S: u64 = 20;
/// Seconds one retry secret is used for before a fresh one replaces it.
pub(crate) const SECRET_EPOCH_S: u64 = 60;
/// Bytes of a retry token.
pub(crate) const TOKEN_LEN: usize = 4 + MAC_LEN;
const MAC_LEN: usize = 16;

/// The long-header type bits of a Retry.
const TYPE_RETRY: u8 = 2;
/// The long-header type bits of a Refuse.
const TYPE_REFUSE: u8 = 3;
const LONG_FIXED: u8 = 0xc0;
/// Refusal reasons are cut to this many bytes.
const MAX_REASON: usize = 128;

/// Mints and checks retry tokens.
pub(crate) struct RetryTokens {
    rng: rand_chacha::ChaCha20Rng,
    /// The epoch of `current`, and the secrets of it and of the epoch
    /// before.
    epoch: u64,
    current: hmac::Key,
    previous: hmac::Key,
}

impl std::fmt::Debug for RetryTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secrets.
        f.debug_struct("RetryTokens")
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

fn fresh_key(rng: &mut impl RngCore) -> hmac::Key {
    let mut secret = [0u8; 32];
    rng.fill_bytes(&mut secret);
    hmac::Key::new(hmac::HMAC_SHA256, &secret)
}

/// What a token is bound to: the client's address and its Initial's IDs.
fn mac(
    key: &hmac::Key,
    issued_s: u32,
    remote: SocketAddr,
    dcid: &ConnectionId,
    scid: &ConnectionId,
) -> [u8; MAC_LEN] {
    let mut ctx = hmac::Context::with_key(key);
    ctx.update(&issued_s.to_be_bytes());
    match remote.ip() {
        IpAddr::V4(a) => {
            ctx.update(&[4]);
            ctx.update(&a.octets());
        }
        IpAddr::V6(a) => {
            ctx.update(&[6]);
            ctx.update(&a.octets());
        }
    }
    ctx.update(&remote.port().to_be_bytes());
    for c in [dcid, scid] {
        ctx.update(&[c.len() as u8]);
        ctx.update(c.as_bytes());
    }
    let tag = ctx.sign();
    let mut out = [0u8; MAC_LEN];
    out.copy_from_slice(&tag.as_ref()[..MAC_LEN]);
    out
}

impl RetryTokens {
    /// Secrets drawn from `seed`, the first for the epoch of `now`.
    pub(crate) fn new(seed: [u8; 32], now: Instant) -> Self {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::from_seed(seed);
        let current = fresh_key(&mut rng);
        let previous = fresh_key(&mut rng);
        RetryTokens {
            rng,
            epoch: epoch_of(seconds(now)),
            current,
            previous,
        }
    }

    /// Moves to the epoch of `now`: one step keeps the last secret as the
    /// previous one; a longer gap leaves no old secret valid.
    fn rotate(&mut self, now: Instant) {
        let e = epoch_of(seconds(now));
        if e <= self.epoch {
            return;
        }
        let fresh = fresh_key(&mut self.rng);
        if e == self.epoch + 1 {
            self.previous = std::mem::replace(&mut self.current, fresh);
        } else {
            self.previous = fresh_key(&mut self.rng);
            self.current = fresh;
        }
        self.epoch = e;
    }

    /// A token for the client at `remote` whose Initial carried `dcid` and
    /// `scid`.
    pub(crate) fn mint(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        dcid: &ConnectionId,
        scid: &ConnectionId,
    ) -> [u8; TOKEN_LEN] {
        self.rotate(now);
        let issued = seconds(now);
        let mut t = [0u8; TOKEN_LEN];
        t[..4].copy_from_slice(&issued.to_be_bytes());
        t[4..].copy_from_slice(&mac(&self.current, issued, remote, dcid, scid));
        t
    }

    /// Whether `token` was minted here, for this address and these IDs,
    /// within its lifetime.
    pub(crate) fn validate(
        &mut self,
        now: Instant,
        token: &[u8],
        remote: SocketAddr,
        dcid: &ConnectionId,
        scid: &ConnectionId,
    ) -> bool {
        self.rotate(now);
        let Ok(t) = <&[u8; TOKEN_LEN]>::try_from(token) else {
            return false;
        };
        let issued = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
        let age = seconds(now).checked_sub(issued);
        if age.is_none_or(|a| u64::from(a) > TOKEN_LIFETIME_S) {
            return false;
        }
        let key = match self.epoch.checked_sub(epoch_of(issued)) {
            Some(0) => &self.current,
            Some(1) => &self.previous,
            _ => return false,
        };
        let want = mac(key, issued, remote, dcid, scid);
        aws_lc_rs::constant_time::verify_slices_are_equal(&want, &t[4..]).is_ok()
    }
}

fn seconds(now: Instant) -> u32 {
    (now.as_nanos() / 1_000_000_000) as u32
}

fn epoch_of(s: u32) -> u64 {
    u64::from(s) / SECRET_EPOCH_S
}

/// A packet the server sends without a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StatelessPacket {
    /// Send the Initial again with this token.
    Retry {
        version: u32,
        dcid: ConnectionId,
        scid: ConnectionId,
        token: Vec<u8>,
    },
    /// The server will not take the connection.
    Refuse {
        version: u32,
        dcid: ConnectionId,
        scid: ConnectionId,
        error_code: u64,
        reason: String,
    },
}

impl StatelessPacket {
    /// The client's connection ID, which routes the packet to it.
    pub(crate) fn dcid(&self) -> &ConnectionId {
        match self {
            StatelessPacket::Retry { dcid, .. } | StatelessPacket::Refuse { dcid, .. } => dcid,
        }
    }

    /// Whether `b` starts like a Retry or Refuse: a long header of type 2
    /// or 3 (other parsers reject these types).
    pub(crate) fn is_stateless_type(b: &[u8]) -> bool {
        b.first()
            .is_some_and(|&f| f & LONG_FIXED == LONG_FIXED && (f >> 4) & 0x03 >= TYPE_RETRY)
    }

    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        let (ty, version, dcid, scid) = match self {
            StatelessPacket::Retry {
                version,
                dcid,
                scid,
                ..
            } => (TYPE_RETRY, version, dcid, scid),
            StatelessPacket::Refuse {
                version,
                dcid,
                scid,
                ..
            } => (TYPE_REFUSE, version, dcid, scid),
        };
        out.push(LONG_FIXED | (ty << 4));
        out.extend_from_slice(&version.to_be_bytes());
        for c in [dcid, scid] {
            out.push(c.len() as u8);
            out.extend_from_slice(c.as_bytes());
        }
        match self {
            StatelessPacket::Retry { token, .. } => {
                varint::write(out, token.len() as u64);
                out.extend_from_slice(token);
            }
            StatelessPacket::Refuse {
                error_code, reason, ..
            } => {
                let r = &reason.as_bytes()[..reason.len().min(MAX_REASON)];
                varint::write(out, *error_code);
                varint::write(out, r.len() as u64);
                out.extend_from_slice(r);
            }
        }
    }

    /// Parses a Retry or Refuse of a version this side speaks; anything
    /// else, or trailing bytes, is an error.
    pub(crate) fn parse(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b);
        let first = r.u8()?;
        if first & 0x0f != 0 {
            return Err(DecodeError::Malformed("reserved bits set"));
        }
        let ty = (first >> 4) & 0x03;
        if first & LONG_FIXED != LONG_FIXED || ty < TYPE_RETRY {
            return Err(DecodeError::Malformed("not a stateless packet"));
        }
        let version = r.u32()?;
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Err(DecodeError::Malformed("unsupported version"));
        }
        let mut cid = || -> Result<ConnectionId, DecodeError> {
            let len = usize::from(r.u8()?);
            if len > MAX_CID_LEN {
                return Err(DecodeError::Malformed("cid too long"));
            }
            ConnectionId::new(r.bytes(len)?).ok_or(DecodeError::Malformed("cid too long"))
        };
        let dcid = cid()?;
        let scid = cid()?;
        let p = if ty == TYPE_RETRY {
            let len = r.varint_len()?;
            let token = r.bytes(len)?.to_vec();
            if token.is_empty() {
                return Err(DecodeError::Malformed("empty retry token"));
            }
            StatelessPacket::Retry {
                version,
                dcid,
                scid,
                token,
            }
        } else {
            let error_code = r.varint()?;
            let len = r.varint_len()?;
            let reason = String::from_utf8_lossy(r.bytes(len)?).into_owned();
            StatelessPacket::Refuse {
                version,
                dcid,
                scid,
                error_code,
                reason,
            }
        };
        if !r.is_empty() {
            return Err(DecodeError::Malformed(
                "trailing bytes after stateless packet",
            ));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::VERSION_1;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn cid(b: u8) -> ConnectionId {
        ConnectionId::new(&[b; 8]).unwrap()
    }

    fn v4() -> SocketAddr {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 40_000)
    }

    fn v6() -> SocketAddr {
        SocketAddr::new(
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
            40_000,
        )
    }

    #[test]
    fn a_token_holds_only_for_its_address_ids_and_lifetime() {
        for addr in [v4(), v6()] {
            let t0 = Instant::from_millis(1_000);
            let mut r = RetryTokens::new([7; 32], t0);
            let tok = r.mint(t0, addr, &cid(1), &cid(2));
            assert!(r.validate(t0, &tok, addr, &cid(1), &cid(2)));
            let later = Instant::from_millis(1_000 + TOKEN_LIFETIME_S * 1_000);
            assert!(r.validate(later, &tok, addr, &cid(1), &cid(2)));
            let other_port = SocketAddr::new(addr.ip(), addr.port() + 1);
            assert!(!r.validate(t0, &tok, other_port, &cid(1), &cid(2)));
            assert!(!r.validate(t0, &tok, addr, &cid(3), &cid(2)));
            assert!(!r.validate(t0, &tok, addr, &cid(1), &cid(3)));
            let too_late = Instant::from_millis(2_000 + TOKEN_LIFETIME_S * 1_000);
            assert!(!r.validate(too_late, &tok, addr, &cid(1), &cid(2)));
            let mut forged = tok;
            forged[TOKEN_LEN - 1] ^= 1;
            assert!(!r.validate(t0, &forged, addr, &cid(1), &cid(2)));
            assert!(!r.validate(t0, &tok[..TOKEN_LEN - 1], addr, &cid(1), &cid(2)));
            // Another server (another secret) does not accept it.
            let mut other = RetryTokens::new([8; 32], t0);
            assert!(!other.validate(t0, &tok, addr, &cid(1), &cid(2)));
        }
    }

    #[test]
    fn secrets_rotate_and_the_previous_one_still_counts() {
        let addr = v4();
        let edge_s = SECRET_EPOCH_S - 1;
        let t0 = Instant::from_millis(edge_s * 1_000);
        let mut r = RetryTokens::new([7; 32], Instant::ZERO);
        let tok = r.mint(t0, addr, &cid(1), &cid(2));
        // One second later the epoch changed: the old secret still checks.
        let t1 = Instant::from_millis((edge_s + 1) * 1_000);
        assert!(r.validate(t1, &tok, addr, &cid(1), &cid(2)));
        let fresh = r.mint(t1, addr, &cid(1), &cid(2));
        assert_ne!(fresh[4..], tok[4..], "a new secret signs the new epoch");
        // Two epochs on, both secrets are new: nothing old validates.
        let mut r2 = RetryTokens::new([7; 32], Instant::ZERO);
        let old = r2.mint(Instant::ZERO, addr, &cid(1), &cid(2));
        let far = Instant::from_millis(3 * SECRET_EPOCH_S * 1_000);
        r2.mint(far, addr, &cid(1), &cid(2));
        assert!(!r2.validate(Instant::ZERO, &old, addr, &cid(1), &cid(2)));
    }

    #[test]
    fn stateless_packets_round_trip_on_fixed_bytes() {
        let retry = StatelessPacket::Retry {
            version: VERSION_1,
            dcid: ConnectionId::new(&[0xaa]).unwrap(),
            scid: ConnectionId::new(&[0xbb, 0xcc]).unwrap(),
            token: vec![1, 2, 3],
        };
        let mut b = Vec::new();
        retry.emit(&mut b);
        assert_eq!(
            b,
            [
                0xe0, 0x42, 0x52, 0x00, 0x01, 1, 0xaa, 2, 0xbb, 0xcc, 3, 1, 2, 3
            ]
        );
        assert!(StatelessPacket::is_stateless_type(&b));
        assert_eq!(StatelessPacket::parse(&b).unwrap(), retry);
        let refuse = StatelessPacket::Refuse {
            version: VERSION_1,
            dcid: ConnectionId::new(&[0xaa]).unwrap(),
            scid: ConnectionId::new(&[]).unwrap(),
            error_code: 2,
            reason: "full".into(),
        };
        let mut b = Vec::new();
        refuse.emit(&mut b);
        assert_eq!(
            b,
            [
                0xf0, 0x42, 0x52, 0x00, 0x01, 1, 0xaa, 0, 2, 4, b'f', b'u', b'l', b'l'
            ]
        );
        assert_eq!(StatelessPacket::parse(&b).unwrap(), refuse);
        for n in 0..b.len() {
            assert!(StatelessPacket::parse(&b[..n]).is_err(), "prefix {n}");
        }
        let mut trailing = b.clone();
        trailing.push(0);
        assert!(StatelessPacket::parse(&trailing).is_err());
        let mut initial = b.clone();
        initial[0] = 0xc0;
        assert!(!StatelessPacket::is_stateless_type(&initial));
        assert!(StatelessPacket::parse(&initial).is_err());
        let mut foreign = b;
        foreign[4] = 0x09;
        assert!(StatelessPacket::parse(&foreign).is_err());
    }
}
