//! Frames: the units a packet's decrypted payload is made of
//! (docs/PROTOCOL.md §4).
//!
//! Every frame starts with a varint type. [`Frame`] is the parsed form,
//! borrowing stream data and close reasons from the packet; `parse` never
//! panics and rejects unknown or reserved types, because a peer may send an
//! extension's frames only after both sides advertised the extension in
//! their transport parameters.

mod ack;
mod ack_frequency;
mod datagram;
mod path;
mod repair;

pub(crate) use ack::{AckEcnCounts, AckFrame, emit_ack};
pub(crate) use ack_frequency::AckFrequencyFrame;
pub(crate) use datagram::DatagramFrame;
pub(crate) use path::{CHALLENGE_LEN, NewConnectionIdFrame};
pub(crate) use repair::{RepairFrame, RepairedFrame};

use crate::varint::{self, DecodeError, Reader};

/// Frame type numbers. Gaps are reserved for extensions (see
/// [`ty::is_reserved`]).
pub(crate) mod ty {
    pub(crate) const PADDING: u8 = 0x00;
    pub(crate) const PING: u8 = 0x01;
    pub(crate) const ACK: u8 = 0x02;
    pub(crate) const ACK_ECN: u8 = 0x03;
    pub(crate) const RESET_STREAM: u8 = 0x04;
    pub(crate) const STOP_SENDING: u8 = 0x05;
    /// 0x08..=0x0f: STREAM with the OFF (0x04), LEN (0x02) and FIN (0x01) bits.
    pub(crate) const STREAM: u8 = 0x08;
    /// The last STREAM type: all three bits set.
    pub(crate) const STREAM_MAX: u8 = 0x0f;
    pub(crate) const MAX_DATA: u8 = 0x10;
    pub(crate) const MAX_STREAM_DATA: u8 = 0x11;
    pub(crate) const MAX_STREAMS_BIDI: u8 = 0x12;
    pub(crate) const MAX_STREAMS_UNI: u8 = 0x13;
    pub(crate) const DATA_BLOCKED: u8 = 0x14;
    pub(crate) const STREAM_DATA_BLOCKED: u8 = 0x15;
    /// Another connection ID the sender accepts (migration).
    pub(crate) const NEW_CONNECTION_ID: u8 = 0x18;
    /// The sender no longer uses one of the receiver's IDs.
    pub(crate) const RETIRE_CONNECTION_ID: u8 = 0x19;
    /// Prove the peer receives on this path: echo these 8 bytes.
    pub(crate) const PATH_CHALLENGE: u8 = 0x1a;
    /// The echo of a PATH_CHALLENGE.
    pub(crate) const PATH_RESPONSE: u8 = 0x1b;
    pub(crate) const CONNECTION_CLOSE: u8 = 0x1c;
    pub(crate) const APPLICATION_CLOSE: u8 = 0x1d;
    pub(crate) const HANDSHAKE_DONE: u8 = 0x1e;
    pub(crate) const ACK_FREQUENCY: u8 = 0x1f;
    /// A repair symbol (forward error correction).
    pub(crate) const REPAIR: u8 = 0x20;
    /// What the receiver rebuilt from repair symbols.
    pub(crate) const REPAIRED: u8 = 0x21;
    /// An unreliable datagram running to the end of the packet (RFC 9221).
    pub(crate) const DATAGRAM: u8 = 0x30;
    /// An unreliable datagram with an explicit length (RFC 9221).
    pub(crate) const DATAGRAM_LEN: u8 = 0x31;

    #[cfg(test)]
    /// Types set aside for planned extensions: 0x06-0x07 (tokens), 0x16-0x17
    /// (STREAMS_BLOCKED), 0x22-0x2f (more FEC frames), 0x32
    /// (PRIORITY_UPDATE) and everything from 0x40 up (experiments).
    pub(crate) fn is_reserved(t: u64) -> bool {
        matches!(t, 0x06..=0x07 | 0x16..=0x17 | 0x22..=0x2f | 0x32) || t >= 0x40
    }
}

/// Why a payload could not be read as frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("unknown frame type {0:#x}")]
    UnknownType(u64),
    #[error("invalid frame: {0}")]
    Invalid(&'static str),
}

/// A chunk of one stream's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamFrame<'a> {
    pub id: u64,
    pub offset: u64,
    pub fin: bool,
    pub data: &'a [u8],
}

