//! The Noise handshake (docs/PROTOCOL.md §3).
//!
//! Two patterns, both `25519_ChaChaPoly_BLAKE2s`:
//! - **IK** when the client knows the server's static key: two messages;
//!   the first is already encrypted to the server, so it carries early data,
//!   and the server is authenticated as soon as the client reads the second.
//! - **XX** otherwise: three messages; the client learns the server's key.
//!
//! The prologue binds the version, the pattern and both connection IDs of
//! the client's first packet, so tampering with any of them makes the
//! handshake fail. Each message's payload is a [`HandshakePayload`]:
//! transport parameters and, in IK's first message only, early stream data.

use crate::crypto::{DhMemo, KEY_LEN, Keypair, PacketCipher, PacketKey, SeededResolver};
use crate::packet::ConnectionId;
use crate::transport_params::TransportParams;
use crate::varint::{self, DecodeError, Reader};

const MAX_NOISE_MSG: usize = 65_535;
/// More than a Noise message adds to its payload with X25519 and a 16-byte
/// tag (an ephemeral key, a static key and its tag, the payload's tag: 96
/// bytes): a message's buffer is its payload plus this, not the largest
/// message (64 KiB zeroed on each side of each message).
const MAX_NOISE_OVERHEAD: usize = 256;

/// Which Noise pattern a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Client knows the server's static key: 1-RTT, early data possible.
    Ik,
    /// Mutual key exchange without prior knowledge: 1.5-RTT.
    Xx,
}

impl Pattern {
    fn noise_name(self) -> &'static str {
        match self {
            Pattern::Ik => "Noise_IK_25519_ChaChaPoly_BLAKE2s",
            Pattern::Xx => "Noise_XX_25519_ChaChaPoly_BLAKE2s",
        }
    }

    /// The byte that opens an Initial packet's payload.
    pub fn id(self) -> u8 {
        match self {
            Pattern::Ik => 1,
            Pattern::Xx => 2,
        }
    }

    /// The pattern a handshake message's first byte names, if any.
    pub fn from_id(b: u8) -> Option<Self> {
        match b {
            1 => Some(Pattern::Ik),
            2 => Some(Pattern::Xx),
            _ => None,
        }
    }

    /// Messages in the pattern.
    pub fn messages(self) -> usize {
        match self {
            Pattern::Ik => 2,
            Pattern::Xx => 3,
        }
    }

    /// The Noise name, `IK` or `XX`, for logs.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Ik => "IK",
            Pattern::Xx => "XX",
        }
    }
}

/// Why a handshake step failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// Noise could not be set up with our key, prologue or the server key
    /// we were given: a local configuration fault, nothing the peer sent.
    #[error("cannot set up the Noise handshake: {0}")]
    Setup(String),
    /// The peer's message did not decrypt. Noise authenticates every
    /// message against the prologue and the static keys, so this is a
    /// client that expected another server key (IK), or a version,
    /// pattern or connection ID altered between the two sides.
    #[error(
        "handshake message failed authentication: wrong server key, or the version or connection IDs were altered in transit"
    )]
    Decrypt,
    /// The peer's message is shorter than its pattern step needs, or one
    /// of its X25519 public keys is unusable (a low-order point).
    #[error(
        "malformed handshake message of {len_bytes} bytes: truncated, or an unusable X25519 public key"
    )]
    MalformedMessage {
        /// Length of the Noise message as received.
        len_bytes: usize,
    },
    /// A message was read or written out of the pattern's order (for
    /// example a second reply after the handshake finished).
    #[error("handshake message out of turn for the Noise pattern")]
    OutOfTurn,
    /// Any other failure inside Noise (when writing: a payload over
    /// 65,535 bytes, or no randomness); the text is Noise's own.
    #[error("Noise rejected the handshake step: {0}")]
    Noise(String),
    /// The decrypted payload does not parse as transport parameters plus
    /// optional early data (docs/PROTOCOL.md §3).
    #[error("malformed handshake payload (transport parameters or early data): {0}")]
    Payload(#[from] DecodeError),
    /// The client's transport parameters name another source connection
    /// ID than its Initial's header: the parameters were not written for
    /// this packet, so the server refuses them.
    #[error(
        "transport parameters give source connection ID {params:?}, but the Initial's header carries {header:?}"
    )]
    SourceCidMismatch {
        /// The source connection ID in the long header.
        header: ConnectionId,
        /// The `source_cid` transport parameter.
        params: ConnectionId,
    },
    /// The client offered no packet cipher the server accepts.
    #[error("no packet cipher both sides accept")]
    NoCommonCipher,
    /// The Noise state was gone before the handshake's last step; an
    /// internal fault, reported rather than panicking.
    #[error("handshake state missing before the handshake finished (internal fault)")]
    StateMissing,
}

