//! Keys and packet protection.
//!
//! Static identities are X25519 [`Keypair`]s. The Noise handshake
//! ([`crate::handshake`]) runs through `snow`, with a resolver that draws
//! ephemeral keys from a seeded ChaCha20 stream so whole runs replay
//! bit-for-bit. After the handshake every 1-RTT packet is sealed with the
//! negotiated [`PacketCipher`] (AES-256-GCM or ChaCha20-Poly1305, both
//! through `aws-lc-rs`: rustls' and s2n-quic's default provider, with less
//! fixed cost per packet than ring) under the direction's key from the
//! Noise split: the nonce is 32 zero bits followed by the full 64-bit
//! packet number in little endian (the Noise ChaChaPoly nonce layout), and
//! the associated data is the packet header. Packet numbers are never
//! reused, so no key ever sees the same nonce twice, and any packet
//! decrypts on its own whatever was lost or reordered before it. (The
//! handshake itself stays on snow's ChaCha20-Poly1305; only the keys it
//! exports feed the packet cipher.) X25519, for the handshake and for
//! [`Keypair`], runs on aws-lc's assembly rather than snow's default
//! (portable 64-bit field arithmetic, about four times the instructions):
//! same function (RFC 7748), same bytes.

use aws_lc_rs::{aead, agreement};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use snow::params::{CipherChoice, DHChoice, HashChoice};
use snow::resolvers::{CryptoResolver, DefaultResolver};
use snow::types::{Cipher, Dh, Hash, Random};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Bytes the AEAD tag adds to every 1-RTT packet.
pub(crate) const TAG_LEN: usize = 16;
/// X25519 key length.
pub const KEY_LEN: usize = 32;

/// Why a packet could not be unsealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CryptoError {
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
        let mut dh = X25519::default();
        dh.set(&private);
        Keypair {
            private,
            public: dh.public,
        }
    }

    /// The public half, which peers pin.
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

/// X25519 shared secrets that one end of a simulated flow worked out and
/// the other end has not taken yet
/// ([`crate::TransportConfig::insecure_dh_memo`]). Clones share one memo.
#[derive(Clone, Default)]
pub struct DhMemo(Arc<Mutex<HashMap<DhPair, [u8; KEY_LEN]>>>);

/// (our public key, the peer's public key) of one agreement.
type DhPair = ([u8; KEY_LEN], [u8; KEY_LEN]);

impl DhMemo {
    /// The secret of our key (public half `own`) and `peer`: the one the
    /// peer worked out with its key and `own`, if it went first, since
    /// X25519(a, B) = X25519(b, A) when A and B are the public halves of a
    /// and b (`own` always is; `peer` is when the peer's entry exists, for
    /// that entry was made with it as the peer's own key). Otherwise it is
    /// worked out with `agree` and kept for the peer. An entry serves once:
    /// each agreement is made once at each end.
    fn agree(
        &self,
        own: &[u8; KEY_LEN],
        peer: &[u8; KEY_LEN],
        agree: impl FnOnce() -> [u8; KEY_LEN],
    ) -> [u8; KEY_LEN] {
        let Ok(mut memo) = self.0.lock() else {
            return agree();
        };
        if let Some(secret) = memo.remove(&(*peer, *own)) {
            return secret;
        }
        let secret = agree();
        memo.insert((*own, *peer), secret);
        secret
    }
}

impl std::fmt::Debug for DhMemo {
    /// Never prints a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map_or(0, |m| m.len());
        write!(f, "DhMemo({n} waiting)")
    }
}

impl PartialEq for DhMemo {
    /// The same memo, not equal contents.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// X25519 (RFC 7748) for snow, through aws-lc: the same results as snow's
/// own `Dh25519`, including the all-zero secret of a low-order peer key
/// (aws-lc refuses that one; snow's gives it and leaves the check to the
/// handshake), at a fraction of the instructions.
#[derive(Default)]
struct X25519 {
    private: [u8; KEY_LEN],
    public: [u8; KEY_LEN],
    /// The private key as aws-lc holds it; `None` only before `set`.
    key: Option<agreement::PrivateKey>,
    /// Secrets shared with the other end of a simulated flow.
    memo: Option<DhMemo>,
}

impl X25519 {
    /// Reads `private` into aws-lc, which works out the public key.
    fn derive(&mut self) {
        self.key = agreement::PrivateKey::from_private_key(&agreement::X25519, &self.private).ok();
        self.public = self
            .key
            .as_ref()
            .and_then(|k| k.compute_public_key().ok())
            .and_then(|p| p.as_ref().try_into().ok())
            .unwrap_or_default();
    }
}

impl Dh for X25519 {
    fn name(&self) -> &'static str {
        "25519"
    }