impl StreamFrame<'_> {
    /// Appends a STREAM frame's header for `len` data bytes; the bytes
    /// themselves must follow.
    pub fn emit_header(id: u64, offset: u64, len: usize, fin: bool, out: &mut Vec<u8>) {
        let mut t = ty::STREAM | 0x02;
        if offset > 0 {
            t |= 0x04;
        }
        if fin {
            t |= 0x01;
        }
        // Written in place after one capacity check (this runs for every
        // packet sent). Put together on the stack and copied over, its
        // bytes were read back in one word from several narrow stores,
        // which the processor cannot forward.
        let at = out.len();
        out.resize(at + 1 + 3 * 8, 0);
        let h = &mut out[at..];
        h[0] = t;
        let mut n = 1;
        n += varint::put(&mut h[n..], id);
        if offset > 0 {
            n += varint::put(&mut h[n..], offset);
        }
        n += varint::put(&mut h[n..], len as u64);
        out.truncate(at + n);
    }

    /// Header bytes of a STREAM frame that carries an explicit length.
    pub fn header_len(id: u64, offset: u64, len: usize) -> usize {
        let off = if offset > 0 {
            varint::size(offset).unwrap_or(8)
        } else {
            0
        };
        1 + varint::size(id).unwrap_or(8) + off + varint::size(len as u64).unwrap_or(8)
    }
}

