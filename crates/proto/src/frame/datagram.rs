//! The DATAGRAM frame (RFC 9221 §4): application data sent once, never
//! retransmitted, sent only to a peer that announced
//! `max_datagram_frame_size`.
//!
//! ```text
//! DATAGRAM      type (0x30) | data to the end of the packet
//! DATAGRAM_LEN  type (0x31) | length | data
//! ```
//!
//! Brisk always sends the 0x31 form, so any frame may follow; it takes
//! both.

use super::{FrameError, ty};
use crate::varint::{self, Reader};

/// One unreliable datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatagramFrame<'a> {
    /// The application's bytes, delivered whole or not at all.
    pub data: &'a [u8],
}

impl<'a> DatagramFrame<'a> {
    /// Reads the fields after the type; `with_len`: the type was 0x31.
    pub(super) fn parse(r: &mut Reader<'a>, with_len: bool) -> Result<Self, FrameError> {
        let len = if with_len {
            r.varint_len()?
        } else {
            r.remaining()
        };
        Ok(DatagramFrame {
            data: r.bytes(len)?,
        })
    }

    /// Appends the frame in its 0x31 form (with a length).
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(ty::DATAGRAM_LEN);
        varint::write(out, self.data.len() as u64);
        out.extend_from_slice(self.data);
    }

    /// Bytes [`DatagramFrame::emit`] appends for `len` data bytes.
    pub fn encoded_len(len: usize) -> usize {
        1 + varint::size(len as u64).unwrap_or(8) + len
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Frame, FrameIter};
    use super::*;

    /// DATAGRAM_LEN with 3 bytes, then PING; then DATAGRAM to the end.
    const WITH_LEN: [u8; 6] = [0x31, 0x03, b'a', b'b', b'c', 0x01];
    const TO_END: [u8; 3] = [0x30, b'x', b'y'];

    #[test]
    fn parses_both_forms_and_emits_the_length_form() {
        let f: Vec<_> = FrameIter::new(&WITH_LEN).collect();
        let want = DatagramFrame { data: b"abc" };
        assert_eq!(f, vec![Ok(Frame::Datagram(want)), Ok(Frame::Ping)]);
        let mut out = Vec::new();
        want.emit(&mut out);
        assert_eq!(out, WITH_LEN[..5]);
        assert_eq!(DatagramFrame::encoded_len(3), 5);
        let f: Vec<_> = FrameIter::new(&TO_END).collect();
        assert_eq!(f, vec![Ok(Frame::Datagram(DatagramFrame { data: b"xy" }))]);
        assert!(Frame::Datagram(want).is_ack_eliciting());
    }

    #[test]
    fn rejects_a_length_past_the_packet() {
        let short: Vec<_> = FrameIter::new(&WITH_LEN[..4]).collect();
        assert!(short[0].is_err());
        // A length varint cut short.
        let cut: Vec<_> = FrameIter::new(&[0x31, 0x40]).collect();
        assert!(cut[0].is_err());
    }
}
