//! The migration frames (docs/PROTOCOL.md §7.4): path validation and
//! connection ID rotation.
//!
//! ```text
//! NEW_CONNECTION_ID (0x18)    | sequence | retire prior to | length (8) | ID | reset token (16)
//! RETIRE_CONNECTION_ID (0x19) | sequence
//! PATH_CHALLENGE (0x1a)       | data (8)
//! PATH_RESPONSE (0x1b)        | data (8)
//! ```
//!
//! A peer that moves to a new address switches to an ID it has never used
//! on the old one, so an observer on both networks cannot tie the two
//! flows together by their IDs; the 8 unpredictable bytes of a challenge
//! echoed back prove the peer receives at the new address, which an
//! attacker who only copies or spoofs packets cannot do.

use super::{FrameError, ty};
use crate::packet::{ConnectionId, MAX_CID_LEN};
use crate::stateless_reset::RESET_TOKEN_LEN;
use crate::varint::{self, Reader};

/// Bytes of a PATH_CHALLENGE's data.
pub(crate) const CHALLENGE_LEN: usize = 8;

/// One more connection ID the sender accepts packets on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewConnectionIdFrame {
    /// Numbers the sender's IDs from 0 (the handshake's); each new one is
    /// one higher.
    pub sequence: u64,
    /// The receiver must stop using (and retire) every ID numbered below
    /// this.
    pub retire_prior_to: u64,
    pub id: ConnectionId,
    /// A stateless reset carrying this token ends the connection (§7.5).
    pub reset_token: [u8; RESET_TOKEN_LEN],
}

impl NewConnectionIdFrame {
    /// Reads the fields after the type. An empty or over-long ID, or a
    /// retire-prior-to above the sequence number, is malformed.
    pub(super) fn parse(r: &mut Reader<'_>) -> Result<Self, FrameError> {
        let sequence = r.varint()?;
        let retire_prior_to = r.varint()?;
        if retire_prior_to > sequence {
            return Err(FrameError::Invalid(
                "NEW_CONNECTION_ID retires IDs past its own",
            ));
        }
        let len = usize::from(r.u8()?);
        if len == 0 || len > MAX_CID_LEN {
            return Err(FrameError::Invalid(
                "NEW_CONNECTION_ID length outside 1-20 bytes",
            ));
        }
        let id = ConnectionId::new(r.bytes(len)?)
            .ok_or(FrameError::Invalid("NEW_CONNECTION_ID too long"))?;
        let mut reset_token = [0u8; RESET_TOKEN_LEN];
        reset_token.copy_from_slice(r.bytes(RESET_TOKEN_LEN)?);
        Ok(NewConnectionIdFrame {
            sequence,
            retire_prior_to,
            id,
            reset_token,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(ty::NEW_CONNECTION_ID);
        varint::write(out, self.sequence);
        varint::write(out, self.retire_prior_to);
        out.push(self.id.len() as u8);
        out.extend_from_slice(self.id.as_bytes());
        out.extend_from_slice(&self.reset_token);
    }
}

/// Reads PATH_CHALLENGE's or PATH_RESPONSE's 8 bytes.
pub(super) fn parse_path_data(r: &mut Reader<'_>) -> Result<[u8; CHALLENGE_LEN], FrameError> {
    let mut data = [0u8; CHALLENGE_LEN];
    data.copy_from_slice(r.bytes(CHALLENGE_LEN)?);
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::super::{Frame, FrameIter};
    use super::*;
    use proptest::prelude::*;

    fn parse_all(b: &[u8]) -> Result<Vec<Frame<'_>>, FrameError> {
        FrameIter::new(b).collect()
    }

    /// NEW_CONNECTION_ID: sequence 3, retire prior to 1, a 4-byte ID, the
    /// token 0x10..0x1f; then RETIRE_CONNECTION_ID 2, PATH_CHALLENGE and
    /// PATH_RESPONSE.
    const FRAMES: [u8; 47] = [
        0x18, 0x03, 0x01, 0x04, 0xaa, 0xbb, 0xcc, 0xdd, // header and ID
        0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, // token
        0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, //
        0x19, 0x02, // retire
        0x1a, 1, 2, 3, 4, 5, 6, 7, 8, // challenge
        0x1b, 1, 2, 3, 4, 5, 6, 7, 8, // response
        0x01, 0x01, 0x01, // three PINGs
    ];

    fn frames() -> Vec<Frame<'static>> {
        let mut reset_token = [0u8; RESET_TOKEN_LEN];
        for (i, b) in reset_token.iter_mut().enumerate() {
            *b = 0x10 + i as u8;
        }
        vec![
            Frame::NewConnectionId(NewConnectionIdFrame {
                sequence: 3,
                retire_prior_to: 1,
                id: ConnectionId::new(&[0xaa, 0xbb, 0xcc, 0xdd]).unwrap(),
                reset_token,
            }),
            Frame::RetireConnectionId(2),
            Frame::PathChallenge([1, 2, 3, 4, 5, 6, 7, 8]),
            Frame::PathResponse([1, 2, 3, 4, 5, 6, 7, 8]),
            Frame::Ping,
            Frame::Ping,
            Frame::Ping,
        ]
    }

    #[test]
    fn deconstruct_and_construct() {
        assert_eq!(parse_all(&FRAMES).unwrap(), frames());
        let mut out = Vec::new();
        for f in frames() {
            f.emit(&mut out);
            assert!(f.is_ack_eliciting());
        }
        assert_eq!(out, FRAMES);
    }

    #[test]
    fn rejects_broken_frames() {
        // Retire prior to 4 with sequence 3.
        assert!(parse_all(&[0x18, 0x03, 0x04, 0x01, 0xaa]).is_err());
        // Zero-length and 21-byte IDs.
        assert!(parse_all(&[0x18, 0x03, 0x00, 0x00]).is_err());
        assert!(parse_all(&[0x18, 0x03, 0x00, 21]).is_err());
        // Each frame cut short anywhere.
        for end in 1..FRAMES.len() - 3 {
            if [24, 26, 35].contains(&end) {
                continue; // a frame boundary
            }
            assert!(parse_all(&FRAMES[..end]).is_err(), "cut at {end}");
        }
    }

    proptest! {
        #[test]
        fn round_trip(seq in 0..=varint::MAX, back in 0..=varint::MAX,
                      id in proptest::collection::vec(any::<u8>(), 1..=MAX_CID_LEN),
                      token in any::<[u8; 16]>(), data in any::<[u8; 8]>()) {
            let fs = vec![
                Frame::NewConnectionId(NewConnectionIdFrame {
                    sequence: seq,
                    retire_prior_to: back.min(seq),
                    id: ConnectionId::new(&id).unwrap(),
                    reset_token: token,
                }),
                Frame::RetireConnectionId(seq),
                Frame::PathChallenge(data),
                Frame::PathResponse(data),
            ];
            let mut out = Vec::new();
            for f in &fs {
                f.emit(&mut out);
            }
            prop_assert_eq!(fs.iter().map(Frame::len).sum::<usize>(), out.len());
            prop_assert_eq!(parse_all(&out).unwrap(), fs);
        }

        #[test]
        fn parse_never_panics(ty in 0x18u8..=0x1b, rest in proptest::collection::vec(any::<u8>(), 0..48)) {
            let mut b = vec![ty];
            b.extend_from_slice(&rest);
            let _ = parse_all(&b);
        }
    }
}