/// CONNECTION_CLOSE: `frame_type` is present for transport errors
/// (type 0x1c) and absent for application closes (0x1d).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseFrame<'a> {
    pub error_code: u64,
    pub frame_type: Option<u64>,
    pub reason: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A run of zero bytes (the count).
    Padding(usize),
    Ping,
    Ack(AckFrame),
    ResetStream {
        id: u64,
        error_code: u64,
        final_size: u64,
    },
    StopSending {
        id: u64,
        error_code: u64,
    },
    Stream(StreamFrame<'a>),
    MaxData(u64),
    MaxStreamData {
        id: u64,
        max: u64,
    },
    MaxStreams {
        bidi: bool,
        count: u64,
    },
    DataBlocked(u64),
    StreamDataBlocked {
        id: u64,
        limit: u64,
    },
    Close(CloseFrame<'a>),
    HandshakeDone,
    /// Only from a peer that announced `min_ack_delay`; the connection
    /// checks that, the parser cannot.
    AckFrequency(AckFrequencyFrame),
    /// Only from a peer that announced `fec`; the connection checks that.
    Repair(RepairFrame<'a>),
    /// Only from a peer that announced `fec`; the connection checks that.
    Repaired(RepairedFrame),
    /// Only from a peer we announced `max_datagram_frame_size` to; the
    /// connection checks that, and the size.
    Datagram(DatagramFrame<'a>),
    /// Another ID the peer accepts packets on (migration, §7.4).
    NewConnectionId(NewConnectionIdFrame),
    /// The peer no longer uses our ID with this sequence number.
    RetireConnectionId(u64),
    /// Echo these bytes on the path they came from.
    PathChallenge([u8; CHALLENGE_LEN]),
    /// The echo of our challenge.
    PathResponse([u8; CHALLENGE_LEN]),
}

impl<'a> Frame<'a> {
    /// Reads one frame. A STREAM frame without the LEN bit runs to the end
    /// of `r`.
    pub fn parse(r: &mut Reader<'a>) -> Result<Self, FrameError> {
        let wide = r.varint()?;
        let Ok(t) = u8::try_from(wide) else {
            return Err(FrameError::UnknownType(wide));
        };
        let frame = match t {
            ty::PADDING => {
                let n = 1 + r.rest().iter().take_while(|&&b| b == 0).count();
                r.bytes(n - 1)?;
                Frame::Padding(n)
            }
            ty::PING => Frame::Ping,
            ty::ACK | ty::ACK_ECN => Frame::Ack(AckFrame::parse(r, t == ty::ACK_ECN)?),
            ty::RESET_STREAM => Frame::ResetStream {
                id: r.varint()?,
                error_code: r.varint()?,
                final_size: r.varint()?,
            },
            ty::STOP_SENDING => Frame::StopSending {
                id: r.varint()?,
                error_code: r.varint()?,
            },
            ty::STREAM..=ty::STREAM_MAX => {
                let id = r.varint()?;
                let offset = if t & 0x04 != 0 { r.varint()? } else { 0 };
                let len = if t & 0x02 != 0 {
                    r.varint_len()?
                } else {
                    r.remaining()
                };
                let data = r.bytes(len)?;
                if offset.saturating_add(len as u64) > varint::MAX {
                    return Err(FrameError::Invalid("stream offset beyond 2^62"));
                }
                Frame::Stream(StreamFrame {
                    id,
                    offset,
                    fin: t & 0x01 != 0,
                    data,
                })
            }
            ty::MAX_DATA => Frame::MaxData(r.varint()?),
            ty::MAX_STREAM_DATA => Frame::MaxStreamData {
                id: r.varint()?,
                max: r.varint()?,
            },
            ty::MAX_STREAMS_BIDI | ty::MAX_STREAMS_UNI => Frame::MaxStreams {
                bidi: t == ty::MAX_STREAMS_BIDI,
                count: r.varint()?,
            },
            ty::DATA_BLOCKED => Frame::DataBlocked(r.varint()?),
            ty::STREAM_DATA_BLOCKED => Frame::StreamDataBlocked {
                id: r.varint()?,
                limit: r.varint()?,
            },
            ty::CONNECTION_CLOSE | ty::APPLICATION_CLOSE => {
                let error_code = r.varint()?;
                let frame_type = if t == ty::CONNECTION_CLOSE {
                    Some(r.varint()?)
                } else {
                    None
                };
                let len = r.varint_len()?;
                Frame::Close(CloseFrame {
                    error_code,
                    frame_type,
                    reason: r.bytes(len)?,
                })
            }
            ty::HANDSHAKE_DONE => Frame::HandshakeDone,
            ty::ACK_FREQUENCY => Frame::AckFrequency(AckFrequencyFrame::parse(r)?),
            ty::REPAIR => Frame::Repair(RepairFrame::parse(r)?),
            ty::REPAIRED => Frame::Repaired(RepairedFrame::parse(r)?),
            ty::DATAGRAM | ty::DATAGRAM_LEN => {
                Frame::Datagram(DatagramFrame::parse(r, t == ty::DATAGRAM_LEN)?)
            }
            ty::NEW_CONNECTION_ID => Frame::NewConnectionId(NewConnectionIdFrame::parse(r)?),
            ty::RETIRE_CONNECTION_ID => Frame::RetireConnectionId(r.varint()?),
            ty::PATH_CHALLENGE => Frame::PathChallenge(path::parse_path_data(r)?),
            ty::PATH_RESPONSE => Frame::PathResponse(path::parse_path_data(r)?),
            other => return Err(FrameError::UnknownType(other.into())),
        };
        Ok(frame)
    }

    /// The type number this frame is sent with, as a CONNECTION_CLOSE
    /// names it when the frame broke a rule (RFC 9000 §19.19). STREAM is
    /// reported as its base type 0x08: the flag bits are not kept.
    pub fn frame_type(&self) -> u8 {
        match self {
            Frame::Padding(_) => ty::PADDING,
            Frame::Ping => ty::PING,
            Frame::Ack(a) if a.ecn.is_some() => ty::ACK_ECN,
            Frame::Ack(_) => ty::ACK,
            Frame::ResetStream { .. } => ty::RESET_STREAM,
            Frame::StopSending { .. } => ty::STOP_SENDING,
            Frame::Stream(_) => ty::STREAM,
            Frame::MaxData(_) => ty::MAX_DATA,
            Frame::MaxStreamData { .. } => ty::MAX_STREAM_DATA,
            Frame::MaxStreams { bidi: true, .. } => ty::MAX_STREAMS_BIDI,
            Frame::MaxStreams { bidi: false, .. } => ty::MAX_STREAMS_UNI,
            Frame::DataBlocked(_) => ty::DATA_BLOCKED,
            Frame::StreamDataBlocked { .. } => ty::STREAM_DATA_BLOCKED,
            Frame::Close(CloseFrame {
                frame_type: Some(_),
                ..
            }) => ty::CONNECTION_CLOSE,
            Frame::Close(_) => ty::APPLICATION_CLOSE,
            Frame::HandshakeDone => ty::HANDSHAKE_DONE,
            Frame::AckFrequency(_) => ty::ACK_FREQUENCY,
            Frame::Repair(_) => ty::REPAIR,
            Frame::Repaired(_) => ty::REPAIRED,
            Frame::Datagram(_) => ty::DATAGRAM_LEN,
            Frame::NewConnectionId(_) => ty::NEW_CONNECTION_ID,
            Frame::RetireConnectionId(_) => ty::RETIRE_CONNECTION_ID,
            Frame::PathChallenge(_) => ty::PATH_CHALLENGE,
            Frame::PathResponse(_) => ty::PATH_RESPONSE,
        }
    }

    /// Appends the frame. STREAM frames always carry an explicit length so
    /// that any frame may follow them.
    pub fn emit(&self, out: &mut Vec<u8>) {
        match self {
            Frame::Padding(n) => out.resize(out.len() + n, 0),
            Frame::Ping => out.push(ty::PING),
            Frame::Ack(a) => a.emit(out),
            Frame::ResetStream {
                id,
                error_code,
                final_size,
            } => {
                out.push(ty::RESET_STREAM);
                for v in [id, error_code, final_size] {
                    varint::write(out, *v);
                }
            }
            Frame::StopSending { id, error_code } => {
                out.push(ty::STOP_SENDING);
                varint::write(out, *id);
                varint::write(out, *error_code);
            }
            Frame::Stream(s) => {
                StreamFrame::emit_header(s.id, s.offset, s.data.len(), s.fin, out);
                out.extend_from_slice(s.data);
            }
            Frame::MaxData(v) => {
                out.push(ty::MAX_DATA);
                varint::write(out, *v);
            }
            Frame::MaxStreamData { id, max } => {
                out.push(ty::MAX_STREAM_DATA);
                varint::write(out, *id);
                varint::write(out, *max);
            }
            Frame::MaxStreams { bidi, count } => {
                out.push(if *bidi {
                    ty::MAX_STREAMS_BIDI
                } else {
                    ty::MAX_STREAMS_UNI
                });
                varint::write(out, *count);
            }
            Frame::DataBlocked(v) => {
                out.push(ty::DATA_BLOCKED);
                varint::write(out, *v);
            }
            Frame::StreamDataBlocked { id, limit } => {
                out.push(ty::STREAM_DATA_BLOCKED);
                varint::write(out, *id);
                varint::write(out, *limit);
            }
            Frame::Close(c) => {
                match c.frame_type {
                    Some(ft) => {
                        out.push(ty::CONNECTION_CLOSE);
                        varint::write(out, c.error_code);
                        varint::write(out, ft);
                    }
                    None => {
                        out.push(ty::APPLICATION_CLOSE);
                        varint::write(out, c.error_code);
                    }
                }
                varint::write(out, c.reason.len() as u64);
                out.extend_from_slice(c.reason);
            }
            Frame::HandshakeDone => out.push(ty::HANDSHAKE_DONE),
            Frame::AckFrequency(f) => f.emit(out),
            Frame::Repair(f) => f.emit(out),
            Frame::Repaired(f) => f.emit(out),
            Frame::Datagram(f) => f.emit(out),
            Frame::NewConnectionId(f) => f.emit(out),
            Frame::RetireConnectionId(seq) => {
                out.push(ty::RETIRE_CONNECTION_ID);
                varint::write(out, *seq);
            }
            Frame::PathChallenge(d) => {
                out.push(ty::PATH_CHALLENGE);
                out.extend_from_slice(d);
            }
            Frame::PathResponse(d) => {
                out.push(ty::PATH_RESPONSE);
                out.extend_from_slice(d);
            }
        }
    }

    /// Bytes `emit` appends.
    pub fn len(&self) -> usize {
        let mut v = Vec::new();
        self.emit(&mut v);
        v.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Frames other than PADDING, ACK, CONNECTION_CLOSE (RFC 9000
    /// §13.2.1) and REPAIRED (it rides with ACKs) oblige the receiver to
    /// acknowledge the packet.
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(
            self,
            Frame::Padding(_) | Frame::Ack(_) | Frame::Close(_) | Frame::Repaired(_)
        )
    }
}

/// Iterates over the frames of a decrypted payload, stopping at the first
/// error.
pub(crate) struct FrameIter<'a> {
    r: Reader<'a>,
    failed: bool,
}

impl<'a> FrameIter<'a> {
    pub(crate) fn new(payload: &'a [u8]) -> Self {
        FrameIter {
            r: Reader::new(payload),
            failed: false,
        }
    }
}

impl<'a> FrameIter<'a> {
    /// The bytes not parsed yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.r.rest()
    }
}

impl<'a> Iterator for FrameIter<'a> {
    type Item = Result<Frame<'a>, FrameError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.is_empty() {
            return None;
        }
        let f = Frame::parse(&mut self.r);
        self.failed = f.is_err();
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::ack::ACK_DELAY_EXPONENT;
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn parse_all(b: &[u8]) -> Result<Vec<Frame<'_>>, FrameError> {
        FrameIter::new(b).collect()
    }

    fn emit_all(frames: &[Frame<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        for f in frames {
            f.emit(&mut out);
        }
        out
    }

    /// ACK_ECN: largest 100, delay 5 units (40 us), 1 extra range,
    /// first range 2 (98..=100), gap 3 len 4 (89..=93), counts 7/0/1.
    const ACK: [u8; 10] = [0x03, 0x40, 0x64, 0x05, 0x01, 0x02, 0x03, 0x04, 0x07, 0x00];

    fn ack_repr() -> AckFrame {
        AckFrame {
            ranges: vec![98..=100, 89..=93].into(),
            ack_delay: Duration::from_micros(40),
            ecn: Some(AckEcnCounts {
                ect0: 7,
                ect1: 0,
                ce: 1,
            }),
        }
    }

    #[test]
    fn deconstruct_and_parse_ack() {
        let mut bytes = ACK.to_vec();
        bytes.push(0x01); // ce
        let f = parse_all(&bytes).unwrap();
        assert_eq!(f, vec![Frame::Ack(ack_repr())]);
        let Frame::Ack(a) = &f[0] else { unreachable!() };
        assert_eq!(a.largest(), 100);
        assert!(a.contains(89) && a.contains(93) && !a.contains(94) && !a.contains(97));
    }

    #[test]
    fn construct_and_emit_ack() {
        let out = emit_all(&[Frame::Ack(ack_repr())]);
        assert_eq!(&out[..10], &ACK);
        assert_eq!(out[10], 0x01);
        let plain = AckFrame {
            ecn: None,
            ..ack_repr()
        };
        assert_eq!(emit_all(&[Frame::Ack(plain)])[0], 0x02);
    }

    /// STREAM with OFF|LEN|FIN: id 4, offset 1000 (2 bytes), 3 bytes of data.
    const STREAM: [u8; 9] = [0x0f, 0x04, 0x43, 0xe8, 0x03, b'a', b'b', b'c', 0x01];

    #[test]
    fn stream_frame_then_ping() {
        let f = parse_all(&STREAM).unwrap();
        assert_eq!(
            f,
            vec![
                Frame::Stream(StreamFrame {
                    id: 4,
                    offset: 1000,
                    fin: true,
                    data: b"abc"
                }),
                Frame::Ping
            ]
        );
        assert_eq!(emit_all(&f), STREAM);
        assert_eq!(StreamFrame::header_len(4, 1000, 3), 5);
        // Without LEN the data runs to the end of the packet.
        assert_eq!(
            parse_all(&[0x08, 0x01, b'x', b'y']).unwrap(),
            vec![Frame::Stream(StreamFrame {
                id: 1,
                offset: 0,
                fin: false,
                data: b"xy"
            })]
        );
    }

    /// Transport close: code 0x0a, frame type 0x08, reason "bad".
    const CLOSE: [u8; 7] = [0x1c, 0x0a, 0x08, 0x03, b'b', b'a', b'd'];

    #[test]
    fn close_frames() {
        let c = Frame::Close(CloseFrame {
            error_code: 10,
            frame_type: Some(8),
            reason: b"bad",
        });
        assert_eq!(parse_all(&CLOSE).unwrap(), vec![c.clone()]);
        assert_eq!(emit_all(&[c]), CLOSE);
        let app = Frame::Close(CloseFrame {
            error_code: 7,
            frame_type: None,
            reason: b"",
        });
        assert_eq!(emit_all(std::slice::from_ref(&app)), [0x1d, 0x07, 0x00]);
        assert!(!app.is_ack_eliciting());
    }

    #[test]
    fn flow_control_and_padding_frames() {
        let bytes = [
            0x00, 0x00, 0x00, 0x10, 0x44, 0x00, 0x12, 0x05, 0x1e, 0x04, 0x01, 0x02, 0x03,
        ];
        let f = parse_all(&bytes).unwrap();
        assert_eq!(
            f,
            vec![
                Frame::Padding(3),
                Frame::MaxData(1024),
                Frame::MaxStreams {
                    bidi: true,
                    count: 5
                },
                Frame::HandshakeDone,
                Frame::ResetStream {
                    id: 1,
                    error_code: 2,
                    final_size: 3
                },
            ]
        );
        assert_eq!(emit_all(&f), bytes);
    }

    #[test]
    fn rejects_reserved_unknown_and_broken_frames() {
        for t in [0x06u8, 0x16, 0x17, 0x32] {
            assert!(ty::is_reserved(u64::from(t)));
            assert_eq!(parse_all(&[t]), Err(FrameError::UnknownType(u64::from(t))));
        }
        // ACK whose first range goes below zero.
        assert!(parse_all(&[0x02, 0x01, 0x00, 0x00, 0x05]).is_err());
        // ACK with a gap below zero.
        assert!(parse_all(&[0x02, 0x05, 0x00, 0x01, 0x01, 0x05, 0x00]).is_err());
        // Truncated STREAM length.
        assert!(parse_all(&[0x0a, 0x00, 0x05, b'a']).is_err());
        // Close reason longer than the packet.
        assert!(parse_all(&[0x1d, 0x00, 0x09, b'a']).is_err());
    }

    /// ACK_FREQUENCY: sequence 7, threshold 9, 5 ms (5000 us, 2 bytes).
    const ACK_FREQUENCY: [u8; 5] = [0x1f, 0x07, 0x09, 0x53, 0x88];

    #[test]
    fn ack_frequency_frame() {
        let f = Frame::AckFrequency(AckFrequencyFrame {
            sequence: 7,
            ack_eliciting_threshold: 9,
            request_max_ack_delay: Duration::from_millis(5),
        });
        assert_eq!(parse_all(&ACK_FREQUENCY).unwrap(), vec![f.clone()]);
        assert_eq!(emit_all(std::slice::from_ref(&f)), ACK_FREQUENCY);
        assert!(f.is_ack_eliciting());
        assert!(parse_all(&ACK_FREQUENCY[..4]).is_err(), "cut short");
    }

    fn arb_frame() -> impl Strategy<Value = Frame<'static>> {
        let v = 0..=varint::MAX;
        prop_oneof![
            Just(Frame::Ping),
            (v.clone(), v.clone(), 0u64..1 << 40).prop_map(|(sequence, threshold, us)| {
                Frame::AckFrequency(AckFrequencyFrame {
                    sequence,
                    ack_eliciting_threshold: threshold,
                    request_max_ack_delay: Duration::from_micros(us),
                })
            }),
            Just(Frame::HandshakeDone),
            (0usize..40).prop_map(|n| Frame::Datagram(DatagramFrame {
                data: &b"0123456789012345678901234567890123456789"[..n],
            })),
            v.clone().prop_map(Frame::MaxData),
            (v.clone(), v.clone()).prop_map(|(id, max)| Frame::MaxStreamData { id, max }),
            (any::<bool>(), v.clone()).prop_map(|(bidi, count)| Frame::MaxStreams { bidi, count }),
            (v.clone(), v.clone(), v.clone()).prop_map(|(id, error_code, final_size)| {
                Frame::ResetStream {
                    id,
                    error_code,
                    final_size,
                }
            }),
            (v.clone(), 0u64..(1 << 40), any::<bool>(), 0usize..40).prop_map(
                |(id, offset, fin, n)| {
                    Frame::Stream(StreamFrame {
                        id,
                        offset,
                        fin,
                        data: &b"0123456789012345678901234567890123456789"[..n],
                    })
                }
            ),
            (
                1u64..1 << 40,
                proptest::collection::vec((0u64..1000, 0u64..1000), 1..8),
                0u64..1_000_000,
                any::<bool>()
            )
                .prop_map(|(largest, pairs, delay_units, ecn)| {
                    let mut ranges = Vec::new();
                    let mut high = largest;
                    for (gap, len) in pairs {
                        let low = high.saturating_sub(len);
                        ranges.push(low..=high);
                        match low.checked_sub(gap + 2) {
                            Some(h) => high = h,
                            None => break,
                        }
                    }
                    Frame::Ack(AckFrame {
                        ranges: ranges.into(),
                        ack_delay: Duration::from_micros(delay_units << ACK_DELAY_EXPONENT),
                        ecn: ecn.then_some(AckEcnCounts {
                            ect0: largest,
                            ect1: delay_units,
                            ce: 3,
                        }),
                    })
                }),
        ]
    }

    proptest! {
        #[test]
        fn frames_round_trip(frames in proptest::collection::vec(arb_frame(), 1..6)) {
            let bytes = emit_all(&frames);
            prop_assert_eq!(frames.iter().map(Frame::len).sum::<usize>(), bytes.len());
            prop_assert_eq!(parse_all(&bytes).unwrap(), frames);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse_all(&bytes);
        }
    }
}
