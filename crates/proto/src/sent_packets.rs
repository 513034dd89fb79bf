//! The sender's record of 1-RTT packets not yet acknowledged or declared
//! lost: what each carried (so its content can be handed back for
//! retransmission in a new packet), when it left and with which codepoint.
//! Kept in a ring indexed by packet number (numbers only grow), so sending,
//! acknowledging and looking up a packet cost an index, not a tree walk.

use crate::streams::{ControlFrame, StreamId};
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::collections::VecDeque;
use std::ops::RangeInclusive;

/// A retransmittable piece of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SentFrame {
    Stream {
        id: StreamId,
        offset: u64,
        len: u64,
        fin: bool,
    },
    Control(ControlFrame),
    HandshakeDone,
    /// An ACK_FREQUENCY frame, by sequence number.
    AckFrequency(u64),
    /// One of our connection IDs offered to the peer, by sequence number.
    NewConnectionId(u64),
    /// One of the peer's connection IDs we retired, by sequence number.
    RetireConnectionId(u64),
}

/// The retransmittable frames of one packet. Nearly every packet carries
/// one (a STREAM frame of bulk data, or one control frame), which is kept
/// inline, so recording a packet allocates nothing; more spill to a `Vec`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SentFrames {
    first: Option<SentFrame>,
    more: Vec<SentFrame>,
}

impl SentFrames {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn push(&mut self, f: SentFrame) {
        if self.first.is_none() {
            self.first = Some(f);
        } else {
            self.more.push(f);
        }
    }

    /// The frames in the order they were pushed.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &SentFrame> + '_ {
        self.first.iter().chain(&self.more)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.more.len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none()
    }
}

impl<'a> IntoIterator for &'a SentFrames {
    type Item = &'a SentFrame;
    type IntoIter =
        std::iter::Chain<std::option::Iter<'a, SentFrame>, std::slice::Iter<'a, SentFrame>>;

