//! Keys and packet protection.
//!
//! Static identities are X25519 [`Keypair`]s. The Noise handshake
//! ([`crate::handshake`]) runs through `snow`, with a resolver that draws
//! ephemeral keys from a seeded ChaCha20 stream so whole runs replay
//! bit-for-bit. After the handshake every 1-RTT packet is sealed with
//! ChaCha20-Poly1305 under the direction's key from the Noise split: the
//! nonce is 32 zero bits followed by the full 64-bit packet number in little
//! endian (the Noise ChaChaPoly nonce layout), and the associated data is the
//! packet header. Packet numbers are never reused, so no key ever sees the
//! same nonce twice, and any packet decrypts on its own whatever was lost or
//! reordered before it.

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use snow::params::{CipherChoice, DHChoice, HashChoice};
use snow::resolvers::{CryptoResolver, DefaultResolver};
use snow::types::{Cipher, Dh, Hash, Random};

/// Bytes the AEAD tag adds to every 1-RTT packet.
pub const TAG_LEN: usize = 16;
/// X25519 key length.
pub const KEY_LEN: usize = 32;

/// Why a packet could not be unsealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    #[error("packet shorter than the authentication tag")]
    Truncated,
    #[error("authentication failed")]
    Unauthenticated,
}

/// A static X25519 identity.
#[derive(Clone, PartialEq, Eq)]
pub struct Keypair {
    private: [u8; KEY_LEN],
    public: [u8; KEY_LEN],
}

impl Keypair {
    /// A fresh keypair from `rng` (seed it for reproducible tests).
    pub fn generate(rng: &mut impl RngCore) -> Self {
        let mut private = [0u8; KEY_LEN];
        rng.fill_bytes(&mut private);
        Self::from_private(private)
    }

    /// The keypair whose private half is `private` (clamped by X25519).
    pub fn from_private(private: [u8; KEY_LEN]) -> Self {
        let mut dh = DefaultResolver
            .resolve_dh(&DHChoice::Curve25519)
            .expect("snow's default resolver always provides X25519");
        dh.set(&private);
        let mut public = [0u8; KEY_LEN];
        public.copy_from_slice(dh.pubkey());
        Keypair { private, public }
    }

    pub fn public(&self) -> [u8; KEY_LEN] {
        self.public
    }

    pub(crate) fn private(&self) -> &[u8; KEY_LEN] {
        &self.private
    }
}

impl std::fmt::Debug for Keypair {
    /// Never prints the private key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keypair(public ")?;
        for b in &self.public[..4] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "..)")
    }
}

/// snow's primitives, with ephemeral keys drawn from a seeded stream.
pub(crate) struct SeededResolver {
    seed: [u8; 32],
}

impl SeededResolver {
    pub(crate) fn new(seed: [u8; 32]) -> Self {
        SeededResolver { seed }
    }
}

struct SeededRandom(ChaCha20Rng);

impl Random for SeededRandom {
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), snow::Error> {
        self.0.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoResolver for SeededResolver {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        Some(Box::new(SeededRandom(ChaCha20Rng::from_seed(self.seed))))
    }
    fn resolve_dh(&self, choice: &DHChoice) -> Option<Box<dyn Dh>> {
        DefaultResolver.resolve_dh(choice)
    }
    fn resolve_hash(&self, choice: &HashChoice) -> Option<Box<dyn Hash>> {
        DefaultResolver.resolve_hash(choice)
    }
    fn resolve_cipher(&self, choice: &CipherChoice) -> Option<Box<dyn Cipher>> {
        DefaultResolver.resolve_cipher(choice)
    }
}

/// One direction's 1-RTT packet protection.
#[derive(Clone)]
pub struct PacketKey {
    aead: ChaCha20Poly1305,
}

impl std::fmt::Debug for PacketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PacketKey(..)")
    }
}

fn nonce(pn: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&pn.to_le_bytes());
    Nonce::from(n)
}

