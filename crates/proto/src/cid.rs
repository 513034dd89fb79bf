//! Connection IDs beyond the handshake's (docs/PROTOCOL.md §7.4): the ones
//! we issue to the peer and the ones it issued to us.
//!
//! A client that moves to a new network must not be recognisable there by
//! the ID it used before, so each side hands the other spare IDs
//! (NEW_CONNECTION_ID) and a side that changes path switches to one it
//! never used, retiring the old one (RETIRE_CONNECTION_ID).
//!
//! Issued IDs must reach the right connection at the endpoint, including
//! one that the caller detached and drives itself, without the endpoint
//! being told about every ID. So an issued ID is the encryption of the
//! connection's 32-bit routing number and the ID's 32-bit sequence number
//! under a key only the endpoint knows ([`CidCodec`], a four-round Feistel
//! network keyed with HMAC-SHA256): the endpoint decrypts an unknown ID to
//! find the connection, and to anyone without the key the IDs of one
//! connection look unrelated.

use crate::frame::NewConnectionIdFrame;
use crate::packet::{ConnectionId, LOCAL_CID_LEN};
use crate::stateless_reset::{RESET_TOKEN_LEN, ResetKey};
use aws_lc_rs::hmac;
use rand::RngCore;
use std::collections::{BTreeMap, VecDeque};

/// How many of the peer's IDs we keep at once (announced as
/// `active_connection_id_limit`): the one in use and spares for three
/// moves before the peer's next NEW_CONNECTION_ID arrives.
pub(crate) const ACTIVE_CID_LIMIT: u64 = 4;

/// The endpoint's keyed, invertible map between (routing number, sequence
/// number) and 8-byte connection IDs.
#[derive(Clone)]
pub(crate) struct CidCodec(hmac::Key);

impl std::fmt::Debug for CidCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CidCodec(..)")
    }
}

/// Feistel rounds: four make a pseudorandom permutation (Luby-Rackoff).
const ROUNDS: u8 = 4;

impl CidCodec {
    pub(crate) fn new(secret: &[u8; 32]) -> Self {
        CidCodec(hmac::Key::new(hmac::HMAC_SHA256, secret))
    }

    fn round(&self, i: u8, x: u32) -> u32 {
        let mut msg = [0u8; 5];
        msg[0] = i;
        msg[1..].copy_from_slice(&x.to_be_bytes());
        let tag = hmac::sign(&self.0, &msg);
        let mut w = [0u8; 4];
        w.copy_from_slice(&tag.as_ref()[..4]);
        u32::from_be_bytes(w)
    }

    /// The seed of connection `route`'s path challenges: unpredictable
    /// without the key, and the same in every run with the endpoint's seed.
    pub(crate) fn seed_for(&self, route: u32) -> [u8; 32] {
        let mut msg = *b"path challenge seed \0\0\0\0";
        msg[20..].copy_from_slice(&route.to_be_bytes());
        let tag = hmac::sign(&self.0, &msg);
        let mut seed = [0u8; 32];
        seed.copy_from_slice(&tag.as_ref()[..32]);
        seed
    }

    /// The ID of `route`'s connection with sequence number `seq`.
    pub(crate) fn encode(&self, route: u32, seq: u32) -> ConnectionId {
        let (mut l, mut r) = (route, seq);
        for i in 0..ROUNDS {
            let next = l ^ self.round(i, r);
            l = r;
            r = next;
        }
        let mut b = [0u8; LOCAL_CID_LEN];
        b[..4].copy_from_slice(&l.to_be_bytes());
        b[4..].copy_from_slice(&r.to_be_bytes());
        ConnectionId::new(&b).unwrap_or_default()
    }

    /// The routing and sequence number an ID of ours stands for; `None`
    /// when it is not 8 bytes long. Any 8 bytes decode to something: the
    /// caller checks the connection knows the sequence number.
    pub(crate) fn decode(&self, id: &[u8]) -> Option<(u32, u32)> {
        let b: [u8; LOCAL_CID_LEN] = id.try_into().ok()?;
        let mut l = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let mut r = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        for i in (0..ROUNDS).rev() {
            let prev = r ^ self.round(i, l);
            r = l;
            l = prev;
        }
        Some((l, r))
    }
}

/// What a connection needs to issue IDs the endpoint routes back to it.
#[derive(Debug, Clone)]
pub(crate) struct CidIssuer {
    pub codec: CidCodec,
    pub route: u32,
    /// Server: reset tokens for its IDs come from its static key (§7.5),
    /// so a restarted server still knows them.
    pub reset_key: Option<ResetKey>,
}