    fn pub_len(&self) -> usize {
        KEY_LEN
    }

    fn priv_len(&self) -> usize {
        KEY_LEN
    }

    fn set(&mut self, privkey: &[u8]) {
        self.private = [0; KEY_LEN];
        let n = privkey.len().min(KEY_LEN);
        self.private[..n].copy_from_slice(&privkey[..n]);
        self.derive();
    }

    fn generate(&mut self, rng: &mut dyn Random) -> Result<(), snow::Error> {
        let mut private = [0u8; KEY_LEN];
        rng.try_fill_bytes(&mut private)?;
        self.private = private;
        self.derive();
        Ok(())
    }

    fn pubkey(&self) -> &[u8] {
        &self.public
    }

    fn privkey(&self) -> &[u8] {
        &self.private
    }

    fn dh(&self, pubkey: &[u8], out: &mut [u8]) -> Result<(), snow::Error> {
        let (Some(key), Some(peer)) = (
            self.key.as_ref(),
            pubkey
                .get(..KEY_LEN)
                .and_then(|p| <&[u8; KEY_LEN]>::try_from(p).ok()),
        ) else {
            return Err(snow::Error::Dh);
        };
        // aws-lc fails only on an all-zero result (a low-order peer key),
        // which snow's own X25519 returns as it is.
        let agree = || {
            let peer = agreement::UnparsedPublicKey::new(&agreement::X25519, peer);
            agreement::agree(key, peer, (), |s| {
                <[u8; KEY_LEN]>::try_from(s).map_err(|_| ())
            })
            .unwrap_or([0; KEY_LEN])
        };
        let secret = match &self.memo {
            Some(memo) => memo.agree(&self.public, peer, agree),
            None => agree(),
        };
        let n = out.len().min(KEY_LEN);
        out[..n].copy_from_slice(&secret[..n]);
        Ok(())
    }
}

/// snow's primitives, with ephemeral keys drawn from a seeded stream.
pub(crate) struct SeededResolver {
    seed: [u8; 32],
    memo: Option<DhMemo>,
}

impl SeededResolver {
    pub(crate) fn new(seed: [u8; 32], memo: Option<DhMemo>) -> Self {
        SeededResolver { seed, memo }
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
        match choice {
            DHChoice::Curve25519 => Some(Box::new(X25519 {
                memo: self.memo.clone(),
                ..X25519::default()
            })),
            _ => DefaultResolver.resolve_dh(choice),
        }
    }
    fn resolve_hash(&self, choice: &HashChoice) -> Option<Box<dyn Hash>> {
        DefaultResolver.resolve_hash(choice)
    }
    fn resolve_cipher(&self, choice: &CipherChoice) -> Option<Box<dyn Cipher>> {
        DefaultResolver.resolve_cipher(choice)
    }
}

/// The AEAD that seals 1-RTT packets, agreed in the handshake
/// (docs/PROTOCOL.md §4): each side lists the ones it accepts in its
/// transport parameters and the server picks one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacketCipher {
    /// Fast where the CPU has AES and carry-less multiply instructions
    /// (AES-NI/PCLMULQDQ, ARMv8 crypto extensions).
    Aes256Gcm,
    /// Fast in software everywhere, constant-time without AES hardware; the
    /// cipher of peers that list none.
    ChaCha20Poly1305,
}

impl PacketCipher {
    /// Every cipher this implementation speaks.
    pub const ALL: [PacketCipher; 2] = [PacketCipher::Aes256Gcm, PacketCipher::ChaCha20Poly1305];

    /// The identifier in the transport parameter.
    pub fn id(self) -> u8 {
        match self {
            PacketCipher::ChaCha20Poly1305 => 1,
            PacketCipher::Aes256Gcm => 2,
        }
    }

    /// `None` for identifiers this implementation does not know.
    pub(crate) fn from_id(id: u8) -> Option<Self> {
        match id {
            1 => Some(PacketCipher::ChaCha20Poly1305),
            2 => Some(PacketCipher::Aes256Gcm),
            _ => None,
        }
    }