impl HandshakeError {
    /// Sorts a Noise error on reading a `len_bytes` message from the peer.
    fn on_read(e: snow::Error, len_bytes: usize) -> Self {
        match e {
            snow::Error::Decrypt => HandshakeError::Decrypt,
            snow::Error::Input | snow::Error::Dh => HandshakeError::MalformedMessage { len_bytes },
            snow::Error::State(_) => HandshakeError::OutOfTurn,
            other => HandshakeError::Noise(other.to_string()),
        }
    }

    /// Sorts a Noise error on writing our own message.
    fn on_write(e: snow::Error) -> Self {
        match e {
            snow::Error::State(_) => HandshakeError::OutOfTurn,
            other => HandshakeError::Noise(other.to_string()),
        }
    }
}

fn setup(e: snow::Error) -> HandshakeError {
    HandshakeError::Setup(e.to_string())
}

/// The prologue both sides feed to Noise.
pub(crate) fn prologue(
    version: u32,
    pattern: Pattern,
    client_dcid: &ConnectionId,
    client_scid: &ConnectionId,
) -> Vec<u8> {
    let mut p = b"brisk".to_vec();
    p.extend_from_slice(&version.to_be_bytes());
    p.push(pattern.id());
    for c in [client_dcid, client_scid] {
        p.push(c.len() as u8);
        p.extend_from_slice(c.as_bytes());
    }
    p
}

/// One side's handshake state.
pub(crate) struct Handshake {
    state: snow::HandshakeState,
    pattern: Pattern,
}

impl std::fmt::Debug for Handshake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handshake")
            .field("pattern", &self.pattern)
            .finish()
    }
}

impl Handshake {
    /// The client side; `server_key` is required for IK. `memo` shares
    /// the X25519 secrets with a simulated peer
    /// ([`crate::TransportConfig::insecure_dh_memo`]).
    pub(crate) fn initiator(
        pattern: Pattern,
        local: &Keypair,
        server_key: Option<&[u8; KEY_LEN]>,
        prologue: &[u8],
        seed: [u8; 32],
        memo: Option<DhMemo>,
    ) -> Result<Self, HandshakeError> {
        let params = pattern.noise_name().parse().map_err(setup)?;
        let resolver = Box::new(SeededResolver::new(seed, memo));
        let mut b = snow::Builder::with_resolver(params, resolver)
            .local_private_key(local.private())
            .map_err(setup)?
            .prologue(prologue)
            .map_err(setup)?;
        if let Some(k) = server_key {
            b = b.remote_public_key(k).map_err(setup)?;
        }
        Ok(Handshake {
            state: b.build_initiator().map_err(setup)?,
            pattern,
        })
    }

    /// The server side; `memo` as for [`Handshake::initiator`].
    pub(crate) fn responder(
        pattern: Pattern,
        local: &Keypair,
        prologue: &[u8],
        seed: [u8; 32],
        memo: Option<DhMemo>,
    ) -> Result<Self, HandshakeError> {
        let params = pattern.noise_name().parse().map_err(setup)?;
        let resolver = Box::new(SeededResolver::new(seed, memo));
        let state = snow::Builder::with_resolver(params, resolver)
            .local_private_key(local.private())
            .map_err(setup)?
            .prologue(prologue)
            .map_err(setup)?
            .build_responder()
            .map_err(setup)?;
        Ok(Handshake { state, pattern })
    }

    pub(crate) fn pattern(&self) -> Pattern {
        self.pattern
    }

    /// Writes the next message carrying `payload`.
    pub(crate) fn write(&mut self, payload: &[u8]) -> Result<Vec<u8>, HandshakeError> {
        let mut out = vec![0u8; (payload.len() + MAX_NOISE_OVERHEAD).min(MAX_NOISE_MSG)];
        let n = self
            .state
            .write_message(payload, &mut out)
            .map_err(HandshakeError::on_write)?;
        out.truncate(n);
        Ok(out)
    }