    fn into_iter(self) -> Self::IntoIter {
        self.first.iter().chain(&self.more)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SentPacket {
    pub time_sent: Instant,
    pub size_bytes: u64,
    /// Carries a frame other than ACK, PADDING or CONNECTION_CLOSE; only
    /// these count towards bytes in flight.
    pub ack_eliciting: bool,
    pub ecn: Ecn,
    /// The sender had nothing more to send when this packet left.
    pub app_limited: bool,
    /// The largest packet number of the ACK frame this packet carried.
    pub largest_acked: Option<u64>,
    pub frames: SentFrames,
    /// A probe already handed the frames back for retransmission.
    pub requeued: bool,
}

/// Slots the ring keeps however few packets are in flight.
const KEPT_SLOTS: usize = 64;

/// Packets in flight, in a ring indexed by packet number: packet numbers
/// only grow, so a new packet goes at the back, acknowledgements mostly
/// take from the front, and every lookup is an index, not a tree walk.
#[derive(Debug, Clone, Default)]
pub(crate) struct SentPackets {
    /// Slot `i` holds packet `base + i`, or `None` once it left the set.
    /// The front slot is always occupied (or the ring is empty).
    slots: VecDeque<Option<SentPacket>>,
    base: u64,
    len: usize,
    bytes_in_flight: u64,
    eliciting_in_flight: u64,
}

impl SentPackets {
    /// Records packet `pn`. Packet numbers are expected to grow; an older
    /// number that is not tracked any more is ignored.
    pub(crate) fn insert(&mut self, pn: u64, p: SentPacket) {
        if self.slots.is_empty() {
            self.base = pn;
        }
        let Some(i) = pn
            .checked_sub(self.base)
            .and_then(|i| usize::try_from(i).ok())
        else {
            return;
        };
        while self.slots.len() <= i {
            self.slots.push_back(None);
        }
        if p.ack_eliciting {
            self.bytes_in_flight += p.size_bytes;
            self.eliciting_in_flight += 1;
        }
        if let Some(old) = self.slots[i].replace(p) {
            self.account_removed(&old);
        } else {
            self.len += 1;
        }
    }

    fn account_removed(&mut self, p: &SentPacket) {
        if p.ack_eliciting {
            self.bytes_in_flight -= p.size_bytes;
            self.eliciting_in_flight -= 1;
        }
    }

    fn index(&self, pn: u64) -> Option<usize> {
        let i = usize::try_from(pn.checked_sub(self.base)?).ok()?;
        (i < self.slots.len()).then_some(i)
    }

    /// Drops empty slots at the front so the front is a live packet, and
    /// gives back the ring's room once three quarters of it are unused:
    /// the ring grows to the most packets ever in flight, and a flight
    /// that was large for a while (a queue that built, a burst of loss)
    /// should not pin that room for the rest of the connection.
    fn trim_front(&mut self) {
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base += 1;
        }
        let room = self.slots.capacity();
        if room > KEPT_SLOTS && self.slots.len() < room / 4 {
            self.slots.shrink_to((2 * self.slots.len()).max(KEPT_SLOTS));
        }
    }

    pub(crate) fn remove(&mut self, pn: u64) -> Option<SentPacket> {
        let i = self.index(pn)?;
        let p = self.slots[i].take()?;
        self.len -= 1;
        self.account_removed(&p);
        if i == 0 {
            self.trim_front();
        }
        Some(p)
    }

    #[cfg(test)]
    /// Removes and returns every packet numbered within `range`, ascending.
    pub(crate) fn remove_range(&mut self, range: RangeInclusive<u64>) -> Vec<(u64, SentPacket)> {
        let mut out = Vec::new();
        self.remove_range_into(range, &mut out);
        out
    }

    /// Like [`SentPackets::remove_range`], appending to `out`.
    pub(crate) fn remove_range_into(
        &mut self,
        range: RangeInclusive<u64>,
        out: &mut Vec<(u64, SentPacket)>,
    ) {
        let end = self.base.saturating_add(self.slots.len() as u64);
        let lo = (*range.start()).max(self.base);
        let hi = range.end().saturating_add(1).min(end);
        for pn in lo..hi {
            let i = (pn - self.base) as usize;
            if let Some(p) = self.slots[i].take() {
                self.len -= 1;
                self.account_removed(&p);
                out.push((pn, p));
            }
        }
        self.trim_front();
    }

    /// Packet `pn` stops counting in flight: it left by a path the
    /// connection moved away from, and its frames were queued again. It
    /// stays tracked, so an ACK that still covers it (the peer got it
    /// before the path died) acknowledges those frames and spares their
    /// second copy.
    pub(crate) fn leave_flight(&mut self, pn: u64) {
        let Some(i) = self.index(pn) else {
            return;
        };
        if let Some(p) = self.slots[i].as_mut()
            && p.ack_eliciting
        {
            p.ack_eliciting = false;
            self.bytes_in_flight -= p.size_bytes;
            self.eliciting_in_flight -= 1;
        }
    }

    pub(crate) fn get(&self, pn: u64) -> Option<&SentPacket> {
        let i = self.index(pn)?;
        self.slots[i].as_ref()
    }

    pub(crate) fn get_mut(&mut self, pn: u64) -> Option<&mut SentPacket> {
        let i = self.index(pn)?;
        self.slots[i].as_mut()
    }

    /// Packets still tracked, ascending by number.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &SentPacket)> {
        let base = self.base;
        self.slots
            .iter()
            .enumerate()
            .filter_map(move |(i, p)| Some((base + i as u64, p.as_ref()?)))
    }