    /// The cipher's name for logs and qlog.
    pub fn name(self) -> &'static str {
        match self {
            PacketCipher::Aes256Gcm => "AES-256-GCM",
            PacketCipher::ChaCha20Poly1305 => "ChaCha20-Poly1305",
        }
    }

    /// This machine's preference: AES-256-GCM first where the CPU
    /// accelerates it, ChaCha20-Poly1305 first elsewhere.
    pub(crate) fn local_preference() -> Vec<PacketCipher> {
        if aes_hardware() {
            vec![PacketCipher::Aes256Gcm, PacketCipher::ChaCha20Poly1305]
        } else {
            vec![PacketCipher::ChaCha20Poly1305, PacketCipher::Aes256Gcm]
        }
    }

    /// How many 16-byte blocks one key may seal before an attacker's
    /// advantage against confidentiality passes 2^-59: `(blocks)^2 / 2^129`
    /// for AES-GCM (the CFRG AEAD-limits analysis behind RFC 9001 §6.6),
    /// so 2^35 blocks, 512 GiB. ChaCha20-Poly1305's limit lies beyond 2^62
    /// packets and needs no counting.
    pub(crate) fn confidentiality_limit_blocks(self) -> Option<u64> {
        match self {
            PacketCipher::Aes256Gcm => Some(1 << 35),
            PacketCipher::ChaCha20Poly1305 => None,
        }
    }

    fn algorithm(self) -> &'static aead::Algorithm {
        match self {
            PacketCipher::Aes256Gcm => &aead::AES_256_GCM,
            PacketCipher::ChaCha20Poly1305 => &aead::CHACHA20_POLY1305,
        }
    }
}

/// True when the CPU has instructions that make AES-GCM fast and
/// constant-time.
fn aes_hardware() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes")
            && std::arch::is_aarch64_feature_detected!("pmull")
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// Blocks a packet of `len_bytes` costs against a confidentiality limit:
/// its 16-byte blocks plus the counter and length blocks.
pub(crate) fn sealed_blocks(len_bytes: usize) -> u64 {
    len_bytes.div_ceil(16) as u64 + 2
}

/// One direction's 1-RTT packet protection.
pub(crate) struct PacketKey {
    cipher: PacketCipher,
    key: [u8; KEY_LEN],
    /// `None`: the simulator's null cipher (see
    /// `TransportConfig::insecure_null_cipher`): plaintext and a zero tag.
    aead: Option<aead::LessSafeKey>,
}

impl Clone for PacketKey {
    fn clone(&self) -> Self {
        let key = PacketKey::with_cipher(self.cipher, self.key);
        if self.aead.is_none() {
            key.into_null()
        } else {
            key
        }
    }
}

impl std::fmt::Debug for PacketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PacketKey({}, ..)", self.cipher.name())
    }
}

/// 32 zero bits, then the full 64-bit packet number in little endian.
fn nonce(pn: u64) -> aead::Nonce {
    let mut n = [0u8; aead::NONCE_LEN];
    n[4..].copy_from_slice(&pn.to_le_bytes());
    aead::Nonce::assume_unique_for_key(n)
}

impl PacketKey {
    #[cfg(test)]
    /// A ChaCha20-Poly1305 key (the cipher of peers that negotiate none).
    pub(crate) fn new(key: [u8; KEY_LEN]) -> Self {
        PacketKey::with_cipher(PacketCipher::ChaCha20Poly1305, key)
    }

    pub(crate) fn with_cipher(cipher: PacketCipher, key: [u8; KEY_LEN]) -> Self {
        let unbound = aead::UnboundKey::new(cipher.algorithm(), &key)
            .expect("both ciphers take 256-bit keys");
        PacketKey {
            cipher,
            key,
            aead: Some(aead::LessSafeKey::new(unbound)),
        }
    }

    /// The same key turned into the simulator's null cipher: sealing
    /// leaves the payload as it is and appends [`TAG_LEN`] zero bytes;
    /// opening accepts exactly that. Packet sizes do not change.
    pub(crate) fn into_null(mut self) -> Self {
        self.aead = None;
        self
    }

    pub(crate) fn cipher(&self) -> PacketCipher {
        self.cipher
    }