    /// Reads the peer's next message and returns its payload. On error the
    /// state is unusable only if snow says so; a forged message is simply
    /// rejected.
    pub(crate) fn read(&mut self, msg: &[u8]) -> Result<Vec<u8>, HandshakeError> {
        // The payload is shorter than the message that carries it.
        let mut out = vec![0u8; msg.len().clamp(MAX_NOISE_OVERHEAD, MAX_NOISE_MSG)];
        let n = self
            .state
            .read_message(msg, &mut out)
            .map_err(|e| HandshakeError::on_read(e, msg.len()))?;
        out.truncate(n);
        Ok(out)
    }

    pub(crate) fn is_my_turn(&self) -> bool {
        self.state.is_my_turn()
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.state.is_handshake_finished()
    }

    /// The peer's static key, once the handshake revealed it.
    pub(crate) fn remote_static(&self) -> Option<[u8; KEY_LEN]> {
        self.state
            .get_remote_static()
            .and_then(|k| k.try_into().ok())
    }

    #[cfg(test)]
    /// The 1-RTT keys `(send, receive)` after the last message, for
    /// ChaCha20-Poly1305 (the cipher of peers that negotiate none).
    pub(crate) fn into_keys(self) -> (PacketKey, PacketKey) {
        self.into_packet_keys(PacketCipher::ChaCha20Poly1305)
    }

    /// The 1-RTT keys `(send, receive)` after the last message, for the
    /// negotiated `cipher`.
    pub(crate) fn into_packet_keys(mut self, cipher: PacketCipher) -> (PacketKey, PacketKey) {
        let (i2r, r2i) = self.state.dangerously_get_raw_split();
        let key = |k| PacketKey::with_cipher(cipher, k);
        if self.state.is_initiator() {
            (key(i2r), key(r2i))
        } else {
            (key(r2i), key(i2r))
        }
    }
}

/// What a handshake message carries: parameters, then (IK message 1 only)
/// early STREAM data as `stream id, length, bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HandshakePayload {
    pub params: TransportParams,
    pub early: Option<(u64, Vec<u8>)>,
}

impl HandshakePayload {
    pub(crate) fn emit(&self) -> Vec<u8> {
        let mut p = Vec::new();
        self.params.emit(&mut p);
        let mut out = Vec::with_capacity(p.len() + 8);
        varint::write(&mut out, p.len() as u64);
        out.extend_from_slice(&p);
        if let Some((id, data)) = &self.early {
            varint::write(&mut out, *id);
            varint::write(&mut out, data.len() as u64);
            out.extend_from_slice(data);
        }
        out
    }

    pub(crate) fn parse(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b);
        let len = r.varint_len()?;
        let params = TransportParams::parse(r.bytes(len)?)?;
        let early = if r.is_empty() {
            None
        } else {
            let id = r.varint()?;
            let len = r.varint_len()?;
            let data = r.bytes(len)?.to_vec();
            if !r.is_empty() {
                return Err(DecodeError::Malformed("trailing handshake payload"));
            }
            Some((id, data))
        };
        Ok(HandshakePayload { params, early })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn keys(seed: u64) -> Keypair {
        Keypair::generate(&mut ChaCha8Rng::seed_from_u64(seed))
    }

    fn cid(b: u8) -> ConnectionId {
        ConnectionId::new(&[b; 8]).unwrap()
    }

    /// A client (handshake seed 3) and a server (seed 4) of `pattern` over
    /// prologue `pro`; the client knows `server_key` (IK's).
    fn ends(
        pattern: Pattern,
        client: &Keypair,
        server_key: Option<&[u8; KEY_LEN]>,
        server: &Keypair,
        pro: &[u8],
        memo: Option<DhMemo>,
    ) -> (Handshake, Handshake) {
        let c = Handshake::initiator(pattern, client, server_key, pro, [3; 32], memo.clone());
        let s = Handshake::responder(pattern, server, pro, [4; 32], memo);
        (c.unwrap(), s.unwrap())
    }

