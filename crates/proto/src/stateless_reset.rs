//! Stateless reset (docs/PROTOCOL.md §7.5, after RFC 9000 §10.3): how a
//! server that lost a connection's state (it restarted) tells the client
//! at once, instead of leaving it to wait out its idle timeout.
//!
//! The server announces, in its handshake message, a 16-byte token for its
//! connection ID: an HMAC of that ID under a key derived from the server's
//! static private key, so a restarted server with the same key file
//! computes the same token without remembering anything. A server that
//! gets a short-header packet for a connection it does not know answers
//! with a packet that looks like any short-header packet and ends with the
//! token; the client, finding a datagram it cannot route whose last 16
//! bytes are a token it was given, closes the connection.
//!
//! Loops are impossible: a reset is always shorter than the packet that
//! drew it, and packets of [`MIN_RESET_LEN`] bytes or less draw none.
//!
//! ```text
//! reset: 0 1 0 0 0 0 x x | unpredictable bytes | token (16)
//! ```

#[cfg(test)]
use crate::crypto::KEY_LEN;
use crate::crypto::Keypair;
use crate::packet::ConnectionId;
use aws_lc_rs::hmac;
use rand::RngCore;

pub(crate) const RESET_TOKEN_LEN: usize = 16;
/// The shortest reset: as long as the shortest real short-header packet
/// (one flags byte, an 8-byte connection ID, a packet number byte, one
/// frame byte and a 16-byte AEAD tag), so nothing tells them apart.
pub const MIN_RESET_LEN: usize = 1 + 8 + 1 + 1 + RESET_TOKEN_LEN;
/// The longest reset sent: enough to look like a small packet, small
/// enough never to amplify.
pub const MAX_RESET_LEN: usize = 43;

const LABEL: &[u8] = b"brisk stateless reset key";

/// Derives reset tokens from a server's static key.
#[derive(Clone)]
pub(crate) struct ResetKey(hmac::Key);

impl std::fmt::Debug for ResetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResetKey(..)")
    }
}

impl ResetKey {
    /// The same for every run of a server with `static_key`, and useless
    /// for recovering it.
    pub(crate) fn from_static(static_key: &Keypair) -> Self {
        let derive = hmac::Key::new(hmac::HMAC_SHA256, static_key.private());
        let k = hmac::sign(&derive, LABEL);
        ResetKey(hmac::Key::new(hmac::HMAC_SHA256, k.as_ref()))
    }

    #[cfg(test)]
    /// For tests and tools: a key from raw bytes.
    pub(crate) fn from_bytes(bytes: &[u8; KEY_LEN]) -> Self {
        ResetKey(hmac::Key::new(hmac::HMAC_SHA256, bytes))
    }

    pub(crate) fn token(&self, cid: &ConnectionId) -> [u8; RESET_TOKEN_LEN] {
        let tag = hmac::sign(&self.0, cid.as_bytes());
        let mut t = [0u8; RESET_TOKEN_LEN];
        t.copy_from_slice(&tag.as_ref()[..RESET_TOKEN_LEN]);
        t
    }
}

/// The reset answering a `trigger_len`-byte packet for `cid`, or `None`
/// when that packet is too small to answer without risking a loop.
pub(crate) fn reset_packet(
    key: &ResetKey,
    cid: &ConnectionId,
    trigger_len: usize,
    rng: &mut impl RngCore,
) -> Option<Vec<u8>> {
    if trigger_len <= MIN_RESET_LEN {
        return None;
    }
    let len = (trigger_len - 1).min(MAX_RESET_LEN);
    let mut p = vec![0u8; len];
    rng.fill_bytes(&mut p[..len - RESET_TOKEN_LEN]);
    // A short header's first byte: form 0, fixed 1, reserved bits zero,
    // any packet number length.
    p[0] = 0x40 | (p[0] & 0x03);
    p[len - RESET_TOKEN_LEN..].copy_from_slice(&key.token(cid));
    Some(p)
}

/// The token a datagram would carry if it were a reset.
pub(crate) fn trailing_token(datagram: &[u8]) -> Option<[u8; RESET_TOKEN_LEN]> {
    if datagram.len() < MIN_RESET_LEN || datagram.first().is_none_or(|b| b & 0x80 != 0) {
        return None;
    }
    datagram[datagram.len() - RESET_TOKEN_LEN..].try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn tokens_survive_a_restart_and_differ_per_id_and_key() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let server = Keypair::generate(&mut rng);
        let cid = ConnectionId::new(&[1; 8]).unwrap();
        let before = ResetKey::from_static(&server).token(&cid);
        let after = ResetKey::from_static(&server.clone()).token(&cid);
        assert_eq!(before, after, "derived from the key file alone");
        let other_id = ConnectionId::new(&[2; 8]).unwrap();
        assert_ne!(before, ResetKey::from_static(&server).token(&other_id));
        let other_server = Keypair::generate(&mut rng);
        assert_ne!(before, ResetKey::from_static(&other_server).token(&cid));
    }

    #[test]
    fn resets_shrink_and_stop_at_the_minimum() {
        let key = ResetKey::from_bytes(&[9; KEY_LEN]);
        let cid = ConnectionId::new(&[1; 8]).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let p = reset_packet(&key, &cid, 1200, &mut rng).unwrap();
        assert_eq!(p.len(), MAX_RESET_LEN);
        assert_eq!(p[0] & 0xfc, 0x40, "looks like a short header");
        assert_eq!(trailing_token(&p), Some(key.token(&cid)));
        // Answering each reset with a reset ends within a few rounds.
        let mut len = 1200;
        let mut rounds = 0;
        while let Some(r) = reset_packet(&key, &cid, len, &mut rng) {
            assert!(r.len() < len && r.len() >= MIN_RESET_LEN);
            len = r.len();
            rounds += 1;
        }
        assert_eq!(len, MIN_RESET_LEN);
        assert!(rounds <= MAX_RESET_LEN - MIN_RESET_LEN + 1);
        assert!(trailing_token(&[0x40; MIN_RESET_LEN - 1]).is_none());
        assert!(
            trailing_token(&[0xc0; 40]).is_none(),
            "long headers are no resets"
        );
    }
}