    /// Encrypts `buf[payload_start..]` in place and appends the tag; the
    /// header `buf[header_start..payload_start]` is the associated data.
    /// (Earlier bytes of `buf` may hold other packets of the datagram.)
    pub(crate) fn seal(
        &self,
        pn: u64,
        buf: &mut Vec<u8>,
        header_start: usize,
        payload_start: usize,
    ) {
        let Some(aead) = &self.aead else {
            buf.extend_from_slice(&[0; TAG_LEN]);
            return;
        };
        let (before, payload) = buf.split_at_mut(payload_start);
        let header = &before[header_start..];
        let tag = aead
            .seal_in_place_separate_tag(nonce(pn), aead::Aad::from(header), payload)
            .expect("both ciphers accept any payload under 256 GiB");
        buf.extend_from_slice(tag.as_ref());
    }

    #[cfg(test)]
    /// Authenticates `header` and `sealed` (ciphertext and tag) and returns
    /// the plaintext.
    pub(crate) fn open(
        &self,
        pn: u64,
        header: &[u8],
        sealed: &[u8],
    ) -> Result<Vec<u8>, CryptoError> {
        let mut body = sealed.to_vec();
        let n = self.open_in_place(pn, header, &mut body)?;
        body.truncate(n);
        Ok(body)
    }