/// The IDs we issued that the peer may address us by.
#[derive(Debug, Default)]
pub(crate) struct LocalCids {
    issuer: Option<CidIssuer>,
    /// Sequence number and ID; 0 is the handshake's.
    active: Vec<(u64, ConnectionId)>,
    next_seq: u64,
    /// How many of our IDs the peer keeps (its `active_connection_id_limit`);
    /// 0 until it announced one, and then we issue none.
    peer_limit: u64,
    /// NEW_CONNECTION_ID frames to send (again), by sequence number.
    to_send: VecDeque<u64>,
    tokens: BTreeMap<u64, [u8; RESET_TOKEN_LEN]>,
}

impl LocalCids {
    pub(crate) fn new(handshake_cid: ConnectionId) -> Self {
        LocalCids {
            active: vec![(0, handshake_cid)],
            next_seq: 1,
            ..Self::default()
        }
    }

    pub(crate) fn set_issuer(&mut self, issuer: CidIssuer) {
        self.issuer = Some(issuer);
    }

    /// The peer announced how many IDs it keeps. None is issued yet: the
    /// connection asks for them one at a time ([`LocalCids::issue_one`])
    /// once it is past its first round trips.
    pub(crate) fn set_peer_limit(&mut self, limit: u64) {
        self.peer_limit = limit.min(ACTIVE_CID_LIMIT);
    }

    /// Whether the peer keeps fewer of our IDs than it may.
    pub(crate) fn wants_more(&self) -> bool {
        self.issuer.is_some() && (self.active.len() as u64) < self.peer_limit
    }

    /// Whether a packet addressed to `dcid` is for us.
    pub(crate) fn contains(&self, dcid: &[u8]) -> bool {
        self.active.iter().any(|(_, c)| c.as_bytes() == dcid)
    }

    /// Issues one more ID (and its reset token) and queues its
    /// NEW_CONNECTION_ID, when the peer keeps fewer than it may. IDs are
    /// made only when about to be sent, so a handshake that never
    /// completes costs no key operations for them.
    pub(crate) fn issue_one(&mut self, rng: &mut impl RngCore) {
        if !self.wants_more() {
            return;
        }
        let Some(issuer) = self.issuer.as_ref() else {
            return;
        };
        let Ok(seq32) = u32::try_from(self.next_seq) else {
            return;
        };
        let id = issuer.codec.encode(issuer.route, seq32);
        let token = match issuer.reset_key.as_ref() {
            Some(k) => k.token(&id),
            None => {
                let mut t = [0u8; RESET_TOKEN_LEN];
                rng.fill_bytes(&mut t);
                t
            }
        };
        self.active.push((self.next_seq, id));
        self.tokens.insert(self.next_seq, token);
        self.to_send.push_back(self.next_seq);
        self.next_seq += 1;
    }

    /// The peer stopped using our ID `seq`: forget it (the connection
    /// issues another with its next packets). Retiring one we never
    /// issued is a protocol violation.
    pub(crate) fn on_retire(&mut self, seq: u64) -> Result<(), &'static str> {
        if seq >= self.next_seq {
            return Err("RETIRE_CONNECTION_ID for an ID never issued");
        }
        self.active.retain(|(s, _)| *s != seq);
        self.tokens.remove(&seq);
        self.to_send.retain(|s| *s != seq);
        Ok(())
    }

    pub(crate) fn has_frames(&self) -> bool {
        !self.to_send.is_empty()
    }

    /// Our IDs the peer holds beside the one it uses: those sent and
    /// neither retired nor waiting to be sent again.
    pub(crate) fn peer_spares(&self) -> usize {
        self.active
            .iter()
            .filter(|(s, _)| !self.to_send.contains(s))
            .count()
            .saturating_sub(1)
    }

    /// The next NEW_CONNECTION_ID to send.
    pub(crate) fn poll_frame(&mut self) -> Option<NewConnectionIdFrame> {
        while let Some(seq) = self.to_send.pop_front() {
            let Some(&(_, id)) = self.active.iter().find(|(s, _)| *s == seq) else {
                continue;
            };
            let Some(&reset_token) = self.tokens.get(&seq) else {
                continue;
            };
            return Some(NewConnectionIdFrame {
                sequence: seq,
                retire_prior_to: 0,
                id,
                reset_token,
            });
        }
        None
    }

    /// A packet with NEW_CONNECTION_ID `seq` was lost: send it again if
    /// the ID is still ours.
    pub(crate) fn on_lost(&mut self, seq: u64) {
        if self.active.iter().any(|(s, _)| *s == seq) && !self.to_send.contains(&seq) {
            self.to_send.push_back(seq);
        }
    }
}