impl PacketKey {
    pub fn new(key: [u8; KEY_LEN]) -> Self {
        PacketKey {
            aead: ChaCha20Poly1305::new(&Key::from(key)),
        }
    }

    /// Encrypts `buf[payload_start..]` in place and appends the tag; the
    /// header `buf[header_start..payload_start]` is the associated data.
    /// (Earlier bytes of `buf` may hold other packets of the datagram.)
    pub fn seal(&self, pn: u64, buf: &mut Vec<u8>, header_start: usize, payload_start: usize) {
        let (before, payload) = buf.split_at_mut(payload_start);
        let header = &before[header_start..];
        let tag = self
            .aead
            .encrypt_in_place_detached(&nonce(pn), header, payload)
            .expect("ChaCha20-Poly1305 accepts any payload under 256 GiB");
        buf.extend_from_slice(&tag);
    }

    /// Authenticates `header` and `sealed` (ciphertext and tag) and returns
    /// the plaintext.
    pub fn open(&self, pn: u64, header: &[u8], sealed: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let body_len = sealed
            .len()
            .checked_sub(TAG_LEN)
            .ok_or(CryptoError::Truncated)?;
        let mut body = sealed[..body_len].to_vec();
        let tag = Tag::from_slice(&sealed[body_len..]);
        self.aead
            .decrypt_in_place_detached(&nonce(pn), header, &mut body, tag)
            .map_err(|_| CryptoError::Unauthenticated)?;
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keypairs_are_deterministic_per_seed_and_x25519() {
        let a = Keypair::generate(&mut ChaCha20Rng::seed_from_u64(1));
        let b = Keypair::generate(&mut ChaCha20Rng::seed_from_u64(1));
        let c = Keypair::generate(&mut ChaCha20Rng::seed_from_u64(2));
        assert_eq!(a, b);
        assert_ne!(a.public(), c.public());
        // RFC 7748 §6.1: Alice's private key and public key.
        let alice = Keypair::from_private([
            0x77, 0x07, 0x6d, 0x0a, 0x73, 0x18, 0xa5, 0x7d, 0x3c, 0x16, 0xc1, 0x72, 0x51, 0xb2,
            0x66, 0x45, 0xdf, 0x4c, 0x2f, 0x87, 0xeb, 0xc0, 0x99, 0x2a, 0xb1, 0x77, 0xfb, 0xa5,
            0x1d, 0xb9, 0x2c, 0x2a,
        ]);
        assert_eq!(
            alice.public()[..4],
            [0x85, 0x20, 0xf0, 0x09],
            "X25519 public key of the RFC 7748 test vector"
        );
        assert!(!format!("{alice:?}").contains("77076d"));
    }

    #[test]
    fn seal_open_round_trip_and_tamper_detection() {
        let key = PacketKey::new([7; 32]);
        let mut pkt = b"HDR".to_vec();
        pkt.extend_from_slice(b"secret payload");
        key.seal(42, &mut pkt, 0, 3);
        assert_eq!(pkt.len(), 3 + 14 + TAG_LEN);
        assert_ne!(&pkt[3..17], b"secret payload");
        assert_eq!(
            key.open(42, &pkt[..3], &pkt[3..]).unwrap(),
            b"secret payload"
        );
        // Wrong packet number, header bit flip, body bit flip, wrong key.
        assert_eq!(
            key.open(43, &pkt[..3], &pkt[3..]),
            Err(CryptoError::Unauthenticated)
        );
        let mut h = pkt.clone();
        h[0] ^= 1;
        assert!(key.open(42, &h[..3], &h[3..]).is_err());
        let mut b = pkt.clone();
        b[5] ^= 0x80;
        assert!(key.open(42, &b[..3], &b[3..]).is_err());
        assert!(
            PacketKey::new([8; 32])
                .open(42, &pkt[..3], &pkt[3..])
                .is_err()
        );
        assert_eq!(key.open(42, b"", &[0; 15]), Err(CryptoError::Truncated));
    }
}