    /// Like [`PacketKey::open`] without allocating: decrypts `sealed`
    /// (ciphertext and tag) in place and returns the plaintext length; the
    /// plaintext is `sealed[..len]`. On error `sealed` holds garbage.
    pub(crate) fn open_in_place(
        &self,
        pn: u64,
        header: &[u8],
        sealed: &mut [u8],
    ) -> Result<usize, CryptoError> {
        if sealed.len() < TAG_LEN {
            return Err(CryptoError::Truncated);
        }
        let Some(aead) = &self.aead else {
            let plain = sealed.len() - TAG_LEN;
            return if sealed[plain..] == [0; TAG_LEN] {
                Ok(plain)
            } else {
                Err(CryptoError::Unauthenticated)
            };
        };
        aead.open_in_place(nonce(pn), aead::Aad::from(header), sealed)
            .map(|plain| plain.len())
            .map_err(|_| CryptoError::Unauthenticated)
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
    fn x25519_through_aws_lc_gives_snows_keys_and_secrets() {
        // snow's own X25519 is the reference: public keys and shared
        // secrets for seeded keys, against random peer keys, keys with the
        // top bit set, values at and past the field's prime, and
        // low-order points (all-zero secret, no error).
        let reference = || DefaultResolver.resolve_dh(&DHChoice::Curve25519).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mut prime_plus = [0xffu8; KEY_LEN];
        prime_plus[0] = 0xee;
        prime_plus[31] = 0x7f;
        let mut one = [0u8; KEY_LEN];
        one[0] = 1;
        let mut peers = vec![[0u8; KEY_LEN], one, prime_plus, [0xff; KEY_LEN]];
        for _ in 0..24 {
            let mut p = [0u8; KEY_LEN];
            rng.fill_bytes(&mut p);
            peers.push(p);
        }
        for _ in 0..8 {
            let mut private = [0u8; KEY_LEN];
            rng.fill_bytes(&mut private);
            let (mut ours, mut theirs) = (X25519::default(), reference());
            ours.set(&private);
            theirs.set(&private);
            assert_eq!(ours.pubkey(), theirs.pubkey());
            assert_eq!(Keypair::from_private(private).public(), ours.public);
            for peer in &peers {
                let (mut a, mut b) = ([1u8; KEY_LEN], [2u8; KEY_LEN]);
                ours.dh(peer, &mut a).unwrap();
                theirs.dh(peer, &mut b).unwrap();
                assert_eq!(a, b, "peer key {peer:02x?}");
            }
            // A generated key draws the same bytes from the same stream.
            let (mut g1, mut g2) = (X25519::default(), reference());
            g1.generate(&mut SeededRandom(ChaCha20Rng::seed_from_u64(9)))
                .unwrap();
            g2.generate(&mut SeededRandom(ChaCha20Rng::seed_from_u64(9)))
                .unwrap();
            assert_eq!((g1.privkey(), g1.pubkey()), (g2.privkey(), g2.pubkey()));
        }
    }

    #[test]
    fn a_dh_memo_hands_each_secret_to_the_other_end_once() {
        // Two ends sharing a memo get the secrets each would compute alone
        // (snow's X25519 as the reference), whoever goes first; an entry
        // made with a key nobody holds serves no one else.
        let reference = |private: &[u8; KEY_LEN], peer: &[u8]| {
            let mut dh = DefaultResolver.resolve_dh(&DHChoice::Curve25519).unwrap();
            dh.set(private);
            let mut out = [0u8; KEY_LEN];
            dh.dh(peer, &mut out).unwrap();
            out
        };
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let mut private = || {
            let mut k = [0u8; KEY_LEN];
            rng.fill_bytes(&mut k);
            k
        };
        for round in 0..16 {
            let memo = DhMemo::default();
            let (ka, kb, kz, forged) = (private(), private(), private(), private());
            let end = |k: &[u8; KEY_LEN]| {
                let mut dh = X25519 {
                    memo: Some(memo.clone()),
                    ..X25519::default()
                };
                dh.set(k);
                dh
            };
            let (a, b, z) = (end(&ka), end(&kb), end(&kz));
            let (first, second) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
            let (kf, ks) = if round % 2 == 0 { (ka, kb) } else { (kb, ka) };
            let mut s1 = [0u8; KEY_LEN];
            first.dh(&second.public, &mut s1).unwrap();
            assert_eq!(s1, reference(&kf, &second.public));
            assert_eq!(format!("{memo:?}"), "DhMemo(1 waiting)");
            // Another key asking about the first end is not the peer.
            let mut sz = [0u8; KEY_LEN];
            z.dh(&first.public, &mut sz).unwrap();
            assert_eq!(sz, reference(&kz, &first.public));
            let mut s2 = [0u8; KEY_LEN];
            second.dh(&first.public, &mut s2).unwrap();
            assert_eq!(s2, reference(&ks, &first.public));
            assert_eq!(s1, s2);
            // z's entry waits for the first end; a key no end holds is
            // answered afresh and its entry never taken.
            let mut sf = [0u8; KEY_LEN];
            a.dh(&forged, &mut sf).unwrap();
            assert_eq!(sf, reference(&ka, &forged));
            assert_eq!(format!("{memo:?}"), "DhMemo(2 waiting)");
            let mut back = [0u8; KEY_LEN];
            first.dh(&z.public, &mut back).unwrap();
            assert_eq!(back, sz);
            assert_eq!(format!("{memo:?}"), "DhMemo(1 waiting)");
        }
    }

    #[test]
    fn seal_open_round_trip_and_tamper_detection() {
        for cipher in PacketCipher::ALL {
            let key = PacketKey::with_cipher(cipher, [7; 32]);
            let mut pkt = b"HDR".to_vec();
            pkt.extend_from_slice(b"secret payload");
            key.seal(42, &mut pkt, 0, 3);
            assert_eq!(pkt.len(), 3 + 14 + TAG_LEN);
            assert_ne!(&pkt[3..17], b"secret payload");
            assert_eq!(
                key.open(42, &pkt[..3], &pkt[3..]).unwrap(),
                b"secret payload"
            );
            let mut in_place = pkt[3..].to_vec();
            let n = key.open_in_place(42, &pkt[..3], &mut in_place).unwrap();
            assert_eq!(&in_place[..n], b"secret payload");
            // Wrong packet number, header bit flip, body bit flip, wrong
            // key, the other cipher with the same key.
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
                PacketKey::with_cipher(cipher, [8; 32])
                    .open(42, &pkt[..3], &pkt[3..])
                    .is_err()
            );
            let other = PacketCipher::ALL.into_iter().find(|&c| c != cipher);
            assert!(
                PacketKey::with_cipher(other.unwrap(), [7; 32])
                    .open(42, &pkt[..3], &pkt[3..])
                    .is_err()
            );
            assert_eq!(key.open(42, b"", &[0; 15]), Err(CryptoError::Truncated));
            assert_eq!(
                key.clone().open(42, &pkt[..3], &pkt[3..]).unwrap().len(),
                14
            );
        }
    }