    #[test]
    fn ik_completes_in_two_messages_with_encrypted_early_payload() {
        let (client, server) = (keys(1), keys(2));
        let pro = prologue(1, Pattern::Ik, &cid(1), &cid(2));
        let (mut c, mut s) = ends(
            Pattern::Ik,
            &client,
            Some(&server.public()),
            &server,
            &pro,
            None,
        );
        let m1 = c.write(b"GET /index").unwrap();
        assert!(
            !m1.windows(10).any(|w| w == b"GET /index"),
            "payload is encrypted"
        );
        assert_eq!(s.read(&m1).unwrap(), b"GET /index");
        assert_eq!(s.remote_static(), Some(client.public()));
        let m2 = s.write(b"ok").unwrap();
        assert!(s.is_finished());
        assert_eq!(c.read(&m2).unwrap(), b"ok");
        assert!(c.is_finished());
        let (c_tx, c_rx) = c.into_keys();
        let (s_tx, s_rx) = s.into_keys();
        let mut pkt = b"h".to_vec();
        pkt.extend_from_slice(b"data");
        c_tx.seal(0, &mut pkt, 0, 1);
        assert_eq!(s_rx.open(0, b"h", &pkt[1..]).unwrap(), b"data");
        let mut pkt = b"h".to_vec();
        pkt.extend_from_slice(b"back");
        s_tx.seal(0, &mut pkt, 0, 1);
        assert_eq!(c_rx.open(0, b"h", &pkt[1..]).unwrap(), b"back");
        assert!(
            c_rx.open(
                0,
                b"h",
                &{
                    let mut p = b"h".to_vec();
                    p.extend_from_slice(b"xxxx");
                    c_tx.seal(0, &mut p, 0, 1);
                    p
                }[1..]
            )
            .is_err(),
            "directions use different keys"
        );
    }

    #[test]
    fn message_buffers_fit_every_payload_up_to_the_largest_message() {
        // Each message's buffer is sized from its payload: payloads from
        // empty to 60,000 bytes go through on both patterns, and one as
        // long as the largest message fails, as it did with a buffer of
        // the largest message.
        for pattern in [Pattern::Ik, Pattern::Xx] {
            // IK's first message adds an ephemeral key, the client's static
            // key with its tag and the payload's tag; XX's first only the
            // ephemeral key.
            let first_overhead = match pattern {
                Pattern::Ik => 32 + 48 + 16,
                Pattern::Xx => 32,
            };
            for len in [0, 1, 1000, 60_000] {
                let (client, server) = (keys(1), keys(2));
                let pro = prologue(1, pattern, &cid(1), &cid(2));
                let known = (pattern == Pattern::Ik).then(|| server.public());
                let (mut c, mut s) = ends(pattern, &client, known.as_ref(), &server, &pro, None);
                let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
                let m1 = c.write(&payload).unwrap();
                assert_eq!(m1.len(), len + first_overhead, "{pattern:?} {len}");
                assert_eq!(s.read(&m1).unwrap(), payload, "{pattern:?} {len}");
                let m2 = s.write(b"ok").unwrap();
                assert_eq!(c.read(&m2).unwrap(), b"ok");
            }
            let (client, server) = (keys(1), keys(2));
            let pro = prologue(1, pattern, &cid(1), &cid(2));
            let known = (pattern == Pattern::Ik).then(|| server.public());
            let mut c = Handshake::initiator(pattern, &client, known.as_ref(), &pro, [3; 32], None)
                .unwrap();
            let too_long = vec![0u8; MAX_NOISE_MSG];
            assert!(c.write(&too_long).is_err(), "{pattern:?}");
        }
    }

    #[test]
    fn ik_with_wrong_server_key_fails_at_the_server() {
        let (client, server, impostor) = (keys(1), keys(2), keys(3));
        let pro = prologue(1, Pattern::Ik, &cid(1), &cid(2));
        let (mut c, mut s) = ends(
            Pattern::Ik,
            &client,
            Some(&impostor.public()),
            &server,
            &pro,
            None,
        );
        let m1 = c.write(b"").unwrap();
        assert_eq!(s.read(&m1), Err(HandshakeError::Decrypt));
    }

