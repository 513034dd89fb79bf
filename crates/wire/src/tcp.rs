//! TCP headers (RFC 9293), checksummed over the IPv4 or IPv6 pseudo-header.
//!
//! A segment is not self-delimiting: the view covers exactly the bytes the
//! IP layer says belong to it (the IP payload), header, options and data.

mod flags;
pub mod option;

pub use flags::TcpFlags;
pub use option::{SackBlock, TcpOption, TcpOptionIter};

use crate::{Result, WireError, checksum};
use std::net::IpAddr;

mod field {
    use core::ops::Range;
    pub(super) const SRC_PORT: Range<usize> = 0..2;
    pub(super) const DST_PORT: Range<usize> = 2..4;
    pub(super) const SEQ: Range<usize> = 4..8;
    pub(super) const ACK: Range<usize> = 8..12;
    /// Data offset (4 bits), reserved (3 bits), then the 9 flags.
    pub(super) const OFF_FLAGS: Range<usize> = 12..14;
    pub(super) const WINDOW: Range<usize> = 14..16;
    pub(super) const CHECKSUM: Range<usize> = 16..18;
    pub(super) const URGENT: Range<usize> = 18..20;
}

/// The nine flag bits within header bytes 12..14.
const FLAGS_MASK: u16 = 0x01ff;

/// Length of a header without options.
pub const HEADER_LEN: usize = 20;
/// Length of a header with the most options (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;
/// IP protocol / IPv6 next-header number of TCP.
pub const PROTOCOL: u8 = 6;