    #[test]
    fn null_cipher_keeps_sizes_and_refuses_sealed_packets() {
        for cipher in PacketCipher::ALL {
            let real = PacketKey::with_cipher(cipher, [7; 32]);
            let null = real.clone().into_null();
            let mut pkt = b"HDR".to_vec();
            pkt.extend_from_slice(b"clear payload");
            let mut sealed = pkt.clone();
            null.seal(9, &mut pkt, 0, 3);
            real.seal(9, &mut sealed, 0, 3);
            // Same size as sealed, payload left as it was, a zero tag.
            assert_eq!(pkt.len(), sealed.len());
            assert_eq!(&pkt[3..16], b"clear payload");
            assert_eq!(pkt[16..], [0; TAG_LEN]);
            assert_eq!(
                null.clone().open(9, b"HDR", &pkt[3..]).unwrap(),
                b"clear payload"
            );
            // Neither kind of key takes the other's packets.
            assert_eq!(
                null.open(9, b"HDR", &sealed[3..]),
                Err(CryptoError::Unauthenticated)
            );
            assert!(real.open(9, b"HDR", &pkt[3..]).is_err());
            assert_eq!(null.open(9, b"", &[0; 15]), Err(CryptoError::Truncated));
        }
    }

    #[test]
    fn aes_256_gcm_matches_the_gcm_spec_test_case_14() {
        // McGrew & Viega, "The Galois/Counter Mode of Operation", test case
        // 14: K = 0^256, IV = 0^96 (packet number 0), P = 0^128, no AAD.
        let key = PacketKey::with_cipher(PacketCipher::Aes256Gcm, [0; 32]);
        let mut pkt = vec![0u8; 16];
        key.seal(0, &mut pkt, 0, 0);
        let hex: String = pkt.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919"
        );
    }

    #[test]
    fn chacha20_poly1305_packets_are_those_of_the_rustcrypto_implementation() {
        // The cipher of peers that negotiate none must stay byte-for-byte
        // what version 1 sent before ciphers were negotiable.
        use chacha20poly1305::aead::{AeadInPlace, KeyInit};
        let raw = [0x42u8; 32];
        let reference = chacha20poly1305::ChaCha20Poly1305::new(&raw.into());
        let key = PacketKey::new(raw);
        assert_eq!(key.cipher(), PacketCipher::ChaCha20Poly1305);
        for pn in [0u64, 1, 0x0123_4567_89ab_cdef] {
            let header = [0x40, 1, 2, 3, 4, 5, 6, 7, 8, pn as u8];
            let payload: Vec<u8> = (0..100u8).collect();
            let mut ours = header.to_vec();
            ours.extend_from_slice(&payload);
            key.seal(pn, &mut ours, 0, header.len());
            let mut nonce = [0u8; 12];
            nonce[4..].copy_from_slice(&pn.to_le_bytes());
            let mut theirs = payload.clone();
            let tag = reference
                .encrypt_in_place_detached(&nonce.into(), &header, &mut theirs)
                .unwrap();
            theirs.extend_from_slice(&tag);
            assert_eq!(&ours[header.len()..], &theirs[..], "pn {pn}");
        }
    }

    #[test]
    fn aes_gcm_limit_keeps_the_attack_advantage_under_2_to_minus_59() {
        // 16-byte blocks plus the counter and length blocks.
        assert_eq!(sealed_blocks(0), 2);
        assert_eq!(sealed_blocks(16), 3);
        assert_eq!(sealed_blocks(17), 4);
        let limit = PacketCipher::Aes256Gcm
            .confidentiality_limit_blocks()
            .unwrap();
        // (blocks)^2 / 2^129 <= 2^-59  <=>  blocks <= 2^35.
        assert_eq!(2 * limit.ilog2() as i32 - 129, -59);
        assert_eq!(
            PacketCipher::ChaCha20Poly1305.confidentiality_limit_blocks(),
            None
        );
    }

    #[test]
    fn cipher_ids_round_trip_and_preference_lists_both() {
        for c in PacketCipher::ALL {
            assert_eq!(PacketCipher::from_id(c.id()), Some(c));
        }
        assert_eq!(PacketCipher::from_id(0), None);
        assert_eq!(PacketCipher::from_id(3), None);
        let pref = PacketCipher::local_preference();
        assert_eq!(pref.len(), 2);
        assert!(PacketCipher::ALL.iter().all(|c| pref.contains(c)));
        assert_eq!(pref[0] == PacketCipher::Aes256Gcm, aes_hardware());
    }
}