/// Why the peer's NEW_CONNECTION_ID frames broke the rules; each closes
/// the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RemoteCidError {
    /// More IDs than we announced we keep (CONNECTION_ID_LIMIT_ERROR).
    TooMany,
    /// The same sequence number for another ID (PROTOCOL_VIOLATION).
    Changed,
}

/// The peer's IDs: the one we address it by and spares for the next moves.
#[derive(Debug)]
pub(crate) struct RemoteCids {
    current: (u64, ConnectionId),
    spare: BTreeMap<u64, ConnectionId>,
    /// Every ID below this sequence number is retired.
    retired_below: u64,
    /// RETIRE_CONNECTION_ID frames to send (again).
    to_retire: VecDeque<u64>,
}

impl RemoteCids {
    pub(crate) fn new(handshake_cid: ConnectionId) -> Self {
        RemoteCids {
            current: (0, handshake_cid),
            spare: BTreeMap::new(),
            retired_below: 0,
            to_retire: VecDeque::new(),
        }
    }

    /// The handshake told us the peer's real first ID (it replaces the
    /// client's random first destination).
    pub(crate) fn set_handshake_cid(&mut self, cid: ConnectionId) {
        if self.current.0 == 0 {
            self.current.1 = cid;
        }
    }

    pub(crate) fn current(&self) -> ConnectionId {
        self.current.1
    }

    /// Spare IDs we may move to.
    pub(crate) fn spares(&self) -> usize {
        self.spare.len()
    }

    /// Takes in a NEW_CONNECTION_ID; returns true when it moved us to
    /// another ID (the peer retired the one we used).
    pub(crate) fn on_new(&mut self, f: &NewConnectionIdFrame) -> Result<bool, RemoteCidError> {
        let known = if f.sequence == self.current.0 {
            Some(self.current.1)
        } else {
            self.spare.get(&f.sequence).copied()
        };
        if let Some(id) = known {
            return if id == f.id {
                Ok(false)
            } else {
                Err(RemoteCidError::Changed)
            };
        }
        if f.sequence < self.retired_below {
            // Already retired by a later frame: retire this one too.
            self.queue_retire(f.sequence);
        } else {
            self.spare.insert(f.sequence, f.id);
        }
        let mut moved = false;
        if f.retire_prior_to > self.retired_below {
            self.retired_below = f.retire_prior_to;
            let gone: Vec<u64> = self
                .spare
                .range(..f.retire_prior_to)
                .map(|(s, _)| *s)
                .collect();
            for s in gone {
                self.spare.remove(&s);
                self.queue_retire(s);
            }
            if self.current.0 < f.retire_prior_to {
                moved = self.rotate();
            }
        }
        if 1 + self.spare.len() as u64 > ACTIVE_CID_LIMIT {
            return Err(RemoteCidError::TooMany);
        }
        Ok(moved)
    }

    /// Moves to the lowest spare ID and retires the one in use; false
    /// (and no change) when there is no spare.
    pub(crate) fn rotate(&mut self) -> bool {
        let Some((seq, id)) = self.spare.pop_first() else {
            return false;
        };
        let old = std::mem::replace(&mut self.current, (seq, id));
        self.queue_retire(old.0);
        true
    }

    fn queue_retire(&mut self, seq: u64) {
        if !self.to_retire.contains(&seq) {
            self.to_retire.push_back(seq);
        }
    }

    pub(crate) fn has_frames(&self) -> bool {
        !self.to_retire.is_empty()
    }

    /// The next RETIRE_CONNECTION_ID to send.
    pub(crate) fn poll_retire(&mut self) -> Option<u64> {
        self.to_retire.pop_front()
    }