/// A read (and, over `&mut [u8]`, write) view of a TCP segment.
///
/// Setters never change the data offset, so the bounds `new_checked`
/// validated hold for the life of the view and no accessor can panic.
#[derive(Debug, Clone)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Validates that the fixed header fits and that the data offset is at
    /// least 5 words and within the buffer. Options are checked lazily by
    /// [`TcpPacket::options`] and by [`TcpRepr::parse`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated {
                need: HEADER_LEN,
                have: b.len(),
            });
        }
        let header_len = usize::from(b[field::OFF_FLAGS.start] >> 4) * 4;
        if header_len < HEADER_LEN {
            return Err(WireError::Malformed("tcp data offset under 5"));
        }
        if b.len() < header_len {
            return Err(WireError::Truncated {
                need: header_len,
                have: b.len(),
            });
        }
        Ok(TcpPacket { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    fn be16(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.b()[at], self.b()[at + 1]])
    }
    fn be32(&self, at: usize) -> u32 {
        let b = self.b();
        u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.be16(field::SRC_PORT.start)
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.be16(field::DST_PORT.start)
    }
    /// Sequence number of the first data byte (of the SYN itself on a SYN),
    /// modulo 2^32.
    pub fn seq_number(&self) -> u32 {
        self.be32(field::SEQ.start)
    }
    /// Meaningful only when the ACK flag is set.
    pub fn ack_number(&self) -> u32 {
        self.be32(field::ACK.start)
    }
    /// The data offset in bytes: header plus options, 20..=60.
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[field::OFF_FLAGS.start] >> 4) * 4
    }
    /// All nine flag bits; the three reserved bits are dropped.
    pub fn flags(&self) -> TcpFlags {
        TcpFlags::from_bits_truncate(self.be16(field::OFF_FLAGS.start))
    }
    /// FIN: the sender has no more data.
    pub fn fin(&self) -> bool {
        self.flags().contains(TcpFlags::FIN)
    }
    /// SYN: opens a connection; carries the initial sequence number.
    pub fn syn(&self) -> bool {
        self.flags().contains(TcpFlags::SYN)
    }
    /// RST: aborts the connection.
    pub fn rst(&self) -> bool {
        self.flags().contains(TcpFlags::RST)
    }
    /// PSH: the receiver should hand the data to the application now.
    pub fn psh(&self) -> bool {
        self.flags().contains(TcpFlags::PSH)
    }
    /// ACK: the acknowledgment number is valid (set on all but the first SYN).
    pub fn ack(&self) -> bool {
        self.flags().contains(TcpFlags::ACK)
    }
    /// URG: the urgent pointer is valid.
    pub fn urg(&self) -> bool {
        self.flags().contains(TcpFlags::URG)
    }
    /// ECE: ECN-Echo (RFC 3168), or one bit of the AccECN counter.
    pub fn ece(&self) -> bool {
        self.flags().contains(TcpFlags::ECE)
    }
    /// CWR: congestion window reduced (RFC 3168), or one bit of the AccECN
    /// counter.
    pub fn cwr(&self) -> bool {
        self.flags().contains(TcpFlags::CWR)
    }
    /// The AccECN flag (RFC 9768), formerly NS.
    pub fn ae(&self) -> bool {
        self.flags().contains(TcpFlags::AE)
    }
    /// The AccECN ACE counter, `AE|CWR|ECE` as 0..=7 (see [`TcpFlags::ace`]).
    pub fn ace(&self) -> u8 {
        self.flags().ace()
    }
    /// The advertised window as sent, before any window scaling.
    pub fn window(&self) -> u16 {
        self.be16(field::WINDOW.start)
    }
    /// The checksum field as received (see `verify_checksum`).
    pub fn checksum(&self) -> u16 {
        self.be16(field::CHECKSUM.start)
    }
    /// Urgent pointer: offset from the sequence number, valid only with URG.
    pub fn urgent_pointer(&self) -> u16 {
        self.be16(field::URGENT.start)
    }
    /// The raw options area (may end in padding).
    pub fn options_bytes(&self) -> &[u8] {
        &self.b()[HEADER_LEN..self.header_len()]
    }
    /// The options in order; a malformed one ends the walk with an `Err`.
    pub fn options(&self) -> TcpOptionIter<'_> {
        TcpOptionIter::new(self.options_bytes())
    }
    /// The data after the header.
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..]
    }
    /// Segment length: header, options and data.
    pub fn len(&self) -> usize {
        self.b().len()
    }
    /// Never true: a checked segment holds at least the fixed header.
    pub fn is_empty(&self) -> bool {
        self.b().is_empty()
    }
    /// Checks the checksum over the pseudo-header and the whole segment.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        let sum = checksum::pseudo_header_ip(src, dst, PROTOCOL, self.len());
        checksum::finish(checksum::add(sum, self.b())) == 0
    }
    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    fn put(&mut self, range: core::ops::Range<usize>, bytes: &[u8]) {
        self.buffer.as_mut()[range].copy_from_slice(bytes);
    }

    /// Writes the source port; the checksum is left stale (see `fill_checksum`).
    pub fn set_src_port(&mut self, port: u16) {
        self.put(field::SRC_PORT, &port.to_be_bytes());
    }
    /// Writes the destination port; the checksum is left stale.
    pub fn set_dst_port(&mut self, port: u16) {
        self.put(field::DST_PORT, &port.to_be_bytes());
    }
    /// Writes the sequence number; the checksum is left stale.
    pub fn set_seq_number(&mut self, seq: u32) {
        self.put(field::SEQ, &seq.to_be_bytes());
    }
    /// Writes the acknowledgment number; the checksum is left stale.
    pub fn set_ack_number(&mut self, ack: u32) {
        self.put(field::ACK, &ack.to_be_bytes());
    }
    /// Replaces all nine flags; the data offset and reserved bits stay.
    pub fn set_flags(&mut self, flags: TcpFlags) {
        let old = self.be16(field::OFF_FLAGS.start);
        let new = (old & !FLAGS_MASK) | flags.bits();
        self.put(field::OFF_FLAGS, &new.to_be_bytes());
    }
    /// Writes the window field as sent, before scaling; the checksum is left
    /// stale.
    pub fn set_window(&mut self, window: u16) {
        self.put(field::WINDOW, &window.to_be_bytes());
    }
    /// Writes the checksum field as given.
    pub fn set_checksum(&mut self, check: u16) {
        self.put(field::CHECKSUM, &check.to_be_bytes());
    }
    /// Writes the urgent pointer; the checksum is left stale.
    pub fn set_urgent_pointer(&mut self, urgent: u16) {
        self.put(field::URGENT, &urgent.to_be_bytes());
    }
    /// The options area, to fill with [`option::emit_options`].
    pub fn options_bytes_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..h]
    }
    /// The data after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        &mut self.buffer.as_mut()[h..]
    }
    /// Recomputes the checksum after the segment was edited.
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        self.set_checksum(0);
        let sum = checksum::pseudo_header_ip(src, dst, PROTOCOL, self.len());
        let c = checksum::finish(checksum::add(sum, self.b()));
        self.set_checksum(c);
    }
}

/// A parsed TCP header: every field, options in wire order without padding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number, modulo 2^32.
    pub seq_number: u32,
    /// Sent as is; meaningful only with [`TcpFlags::ACK`].
    pub ack_number: u32,
    /// The nine flags.
    pub flags: TcpFlags,
    /// As sent, before window scaling.
    pub window: u16,
    /// Urgent pointer, meaningful only with URG.
    pub urgent_pointer: u16,
    /// Never holds [`TcpOption::EndOfList`]: parsing stops there and
    /// emitting pads with it.
    pub options: Vec<TcpOption>,
}

