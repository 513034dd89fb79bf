//! The ACK frame: acknowledged packet-number ranges, the receiver's ack
//! delay and its exact per-codepoint ECN counters.
//!
//! ```text
//! type (0x02, or 0x03 with ECN counts) | largest | ack delay (units of 2^3 us)
//! | range count | first range | (gap, range length) * range count
//! | [ect0 | ect1 | ce]        all varints
//! ```
//!
//! Ranges are stored descending and disjoint; the first holds `largest`.

use super::FrameError;
use crate::varint::{self, Reader};
use std::ops::RangeInclusive;
use std::time::Duration;

/// ACK delay travels in units of 2^ACK_DELAY_EXPONENT microseconds.
pub(crate) const ACK_DELAY_EXPONENT: u32 = 3;
/// A bound on the ranges one frame may carry, so a hostile ACK cannot make
/// the receiver allocate without limit.
pub(crate) const MAX_ACK_RANGES: usize = 256;

/// An ACK frame's ranges, newest first. The first range sits inline, so
/// the common ACK without gaps is parsed without allocating; only ranges
/// below a gap go to the heap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AckRanges {
    first: Option<RangeInclusive<u64>>,
    below: Vec<RangeInclusive<u64>>,
}

impl AckRanges {
    /// Appends a range below the last one.
    pub fn push(&mut self, r: RangeInclusive<u64>) {
        if self.first.is_none() {
            self.first = Some(r);
        } else {
            self.below.push(r);
        }
    }

    pub fn first(&self) -> Option<&RangeInclusive<u64>> {
        self.first.as_ref()
    }

    pub fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.below.len()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Newest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &RangeInclusive<u64>> {
        self.first.iter().chain(&self.below)
    }
}

impl FromIterator<RangeInclusive<u64>> for AckRanges {
    fn from_iter<I: IntoIterator<Item = RangeInclusive<u64>>>(iter: I) -> Self {
        let mut ranges = AckRanges::default();
        for r in iter {
            ranges.push(r);
        }
        ranges
    }
}

impl From<Vec<RangeInclusive<u64>>> for AckRanges {
    fn from(v: Vec<RangeInclusive<u64>>) -> Self {
        v.into_iter().collect()
    }
}

impl PartialEq<Vec<RangeInclusive<u64>>> for AckRanges {
    fn eq(&self, other: &Vec<RangeInclusive<u64>>) -> bool {
        self.iter().eq(other.iter())
    }
}

impl<'a> IntoIterator for &'a AckRanges {
    type Item = &'a RangeInclusive<u64>;
    type IntoIter = std::iter::Chain<
        std::option::Iter<'a, RangeInclusive<u64>>,
        std::slice::Iter<'a, RangeInclusive<u64>>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.first.iter().chain(&self.below)
    }
}

/// The ECN section of an ACK_ECN frame (RFC 9000 §19.3.2): how many
/// packets the receiver has seen with each ECN codepoint, cumulative over
/// the connection. The frame only carries these numbers; the connection
/// turns them into the congestion controller's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckEcnCounts {
    /// Packets received with ECT(0).
    pub ect0: u64,
    /// Packets received with ECT(1).
    pub ect1: u64,
    /// Packets received with CE.
    pub ce: u64,
}

/// A parsed ACK or ACK_ECN frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckFrame {
    /// Descending, disjoint, non-adjacent ranges; never empty.
    pub ranges: AckRanges,
    /// Time the receiver held the largest packet before acknowledging it.
    pub ack_delay: Duration,
    /// The receiver's cumulative per-codepoint counts (type 0x03 only).
    pub ecn: Option<AckEcnCounts>,
}

impl AckFrame {
    pub fn largest(&self) -> u64 {
        self.ranges.first().map_or(0, |r| *r.end())
    }

    /// True when `pn` lies in one of the ranges.
    pub fn contains(&self, pn: u64) -> bool {
        self.ranges.iter().any(|r| r.contains(&pn))
    }

    pub(super) fn parse(r: &mut Reader<'_>, with_ecn: bool) -> Result<Self, FrameError> {
        let largest = r.varint()?;
        let delay_units = r.varint()?;
        let ack_delay = Duration::from_micros(delay_units.saturating_mul(1 << ACK_DELAY_EXPONENT));
        let count = r.varint()?;
        if count >= MAX_ACK_RANGES as u64 {
            return Err(FrameError::Invalid("too many ack ranges"));
        }
        let first = r.varint()?;
        let mut low = largest
            .checked_sub(first)
            .ok_or(FrameError::Invalid("ack range below zero"))?;
        let mut ranges = AckRanges {
            first: Some(low..=largest),
            below: Vec::with_capacity(count as usize),
        };
        for _ in 0..count {
            let gap = r.varint()?;
            let len = r.varint()?;
            // The next range ends `gap + 2` below the previous range's start.
            let high = low
                .checked_sub(gap)
                .and_then(|x| x.checked_sub(2))
                .ok_or(FrameError::Invalid("ack gap below zero"))?;
            low = high
                .checked_sub(len)
                .ok_or(FrameError::Invalid("ack range below zero"))?;
            ranges.below.push(low..=high);
        }
        let ecn = if with_ecn {
            Some(AckEcnCounts {
                ect0: r.varint()?,
                ect1: r.varint()?,
                ce: r.varint()?,
            })
        } else {
            None
        };
        Ok(AckFrame {
            ranges,
            ack_delay,
            ecn,
        })
    }

    pub(super) fn emit(&self, out: &mut Vec<u8>) {
        emit_ack(
            out,
            self.ranges.iter().cloned(),
            self.ranges.len(),
            self.ack_delay,
            self.ecn,
        );
    }
}

/// Writes an ACK frame from its parts, byte for byte what
/// [`AckFrame::emit`] writes for the same fields, so a sender can report
/// ranges straight from its records without collecting them first.
/// `ranges` must yield exactly `count` descending, disjoint ranges; nothing
/// is written when it is empty. Returns the largest acknowledged number.
pub(crate) fn emit_ack(
    out: &mut Vec<u8>,
    mut ranges: impl Iterator<Item = RangeInclusive<u64>>,
    count: usize,
    ack_delay: Duration,
    ecn: Option<AckEcnCounts>,
) -> Option<u64> {
    let first = ranges.next()?;
    out.push(if ecn.is_some() {
        super::ty::ACK_ECN
    } else {
        super::ty::ACK
    });
    varint::write(out, *first.end());
    varint::write(out, (ack_delay.as_micros() >> ACK_DELAY_EXPONENT) as u64);
    varint::write(out, count.saturating_sub(1) as u64);
    varint::write(out, first.end().saturating_sub(*first.start()));
    let mut prev_low = *first.start();
    for r in ranges {
        varint::write(out, prev_low.saturating_sub(r.end() + 2));
        varint::write(out, r.end().saturating_sub(*r.start()));
        prev_low = *r.start();
    }
    if let Some(e) = ecn {
        varint::write(out, e.ect0);
        varint::write(out, e.ect1);
        varint::write(out, e.ce);
    }
    Some(*first.end())
}
