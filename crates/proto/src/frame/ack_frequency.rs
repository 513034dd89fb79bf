//! The ACK_FREQUENCY frame: a data sender asks its peer to acknowledge
//! less (or more) often (docs/PROTOCOL.md §5.3).
//!
//! ```text
//! type (0x1f) | sequence number | ack-eliciting threshold
//! | requested max ack delay (us)           all varints
//! ```
//!
//! Only the sender knows its window: at a few packets per round trip an
//! ACK every second packet keeps its clock ticking, at hundreds it costs
//! the receiver a packet, the network a slot and the sender a loss-
//! detection pass for every two data packets, and buys nothing.

use super::{FrameError, ty};
use crate::varint::{self, Reader};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckFrequencyFrame {
    /// Grows with every frame the sender sends; a receiver acts only on a
    /// frame newer than any it has seen, so a late or repeated copy cannot
    /// undo a newer request.
    pub sequence: u64,
    /// Ack-eliciting packets that may arrive unacknowledged: the next one
    /// after them is acknowledged at once. 1 (every second packet) is the
    /// default, 0 asks for an ACK per packet.
    pub ack_eliciting_threshold: u64,
    /// The longest the receiver may hold an ACK back from now on.
    pub request_max_ack_delay: Duration,
}

impl AckFrequencyFrame {
    /// Reads the fields after the type.
    pub(super) fn parse(r: &mut Reader<'_>) -> Result<Self, FrameError> {
        Ok(AckFrequencyFrame {
            sequence: r.varint()?,
            ack_eliciting_threshold: r.varint()?,
            request_max_ack_delay: Duration::from_micros(r.varint()?),
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(ty::ACK_FREQUENCY);
        varint::write(out, self.sequence);
        varint::write(out, self.ack_eliciting_threshold);
        let us = u64::try_from(self.request_max_ack_delay.as_micros()).unwrap_or(varint::MAX);
        varint::write(out, us.min(varint::MAX));
    }
}