    pub(crate) fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    pub(crate) fn has_eliciting_in_flight(&self) -> bool {
        self.eliciting_in_flight > 0
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(size: u64, eliciting: bool) -> SentPacket {
        SentPacket {
            time_sent: Instant::ZERO,
            size_bytes: size,
            ack_eliciting: eliciting,
            ecn: Ecn::NotEct,
            app_limited: false,
            largest_acked: None,
            frames: SentFrames::new(),
            requeued: false,
        }
    }

    #[test]
    fn sent_frames_keep_their_order() {
        let mut f = SentFrames::new();
        assert!(f.is_empty() && f.iter().next().is_none());
        let frames = [
            SentFrame::HandshakeDone,
            SentFrame::Stream {
                id: StreamId(4),
                offset: 10,
                len: 5,
                fin: true,
            },
            SentFrame::Control(ControlFrame::MaxData(7)),
        ];
        for x in frames {
            f.push(x);
        }
        assert_eq!(f.len(), 3);
        assert!(f.iter().copied().eq(frames));
        assert!((&f).into_iter().copied().eq(frames));
    }

    #[test]
    fn the_ring_gives_back_its_room_once_the_flight_is_small_again() {
        let mut ring = SentPackets::default();
        for pn in 0..4_000 {
            ring.insert(pn, pkt(1_200, true));
        }
        let peak = ring.slots.capacity();
        assert!(peak >= 4_000);
        // All but the last ten acknowledged: a small flight again.
        let mut out = Vec::new();
        ring.remove_range_into(0..=3_989, &mut out);
        assert_eq!(out.len(), 3_990);
        assert_eq!(ring.len(), 10);
        assert!(
            ring.slots.capacity() <= KEPT_SLOTS.max(4 * ring.len()),
            "{} slots kept for {} packets (peak {peak})",
            ring.slots.capacity(),
            ring.len()
        );
        // The rest, one by one from the front, as single ACKs take them.
        for pn in 3_990..4_000 {
            assert!(ring.remove(pn).is_some());
        }
        assert_eq!(ring.len(), 0);
        assert!(ring.slots.capacity() <= KEPT_SLOTS);
        assert_eq!(ring.bytes_in_flight(), 0);
    }

    #[test]
    fn in_flight_counts_only_ack_eliciting_packets() {
        let mut s = SentPackets::default();
        s.insert(0, pkt(1200, true));
        s.insert(1, pkt(50, false));
        s.insert(2, pkt(1000, true));
        assert_eq!(s.bytes_in_flight(), 2200);
        let removed = s.remove_range(1..=5);
        assert_eq!(
            removed.iter().map(|(pn, _)| *pn).collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert_eq!(s.bytes_in_flight(), 1200);
        assert!(s.has_eliciting_in_flight());
        assert!(s.remove(0).is_some() && s.remove(0).is_none());
        assert_eq!((s.bytes_in_flight(), s.len()), (0, 0));
        assert!(!s.has_eliciting_in_flight());
    }

    #[test]
    fn behaves_like_an_ordered_map_under_random_operations() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut ring = SentPackets::default();
        let mut model = std::collections::BTreeMap::new();
        let mut next = 5u64;
        for _ in 0..5_000 {
            match rng.random_range(0..4) {
                0 | 1 => {
                    // Numbers grow, sometimes skipping some.
                    next += rng.random_range(1..3);
                    let p = pkt(rng.random_range(1..1500), rng.random_bool(0.8));
                    ring.insert(next, p.clone());
                    model.insert(next, p);
                }
                2 => {
                    let pn = rng.random_range(0..=next + 2);
                    assert_eq!(ring.remove(pn), model.remove(&pn));
                }
                _ => {
                    let lo = rng.random_range(0..=next + 2);
                    let hi = lo + rng.random_range(0..8);
                    let got = ring.remove_range(lo..=hi);
                    let want: Vec<u64> = model.range(lo..=hi).map(|(&pn, _)| pn).collect();
                    for pn in &want {
                        model.remove(pn);
                    }
                    assert_eq!(got.iter().map(|(pn, _)| *pn).collect::<Vec<_>>(), want);
                }
            }
            assert_eq!(ring.len(), model.len());
            let in_flight: u64 = model
                .values()
                .filter(|p| p.ack_eliciting)
                .map(|p| p.size_bytes)
                .sum();
            assert_eq!(ring.bytes_in_flight(), in_flight);
            assert_eq!(
                ring.iter().next_back().map(|(pn, _)| pn),
                model.keys().next_back().copied()
            );
        }
        let pns: Vec<u64> = ring.iter().map(|(pn, _)| pn).collect();
        assert_eq!(pns, model.keys().copied().collect::<Vec<_>>());
        if let Some(&pn) = model.keys().next() {
            assert!(ring.get_mut(pn).is_some());
        }
        assert!(ring.get_mut(next + 1).is_none());
    }
}