impl TcpRepr {
    /// Parses a segment, verifying its checksum against the pseudo-header
    /// of `src` and `dst` and every option's length.
    pub fn parse<T: AsRef<[u8]>>(p: &TcpPacket<T>, src: IpAddr, dst: IpAddr) -> Result<Self> {
        if !p.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum);
        }
        let mut options = Vec::new();
        for o in p.options() {
            match o? {
                TcpOption::EndOfList => break,
                o => options.push(o),
            }
        }
        Ok(TcpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq_number: p.seq_number(),
            ack_number: p.ack_number(),
            flags: p.flags(),
            window: p.window(),
            urgent_pointer: p.urgent_pointer(),
            options,
        })
    }

    /// Header bytes [`TcpRepr::emit`] writes: 20 plus options padded to 4.
    /// Over 60 means the options do not fit and emit will refuse.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + option::padded_len(&self.options)
    }

    /// Writes header, options and `payload` into `buf`, checksum filled in
    /// for `src` and `dst`. Reserved bits are written as zero.
    pub fn emit(&self, buf: &mut [u8], src: IpAddr, dst: IpAddr, payload: &[u8]) -> Result<()> {
        if self.options.contains(&TcpOption::EndOfList) {
            return Err(WireError::Malformed("tcp repr holds end-of-list"));
        }
        let header_len = self.header_len();
        if header_len > MAX_HEADER_LEN {
            return Err(WireError::Malformed("tcp options over 40 bytes"));
        }
        let len = header_len + payload.len();
        let have = buf.len();
        let seg = buf
            .get_mut(..len)
            .ok_or(WireError::Truncated { need: len, have })?;
        // header_len / 4 <= 15, so the data offset fits its 4 bits.
        let off_flags = ((header_len as u16 / 4) << 12) | self.flags.bits();
        seg[field::SRC_PORT].copy_from_slice(&self.src_port.to_be_bytes());
        seg[field::DST_PORT].copy_from_slice(&self.dst_port.to_be_bytes());
        seg[field::SEQ].copy_from_slice(&self.seq_number.to_be_bytes());
        seg[field::ACK].copy_from_slice(&self.ack_number.to_be_bytes());
        seg[field::OFF_FLAGS].copy_from_slice(&off_flags.to_be_bytes());
        seg[field::WINDOW].copy_from_slice(&self.window.to_be_bytes());
        seg[field::CHECKSUM].copy_from_slice(&[0, 0]);
        seg[field::URGENT].copy_from_slice(&self.urgent_pointer.to_be_bytes());
        option::emit_options(&self.options, &mut seg[HEADER_LEN..header_len])?;
        seg[header_len..].copy_from_slice(payload);
        let sum = checksum::pseudo_header_ip(src, dst, PROTOCOL, len);
        let c = checksum::finish(checksum::add(sum, seg));
        seg[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        Ok(())
    }

    /// The MSS option's value, if present.
    pub fn mss(&self) -> Option<u16> {
        self.options.iter().find_map(|o| match o {
            TcpOption::Mss(v) => Some(*v),
            _ => None,
        })
    }
    /// The window-scale shift as sent, if present.
    pub fn window_scale(&self) -> Option<u8> {
        self.options.iter().find_map(|o| match o {
            TcpOption::WindowScale(v) => Some(*v),
            _ => None,
        })
    }
    /// `(tsval, tsecr)`, if a timestamps option is present.
    pub fn timestamps(&self) -> Option<(u32, u32)> {
        self.options.iter().find_map(|o| match o {
            TcpOption::Timestamps { tsval, tsecr } => Some((*tsval, *tsecr)),
            _ => None,
        })
    }
    /// The SACK blocks, empty when the segment carries none.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        self.options
            .iter()
            .find_map(|o| match o {
                TcpOption::Sack(b) => Some(b.as_slice()),
                _ => None,
            })
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{TCP4_DATA, TCP4_SYN, TCP6_DATA, TCP6_SYNACK};
    use std::net::{Ipv4Addr, Ipv6Addr};

    const V4_CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    const V4_SERVER: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
    const V6_CLIENT: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
    const V6_SERVER: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));

    /// A captured segment, the addresses it was checksummed with, and what
    /// it must parse to.
    struct Case {
        bytes: &'static [u8],
        src: IpAddr,
        dst: IpAddr,
        repr: TcpRepr,
        payload: &'static [u8],
    }

    fn case(
        bytes: &'static [u8],
        src: IpAddr,
        dst: IpAddr,
        repr: TcpRepr,
        payload: &'static [u8],
    ) -> Case {
        Case {
            bytes,
            src,
            dst,
            repr,
            payload,
        }
    }

    fn cases() -> Vec<Case> {
        let syn = TcpRepr {
            src_port: 46184,
            dst_port: 40001,
            seq_number: 0x81a7_d8d9,
            ack_number: 0,
            flags: TcpFlags::SYN | TcpFlags::ECE | TcpFlags::CWR,
            window: 64240,
            urgent_pointer: 0,
            options: vec![
                TcpOption::Mss(1460),
                TcpOption::SackPermitted,
                TcpOption::Timestamps {
                    tsval: 2_162_968_409,
                    tsecr: 0,
                },
                TcpOption::Nop,
                TcpOption::WindowScale(10),
            ],
        };
        let data4 = TcpRepr {
            src_port: 46184,
            dst_port: 40001,
            seq_number: 0x81a7_d8da,
            ack_number: 0x3ba8_4505,
            flags: TcpFlags::PSH | TcpFlags::ACK,
            window: 63,
            urgent_pointer: 0,
            options: vec![
                TcpOption::Nop,
                TcpOption::Nop,
                TcpOption::Timestamps {
                    tsval: 2_162_968_410,
                    tsecr: 2_721_227_455,
                },
            ],
        };
        let synack6 = TcpRepr {
            src_port: 40002,
            dst_port: 41224,
            seq_number: 0xe319_81c1,
            ack_number: 0xf446_9f94,
            flags: TcpFlags::SYN | TcpFlags::ACK | TcpFlags::ECE,
            window: 64260,
            urgent_pointer: 0,
            options: vec![
                TcpOption::Mss(1440),
                TcpOption::SackPermitted,
                TcpOption::Timestamps {
                    tsval: 3_480_831_655,
                    tsecr: 4_253_873_490,
                },
                TcpOption::Nop,
                TcpOption::WindowScale(10),
            ],
        };
        let data6 = TcpRepr {
            src_port: 41224,
            dst_port: 40002,
            seq_number: 0xf446_9f94,
            ack_number: 0xe319_81c2,
            flags: TcpFlags::PSH | TcpFlags::ACK,
            window: 64,
            urgent_pointer: 0,
            options: vec![
                TcpOption::Nop,
                TcpOption::Nop,
                TcpOption::Timestamps {
                    tsval: 4_253_873_490,
                    tsecr: 3_480_831_655,
                },
            ],
        };
        vec![
            case(&TCP4_SYN[20..], V4_CLIENT, V4_SERVER, syn, b""),
            case(&TCP4_DATA[20..], V4_CLIENT, V4_SERVER, data4, b"hello\n"),
            case(&TCP6_SYNACK[40..], V6_SERVER, V6_CLIENT, synack6, b""),
            case(&TCP6_DATA[40..], V6_CLIENT, V6_SERVER, data6, b"hello\n"),
        ]
    }

    #[test]
    fn deconstruct() {
        let p = TcpPacket::new_checked(&TCP4_SYN[20..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (46184, 40001));
        assert_eq!((p.seq_number(), p.ack_number()), (0x81a7_d8d9, 0));
        assert_eq!(p.header_len(), 40);
        assert!(p.syn() && p.ece() && p.cwr());
        assert!(!p.ack() && !p.fin() && !p.rst() && !p.psh() && !p.urg() && !p.ae());
        assert_eq!(p.ace(), 0b011);
        assert_eq!(
            (p.window(), p.checksum(), p.urgent_pointer()),
            (64240, 0x54d7, 0)
        );
        assert_eq!(p.options().count(), 5);
        assert!(p.payload().is_empty());
        assert!(p.verify_checksum(V4_CLIENT, V4_SERVER));

        let p = TcpPacket::new_checked(&TCP6_DATA[40..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (41224, 40002));
        assert_eq!(p.header_len(), 32);
        assert!(p.ack() && p.psh() && !p.syn() && !p.ece() && !p.cwr() && !p.ae());
        assert_eq!(p.payload(), b"hello\n");
        assert!(p.verify_checksum(V6_CLIENT, V6_SERVER));
    }

    #[test]
    fn construct() {
        for Case {
            bytes,
            src,
            dst,
            repr,
            payload,
        } in cases()
        {
            // Keep only the data offset; every other byte comes from setters.
            let mut buf = vec![0u8; bytes.len()];
            buf[12] = bytes[12] & 0xf0;
            let mut p = TcpPacket::new_checked(&mut buf[..]).unwrap();
            p.set_src_port(repr.src_port);
            p.set_dst_port(repr.dst_port);
            p.set_seq_number(repr.seq_number);
            p.set_ack_number(repr.ack_number);
            p.set_flags(repr.flags);
            p.set_window(repr.window);
            p.set_urgent_pointer(repr.urgent_pointer);
            option::emit_options(&repr.options, p.options_bytes_mut()).unwrap();
            p.payload_mut().copy_from_slice(payload);
            p.fill_checksum(src, dst);
            assert_eq!(buf, bytes);
        }
    }

    #[test]
    fn parse() {
        for Case {
            bytes,
            src,
            dst,
            repr,
            payload,
        } in cases()
        {
            let p = TcpPacket::new_checked(bytes).unwrap();
            assert_eq!(TcpRepr::parse(&p, src, dst).unwrap(), repr);
            assert_eq!(p.payload(), payload);
        }
        let syn = &cases()[0].repr;
        assert_eq!(syn.mss(), Some(1460));
        assert_eq!(syn.window_scale(), Some(10));
        assert_eq!(syn.timestamps(), Some((2_162_968_409, 0)));
        assert!(syn.sack_blocks().is_empty());
    }

    #[test]
    fn emit() {
        for Case {
            bytes,
            src,
            dst,
            repr,
            payload,
        } in cases()
        {
            assert_eq!(repr.header_len() + payload.len(), bytes.len());
            let mut buf = vec![0xa5u8; bytes.len()];
            repr.emit(&mut buf, src, dst, payload).unwrap();
            assert_eq!(buf, bytes);
        }
    }

    #[test]
    fn ae_bit_is_the_low_bit_of_byte_12() {
        let mut buf = TCP4_DATA[20..].to_vec();
        let mut p = TcpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_flags(p.flags() | TcpFlags::AE);
        assert!(p.ae() && p.ack() && p.psh());
        assert_eq!(p.header_len(), 32);
        assert_eq!(p.ace(), 0b100);
        assert_eq!(buf[12], 0x81);
        // Reserved bits survive a flag rewrite.
        buf[12] |= 0x0e;
        let mut p = TcpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_flags(TcpFlags::ACK);
        assert_eq!((buf[12], buf[13]), (0x8e, 0x10));
    }

    #[test]
    fn corrupted_segment_fails_checksum() {
        for Case {
            bytes, src, dst, ..
        } in cases()
        {
            let mut b = bytes.to_vec();
            let last = b.len() - 1;
            b[last] ^= 0x01;
            let p = TcpPacket::new_checked(&b[..]).unwrap();
            assert_eq!(TcpRepr::parse(&p, src, dst), Err(WireError::BadChecksum));
            // The same bytes checked against another host's address fail too.
            let p = TcpPacket::new_checked(bytes).unwrap();
            let other = match dst {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::new(192, 0, 2, 3)),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 3)),
            };
            assert_eq!(TcpRepr::parse(&p, src, other), Err(WireError::BadChecksum));
        }
    }

    #[test]
    fn rejects_bad_data_offset_and_options() {
        let seg = &TCP4_SYN[20..];
        assert!(matches!(
            TcpPacket::new_checked(&seg[..19]),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            TcpPacket::new_checked(&seg[..39]),
            Err(WireError::Truncated { .. })
        ));
        let mut b = seg.to_vec();
        b[12] = 0x40;
        assert!(matches!(
            TcpPacket::new_checked(&b[..]),
            Err(WireError::Malformed(_))
        ));
        // A MSS option claiming 5 bytes: a parse error, never a panic.
        let mut b = seg.to_vec();
        b[21] = 5;
        let mut p = TcpPacket::new_checked(&mut b[..]).unwrap();
        p.fill_checksum(V4_CLIENT, V4_SERVER);
        assert!(matches!(
            TcpRepr::parse(&p, V4_CLIENT, V4_SERVER),
            Err(WireError::Malformed(_))
        ));
    }

    #[test]
    fn emit_refuses_oversized_options_and_short_buffers() {
        let mut r = cases()[0].repr.clone();
        let mut buf = [0u8; 80];
        r.options.extend(std::iter::repeat_n(TcpOption::Mss(1), 6));
        assert_eq!(r.header_len(), 64);
        assert!(r.emit(&mut buf, V4_CLIENT, V4_SERVER, b"").is_err());
        r.options.truncate(5);
        assert!(r.emit(&mut buf[..39], V4_CLIENT, V4_SERVER, b"").is_err());
        r.options.push(TcpOption::EndOfList);
        assert!(r.emit(&mut buf, V4_CLIENT, V4_SERVER, b"").is_err());
    }
}