    #[test]
    fn read_errors_say_what_failed() {
        let (client, server) = (keys(1), keys(2));
        let pro = prologue(1, Pattern::Ik, &cid(1), &cid(2));
        let (mut c, mut s) = ends(
            Pattern::Ik,
            &client,
            Some(&server.public()),
            &server,
            &pro,
            None,
        );
        let m1 = c.write(b"").unwrap();
        // Cut inside the client's encrypted static key.
        assert_eq!(
            s.read(&m1[..40]),
            Err(HandshakeError::MalformedMessage { len_bytes: 40 })
        );
        // The client's next step is to read, not to write.
        assert_eq!(c.write(b""), Err(HandshakeError::OutOfTurn));
        let msg = HandshakeError::MalformedMessage { len_bytes: 40 }.to_string();
        assert!(msg.contains("40 bytes"), "{msg}");
    }

    #[test]
    fn xx_completes_in_three_messages_and_prologue_binds_ids() {
        let (client, server) = (keys(1), keys(2));
        let pro = prologue(1, Pattern::Xx, &cid(1), &cid(2));
        let (mut c, mut s) = ends(Pattern::Xx, &client, None, &server, &pro, None);
        let m1 = c.write(b"").unwrap();
        s.read(&m1).unwrap();
        let m2 = s.write(b"params").unwrap();
        assert_eq!(c.read(&m2).unwrap(), b"params");
        assert_eq!(c.remote_static(), Some(server.public()));
        let m3 = c.write(b"").unwrap();
        assert!(c.is_finished());
        s.read(&m3).unwrap();
        assert!(s.is_finished());
        assert_eq!(s.remote_static(), Some(client.public()));

        // A server that saw different connection IDs cannot complete.
        let other = prologue(1, Pattern::Xx, &cid(9), &cid(2));
        let mut c = Handshake::initiator(Pattern::Xx, &client, None, &pro, [3; 32], None).unwrap();
        let mut s = Handshake::responder(Pattern::Xx, &server, &other, [4; 32], None).unwrap();
        s.read(&c.write(b"").unwrap()).unwrap();
        assert_eq!(c.read(&s.write(b"").unwrap()), Err(HandshakeError::Decrypt));
    }

    #[test]
    fn ends_sharing_a_dh_memo_send_the_same_bytes_and_keys() {
        // Every message and the packet keys are those of ends that work
        // every secret out themselves, and no secret is left behind.
        for pattern in [Pattern::Ik, Pattern::Xx] {
            let run = |memo: Option<DhMemo>| {
                let (client, server) = (keys(1), keys(2));
                let pro = prologue(1, pattern, &cid(1), &cid(2));
                let known = (pattern == Pattern::Ik).then(|| server.public());
                let (mut c, mut s) = ends(pattern, &client, known.as_ref(), &server, &pro, memo);
                let mut wire = Vec::new();
                let (mut from, mut to) = (&mut c, &mut s);
                while !(from.is_finished() && to.is_finished()) {
                    let m = from.write(b"payload").unwrap();
                    assert_eq!(to.read(&m).unwrap(), b"payload");
                    wire.push(m);
                    std::mem::swap(&mut from, &mut to);
                }
                let ((c_tx, _), (s_tx, _)) = (c.into_keys(), s.into_keys());
                for key in [c_tx, s_tx] {
                    let mut pkt = b"h".to_vec();
                    pkt.extend_from_slice(b"data");
                    key.seal(7, &mut pkt, 0, 1);
                    wire.push(pkt);
                }
                wire
            };
            let memo = DhMemo::default();
            assert_eq!(run(Some(memo.clone())), run(None), "{pattern:?}");
            assert_eq!(format!("{memo:?}"), "DhMemo(0 waiting)");
        }
    }

    #[test]
    fn payload_round_trip_and_garbage() {
        let p = HandshakePayload {
            params: TransportParams {
                source_cid: cid(5),
                ..TransportParams::default()
            },
            early: Some((0, b"hello".to_vec())),
        };
        assert_eq!(HandshakePayload::parse(&p.emit()).unwrap(), p);
        let bare = HandshakePayload {
            early: None,
            ..p.clone()
        };
        assert_eq!(HandshakePayload::parse(&bare.emit()).unwrap(), bare);
        let mut long = p.emit();
        long.push(0);
        assert!(HandshakePayload::parse(&long).is_err());
        assert!(HandshakePayload::parse(&[0x30]).is_err());
    }
}