    /// A packet with RETIRE_CONNECTION_ID `seq` was lost: send it again.
    pub(crate) fn on_retire_lost(&mut self, seq: u64) {
        self.queue_retire(seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn codec_round_trips_and_ids_look_unrelated() {
        let codec = CidCodec::new(&[7; 32]);
        let a = codec.encode(42, 1);
        let b = codec.encode(42, 2);
        assert_eq!(codec.decode(a.as_bytes()), Some((42, 1)));
        assert_eq!(codec.decode(b.as_bytes()), Some((42, 2)));
        // Consecutive IDs of one connection share no byte position more
        // than chance would (8 positions, 1/256 each).
        let same = a
            .as_bytes()
            .iter()
            .zip(b.as_bytes())
            .filter(|(x, y)| x == y)
            .count();
        assert!(same <= 2, "{a:?} {b:?}");
        assert_ne!(CidCodec::new(&[8; 32]).encode(42, 1), a, "keyed");
        assert_eq!(codec.decode(&[1, 2, 3]), None);
    }

    fn issuer() -> CidIssuer {
        CidIssuer {
            codec: CidCodec::new(&[1; 32]),
            route: 9,
            reset_key: None,
        }
    }

    #[test]
    fn local_ids_are_issued_up_to_the_limit_and_replaced_when_retired() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let hs = ConnectionId::new(&[5; 8]).unwrap();
        let mut l = LocalCids::new(hs);
        l.set_peer_limit(3);
        l.issue_one(&mut rng);
        assert!(!l.has_frames(), "no issuer, nothing issued");
        l.set_issuer(issuer());
        assert!(!l.has_frames(), "nothing issued before it is asked for");
        for _ in 0..3 {
            l.issue_one(&mut rng);
        }
        assert!(!l.wants_more());
        assert_eq!(l.peer_spares(), 0, "issued, not yet sent");
        let f1 = l.poll_frame().unwrap();
        let f2 = l.poll_frame().unwrap();
        assert_eq!((f1.sequence, f2.sequence), (1, 2));
        assert!(l.poll_frame().is_none(), "two spares beside the one in use");
        assert_eq!(l.peer_spares(), 2);
        assert!(l.contains(f1.id.as_bytes()) && l.contains(hs.as_bytes()));
        l.on_lost(2);
        assert_eq!(l.peer_spares(), 1, "a lost one is not held");
        assert_eq!(l.poll_frame().unwrap().sequence, 2);
        l.on_retire(0).unwrap();
        assert_eq!(l.peer_spares(), 1, "one in use, one spare");
        assert!(!l.contains(hs.as_bytes()));
        assert!(l.wants_more());
        l.issue_one(&mut rng);
        assert_eq!(l.poll_frame().unwrap().sequence, 3);
        assert!(l.on_retire(9).is_err());
    }

    fn new_id(seq: u64, retire_prior_to: u64) -> NewConnectionIdFrame {
        NewConnectionIdFrame {
            sequence: seq,
            retire_prior_to,
            id: ConnectionId::new(&[seq as u8; 8]).unwrap(),
            reset_token: [0; RESET_TOKEN_LEN],
        }
    }

    #[test]
    fn remote_ids_rotate_retire_and_hold_the_limit() {
        let mut r = RemoteCids::new(ConnectionId::new(&[0; 8]).unwrap());
        assert!(!r.rotate(), "no spare yet");
        for s in 1..4 {
            assert_eq!(r.on_new(&new_id(s, 0)), Ok(false));
        }
        assert_eq!(r.on_new(&new_id(2, 0)), Ok(false), "a repeat is fine");
        assert_eq!(r.spares(), 3);
        assert_eq!(r.on_new(&new_id(4, 0)), Err(RemoteCidError::TooMany));
        let mut changed = new_id(3, 0);
        changed.id = ConnectionId::new(&[99; 8]).unwrap();
        assert_eq!(r.on_new(&changed), Err(RemoteCidError::Changed));

        let mut r = RemoteCids::new(ConnectionId::new(&[0; 8]).unwrap());
        r.on_new(&new_id(1, 0)).unwrap();
        assert!(r.rotate());
        assert_eq!(r.current(), new_id(1, 0).id);
        assert_eq!(r.poll_retire(), Some(0));
        // The peer retires everything below 3: we move to 3 and retire 1 and 2.
        r.on_new(&new_id(2, 0)).unwrap();
        assert_eq!(r.on_new(&new_id(3, 3)), Ok(true));
        assert_eq!(r.current(), new_id(3, 3).id);
        let mut retired: Vec<u64> = std::iter::from_fn(|| r.poll_retire()).collect();
        retired.sort();
        assert_eq!(retired, vec![1, 2]);
        r.on_retire_lost(2);
        assert_eq!(r.poll_retire(), Some(2));
    }
}
