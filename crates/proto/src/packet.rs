//! Packet headers: the long header of handshake packets, the short header
//! of 1-RTT packets and the version negotiation packet (docs/PROTOCOL.md §2).
//!
//! ```text
//! long:  1 1 T T 0 0 P P | version (32) | dcid len (8) | dcid | scid len (8) | scid
//!        | length (varint: pn + payload) | packet number (P+1 bytes) | payload
//! short: 0 1 0 0 0 0 P P | dcid (length chosen by the receiver) | packet number | payload
//! vn:    1 1 x x x x x x | version 0 | dcid len | dcid | scid len | scid | versions (32 each)
//! ```
//!
//! [`HeaderView`] validates every length in `new_checked`, after which no
//! getter can panic. [`Header`] is the parsed form; `emit` writes it back.
//! Packet numbers travel truncated to 1-4 bytes and are expanded with the
//! RFC 9000 §A.3 rule ([`decode_packet_number`]).

use crate::varint::{self, DecodeError, Reader};

/// Brisk wire version 1.
pub const VERSION_1: u32 = 0x4252_0001;
/// The version field of a version negotiation packet.
pub(crate) const VERSION_NEGOTIATION: u32 = 0;
/// Versions this implementation speaks, most preferred first.
pub(crate) const SUPPORTED_VERSIONS: [u32; 1] = [VERSION_1];
/// The longest connection ID a long header may carry.
pub(crate) const MAX_CID_LEN: usize = 20;
/// The length of the connection IDs this implementation issues.
pub const LOCAL_CID_LEN: usize = 8;

const FORM_LONG: u8 = 0x80;
const FIXED_BIT: u8 = 0x40;
const LONG_RESERVED: u8 = 0x0c;
const SHORT_RESERVED: u8 = 0x3c;
const PN_LEN_MASK: u8 = 0x03;

#[cfg(test)]
/// True for versions of the form 0x?a?a?a?a, which are reserved so that
/// peers exercise version negotiation (as in RFC 9000 §15).
pub(crate) fn is_greased_version(v: u32) -> bool {
    v & 0x0f0f_0f0f == 0x0a0a_0a0a
}

/// An opaque connection ID of 0 to 20 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ConnectionId {
    len: u8,
    bytes: [u8; MAX_CID_LEN],
}

impl ConnectionId {
    /// `None` when `b` is longer than [`MAX_CID_LEN`].
    pub fn new(b: &[u8]) -> Option<Self> {
        if b.len() > MAX_CID_LEN {
            return None;
        }
        let mut bytes = [0; MAX_CID_LEN];
        bytes[..b.len()].copy_from_slice(b);
        Some(ConnectionId {
            len: b.len() as u8,
            bytes,
        })
    }

    /// The ID's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Whether `b` is this ID: for IDs of our own length one 64-bit
    /// compare, where a slice compare calls `memcmp` (twice per datagram
    /// received).
    #[inline]
    pub(crate) fn matches(&self, b: &[u8]) -> bool {
        match (
            <[u8; LOCAL_CID_LEN]>::try_from(b),
            self.bytes.first_chunk::<LOCAL_CID_LEN>(),
        ) {
            (Ok(b), Some(ours)) if self.len() == LOCAL_CID_LEN => b == *ours,
            _ => b == self.as_bytes(),
        }
    }

    /// Length in bytes, 0 to 20.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True for the zero-length ID.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for ConnectionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// The type of a long-header packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongType {
    /// Carries the client's first handshake message.
    Initial,
    /// Carries later handshake messages.
    Handshake,
}

impl LongType {
    fn bits(self) -> u8 {
        match self {
            LongType::Initial => 0,
            LongType::Handshake => 1,
        }
    }
}

/// A packet number as it travels: its low `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncatedPn {
    /// The low `len` bytes of the full packet number.
    pub value: u32,
    /// 1 to 4 bytes.
    pub len: u8,
}

impl TruncatedPn {
    /// RFC 9000 §A.2: enough bytes to represent twice the distance to the
    /// largest packet number the peer has acknowledged.
    pub(crate) fn encode(full: u64, largest_acked: Option<u64>) -> Self {
        let unacked = match largest_acked {
            Some(l) => full.saturating_sub(l),
            None => full.saturating_add(1),
        };
        let bits = 64 - unacked.leading_zeros() + 1;
        let len = bits.div_ceil(8).clamp(1, 4) as u8;
        let mask = if len == 4 {
            u32::MAX
        } else {
            (1u32 << (8 * u32::from(len))) - 1
        };
        TruncatedPn {
            value: (full as u32) & mask,
            len,
        }
    }
}

/// RFC 9000 §A.3: the packet number closest to `largest + 1` whose low
/// bits match the truncated value.
pub(crate) fn decode_packet_number(largest: Option<u64>, truncated: TruncatedPn) -> u64 {
    let expected = largest.map_or(0, |l| l + 1);
    let pn_nbits = 8 * u32::from(truncated.len);
    let pn_win = 1u64 << pn_nbits;
    let pn_hwin = pn_win / 2;
    let pn_mask = pn_win - 1;
    let candidate = (expected & !pn_mask) | u64::from(truncated.value);
    if candidate + pn_hwin <= expected && candidate < (1u64 << 62) - pn_win {
        candidate + pn_win
    } else if candidate > expected + pn_hwin && candidate >= pn_win {
        candidate - pn_win
    } else {
        candidate
    }
}

/// A validated view of one packet at the start of `buffer` (a datagram may
/// hold several coalesced long-header packets; see [`HeaderView::packet_len`]).
#[derive(Debug, Clone)]
pub struct HeaderView<T: AsRef<[u8]>> {
    buffer: T,
    at: Layout,
}

/// Offsets found while validating: (start, len) of each connection ID, where
/// the packet number starts and where the packet ends. A datagram's first
/// header is validated once, by the endpoint that routes it; its
/// connection reads the same bytes again with the offsets found then.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    dcid: (usize, usize),
    scid: (usize, usize),
    pn_at: usize,
    end: usize,
}

impl<T: AsRef<[u8]>> HeaderView<T> {
    /// Validates lengths; `short_cid_len` is the length of the connection
    /// IDs the receiver issued (short headers do not carry a length).
    pub fn new_checked(buffer: T, short_cid_len: usize) -> Result<Self, DecodeError> {
        let at = Layout::find(buffer.as_ref(), short_cid_len)?;
        Ok(HeaderView { buffer, at })
    }

    /// The offsets validation found, to view the same bytes again with
    /// [`HeaderView::with_layout`] without validating them twice.
    pub(crate) fn layout(&self) -> Layout {
        self.at
    }

    /// A view of `buffer` with offsets a [`HeaderView::new_checked`] of the
    /// very same bytes found.
    pub(crate) fn with_layout(buffer: T, at: Layout) -> Self {
        debug_assert!(at.end <= buffer.as_ref().len());
        HeaderView { buffer, at }
    }
}

impl Layout {
    fn find(b: &[u8], short_cid_len: usize) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b);
        let first = r.u8()?;
        if first & FIXED_BIT == 0 {
            return Err(DecodeError::Malformed("fixed bit clear"));
        }
        if first & FORM_LONG == 0 {
            if first & SHORT_RESERVED != 0 {
                return Err(DecodeError::Malformed("reserved bits set"));
            }
            let dcid_at = r.position();
            r.bytes(short_cid_len)?;
            let pn_at = r.position();
            r.bytes(usize::from(first & PN_LEN_MASK) + 1)?;
            return Ok(Layout {
                dcid: (dcid_at, short_cid_len),
                scid: (pn_at, 0),
                pn_at,
                end: b.len(),
            });
        }
        let version = r.u32()?;
        let dcid_len = usize::from(r.u8()?);
        if dcid_len > MAX_CID_LEN {
            return Err(DecodeError::Malformed("dcid too long"));
        }
        let dcid_at = r.position();
        r.bytes(dcid_len)?;
        let scid_len = usize::from(r.u8()?);
        if scid_len > MAX_CID_LEN {
            return Err(DecodeError::Malformed("scid too long"));
        }
        let scid_at = r.position();
        r.bytes(scid_len)?;
        if version != VERSION_NEGOTIATION && !SUPPORTED_VERSIONS.contains(&version) {
            // Another version's packet: only the version-independent part
            // (form bit, version, connection IDs) has a meaning here.
            return Ok(Layout {
                dcid: (dcid_at, dcid_len),
                scid: (scid_at, scid_len),
                pn_at: r.position(),
                end: b.len(),
            });
        }
        if version == VERSION_NEGOTIATION {
            if !r.remaining().is_multiple_of(4) {
                return Err(DecodeError::Malformed("version list"));
            }
            let pn_at = r.position();
            return Ok(Layout {
                dcid: (dcid_at, dcid_len),
                scid: (scid_at, scid_len),
                pn_at,
                end: b.len(),
            });
        }
        if first & LONG_RESERVED != 0 {
            return Err(DecodeError::Malformed("reserved bits set"));
        }
        if (first >> 4) & 0x03 > 1 {
            return Err(DecodeError::Malformed("reserved packet type"));
        }
        let length = r.varint_len()?;
        let pn_at = r.position();
        let pn_len = usize::from(first & PN_LEN_MASK) + 1;
        if length < pn_len {
            return Err(DecodeError::Malformed("length shorter than packet number"));
        }
        r.bytes(length)?;
        Ok(Layout {
            dcid: (dcid_at, dcid_len),
            scid: (scid_at, scid_len),
            pn_at,
            end: pn_at + length,
        })
    }
}

impl<T: AsRef<[u8]>> HeaderView<T> {
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub(crate) fn is_long(&self) -> bool {
        self.b()[0] & FORM_LONG != 0
    }

    /// 0 for short headers.
    pub fn version(&self) -> u32 {
        if !self.is_long() {
            return 0;
        }
        u32::from_be_bytes([self.b()[1], self.b()[2], self.b()[3], self.b()[4]])
    }

    /// A Version Negotiation packet (a long header with version 0).
    pub fn is_version_negotiation(&self) -> bool {
        self.is_long() && self.version() == VERSION_NEGOTIATION
    }

    /// A long header of a version this implementation does not speak.
    pub(crate) fn is_foreign_version(&self) -> bool {
        self.is_long()
            && !self.is_version_negotiation()
            && !SUPPORTED_VERSIONS.contains(&self.version())
    }

    /// `None` for short headers, version negotiation and foreign versions.
    pub(crate) fn long_type(&self) -> Option<LongType> {
        if !self.is_long() || self.is_version_negotiation() || self.is_foreign_version() {
            return None;
        }
        match (self.b()[0] >> 4) & 0x03 {
            0 => Some(LongType::Initial),
            _ => Some(LongType::Handshake),
        }
    }

    /// The destination connection ID, by which endpoints route packets.
    pub fn dcid(&self) -> &[u8] {
        &self.b()[self.at.dcid.0..self.at.dcid.0 + self.at.dcid.1]
    }

    /// Empty for short headers.
    pub fn scid(&self) -> &[u8] {
        &self.b()[self.at.scid.0..self.at.scid.0 + self.at.scid.1]
    }

    /// The truncated packet number (zero-length for version negotiation and
    /// foreign versions).
    pub fn packet_number(&self) -> TruncatedPn {
        if self.is_version_negotiation() || self.is_foreign_version() {
            return TruncatedPn { value: 0, len: 0 };
        }
        let len = (self.b()[0] & PN_LEN_MASK) + 1;
        let value = pn_value(&self.b()[self.at.pn_at..self.at.pn_at + usize::from(len)]);
        TruncatedPn { value, len }
    }

    /// Bytes from the start of the packet through the packet number: the
    /// associated data of packet protection.
    pub fn header_len(&self) -> usize {
        self.packet_number_and_header_len().1
    }

    /// [`packet_number`](Self::packet_number) and
    /// [`header_len`](Self::header_len) from one read of the number.
    pub(crate) fn packet_number_and_header_len(&self) -> (TruncatedPn, usize) {
        let pn = self.packet_number();
        (pn, self.at.pn_at + usize::from(pn.len))
    }

    /// [`packet_number_and_header_len`](Self::packet_number_and_header_len)
    /// of a short header, `None` for a long one: the one test of the form
    /// bit stands for the version checks a long header needs.
    pub(crate) fn short_number_and_header_len(&self) -> Option<(TruncatedPn, usize)> {
        let first = *self.b().first()?;
        if first & FORM_LONG != 0 {
            return None;
        }
        let len = (first & PN_LEN_MASK) + 1;
        let end = self.at.pn_at + usize::from(len);
        let value = pn_value(self.b().get(self.at.pn_at..end)?);
        Some((TruncatedPn { value, len }, end))
    }

    /// The bytes after the header (ciphertext, a handshake message, or the
    /// version list).
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..self.at.end]
    }

    /// This packet's length; a datagram's next coalesced packet starts here.
    pub(crate) fn packet_len(&self) -> usize {
        self.at.end
    }

    /// The versions a version negotiation packet lists.
    pub fn versions(&self) -> impl Iterator<Item = u32> + '_ {
        let list = if self.is_version_negotiation() {
            self.payload()
        } else {
            &[]
        };
        list.chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
    }
}

/// The source connection ID of the long-header packet at the start of
/// `head`, read from the version-independent part only (flags, version,
/// both IDs), so a cut copy is enough: an ICMP error quotes just the start
/// of the datagram that drew it. `None` for a short header or a quote too
/// short to hold the ID.
pub fn long_header_source_cid(head: &[u8]) -> Option<&[u8]> {
    let cid_len = |len: u8| Some(usize::from(len)).filter(|l| *l <= MAX_CID_LEN);
    let (&first, rest) = head.split_first()?;
    if first & FORM_LONG == 0 {
        return None;
    }
    let rest = rest.get(4..)?; // version
    let (&dcid_len, rest) = rest.split_first()?;
    let rest = rest.get(cid_len(dcid_len)?..)?;
    let (&scid_len, rest) = rest.split_first()?;
    rest.get(..cid_len(scid_len)?)
}

/// A parsed packet header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Header {
    /// A long header: Initial or Handshake.
    Long {
        /// Initial or Handshake.
        ty: LongType,
        /// The protocol version.
        version: u32,
        /// Destination connection ID.
        dcid: ConnectionId,
        /// Source connection ID.
        scid: ConnectionId,
        /// The packet number as sent.
        pn: TruncatedPn,
        /// Bytes of payload after the packet number.
        payload_len: usize,
    },
    /// A short (1-RTT) header.
    Short {
        /// Destination connection ID (our length, known from context).
        dcid: ConnectionId,
        /// The packet number as sent.
        pn: TruncatedPn,
    },
    /// A Version Negotiation packet.
    VersionNegotiation {
        /// The client's source connection ID, echoed.
        dcid: ConnectionId,
        /// The client's destination connection ID, echoed.
        scid: ConnectionId,
        /// The versions the server speaks.
        versions: Vec<u32>,
    },
}

impl Header {
    /// Fails for foreign versions, whose headers have no meaning here.
    #[cfg(test)]
    pub(crate) fn parse<T: AsRef<[u8]>>(v: &HeaderView<T>) -> Result<Self, DecodeError> {
        let cid = |b: &[u8]| ConnectionId::new(b).ok_or(DecodeError::Malformed("cid length"));
        if v.is_foreign_version() {
            return Err(DecodeError::Malformed("unsupported version"));
        }
        if v.is_version_negotiation() {
            return Ok(Header::VersionNegotiation {
                dcid: cid(v.dcid())?,
                scid: cid(v.scid())?,
                versions: v.versions().collect(),
            });
        }
        match v.long_type() {
            Some(ty) => Ok(Header::Long {
                ty,
                version: v.version(),
                dcid: cid(v.dcid())?,
                scid: cid(v.scid())?,
                pn: v.packet_number(),
                payload_len: v.payload().len(),
            }),
            None => Ok(Header::Short {
                dcid: cid(v.dcid())?,
                pn: v.packet_number(),
            }),
        }
    }

    /// Appends the header; the payload (of `payload_len` bytes for long
    /// headers) follows it.
    pub(crate) fn emit(&self, out: &mut Vec<u8>) {
        match self {
            Header::Long {
                ty,
                version,
                dcid,
                scid,
                pn,
                payload_len,
            } => {
                out.push(FORM_LONG | FIXED_BIT | (ty.bits() << 4) | (pn.len - 1));
                out.extend_from_slice(&version.to_be_bytes());
                out.push(dcid.len() as u8);
                out.extend_from_slice(dcid.as_bytes());
                out.push(scid.len() as u8);
                out.extend_from_slice(scid.as_bytes());
                varint::write(out, (usize::from(pn.len) + payload_len) as u64);
                emit_pn(out, *pn);
            }
            Header::Short { dcid, pn } => {
                // Put together on the stack and appended at once: one
                // copy of known bounds instead of three (one per packet).
                let mut h = [0u8; 1 + MAX_CID_LEN + 4];
                h[0] = FIXED_BIT | (pn.len - 1);
                h[1..=MAX_CID_LEN].copy_from_slice(&dcid.bytes);
                let at = 1 + dcid.len();
                let pn_len = usize::from(pn.len);
                // The low `pn_len` bytes of the number, first in the word.
                let shifted = pn
                    .value
                    .checked_shl(8 * (4 - u32::from(pn.len)))
                    .unwrap_or(0);
                h[at..at + 4].copy_from_slice(&shifted.to_be_bytes());
                out.extend_from_slice(&h[..at + pn_len]);
            }
            Header::VersionNegotiation {
                dcid,
                scid,
                versions,
            } => {
                out.push(FORM_LONG | FIXED_BIT);
                out.extend_from_slice(&VERSION_NEGOTIATION.to_be_bytes());
                out.push(dcid.len() as u8);
                out.extend_from_slice(dcid.as_bytes());
                out.push(scid.len() as u8);
                out.extend_from_slice(scid.as_bytes());
                for v in versions {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
        }
    }

    /// Bytes `emit` writes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Header::Long {
                dcid,
                scid,
                pn,
                payload_len,
                ..
            } => {
                let length = usize::from(pn.len) + payload_len;
                7 + dcid.len()
                    + scid.len()
                    + varint::size(length as u64).unwrap_or(8)
                    + usize::from(pn.len)
            }
            Header::Short { dcid, pn } => 1 + dcid.len() + usize::from(pn.len),
            Header::VersionNegotiation {
                dcid,
                scid,
                versions,
            } => 7 + dcid.len() + scid.len() + 4 * versions.len(),
        }
    }
}

/// A truncated packet number's value from its big-endian bytes.
fn pn_value(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0u32, |acc, &x| (acc << 8) | u32::from(x))
}

fn emit_pn(out: &mut Vec<u8>, pn: TruncatedPn) {
    let bytes = pn.value.to_be_bytes();
    out.extend_from_slice(&bytes[4 - usize::from(pn.len)..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cid(b: &[u8]) -> ConnectionId {
        ConnectionId::new(b).unwrap()
    }

    #[test]
    fn a_cut_long_header_still_names_its_sender() {
        let mut p = vec![0xC0, 0x42, 0x52, 0x00, 0x01, 8];
        p.extend_from_slice(&[9; 8]);
        p.push(8);
        p.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        p.extend_from_slice(&[0x44, 0xD0, 0, 1, 2, 3]);
        let sender = &[1, 2, 3, 4, 5, 6, 7, 8][..];
        assert_eq!(long_header_source_cid(&p), Some(sender));
        // Quoted up to just past the source ID is enough; less says nothing.
        assert_eq!(long_header_source_cid(&p[..23]), Some(sender));
        for cut in 0..23 {
            assert_eq!(long_header_source_cid(&p[..cut]), None, "cut at {cut}");
        }
        let mut short = p.clone();
        short[0] = 0x40;
        assert_eq!(long_header_source_cid(&short), None);
        let mut dcid_too_long = p.clone();
        dcid_too_long[5] = 21;
        assert_eq!(long_header_source_cid(&dcid_too_long), None);
        let mut scid_too_long = p.clone();
        scid_too_long[14] = 200;
        assert_eq!(long_header_source_cid(&scid_too_long), None);
        let mut empty = vec![0xC0, 0x42, 0x52, 0x00, 0x01, 0, 0];
        assert_eq!(long_header_source_cid(&empty), Some(&[][..]));
        empty.truncate(6);
        assert_eq!(long_header_source_cid(&empty), None);
    }

    /// An Initial: version 1, dcid 01 02, scid aa, 2-byte pn 0x0102, 3 payload bytes.
    const LONG: [u8; 16] = [
        0xc1, 0x42, 0x52, 0x00, 0x01, 0x02, 0x01, 0x02, 0x01, 0xaa, 0x05, 0x01, 0x02, 0xad, 0xbe,
        0xef,
    ];

    fn long_repr() -> Header {
        Header::Long {
            ty: LongType::Initial,
            version: VERSION_1,
            dcid: cid(&[1, 2]),
            scid: cid(&[0xaa]),
            pn: TruncatedPn {
                value: 0x0102,
                len: 2,
            },
            payload_len: 3,
        }
    }

    /// A short header: 8-byte dcid, 1-byte pn 0x2a, then payload.
    const SHORT: [u8; 12] = [0x40, 1, 2, 3, 4, 5, 6, 7, 8, 0x2a, 0xf0, 0x0d];

    #[test]
    fn deconstruct_long() {
        let v = HeaderView::new_checked(&LONG[..], LOCAL_CID_LEN).unwrap();
        assert!(v.is_long());
        assert_eq!(v.long_type(), Some(LongType::Initial));
        assert_eq!(v.version(), VERSION_1);
        assert_eq!((v.dcid(), v.scid()), (&[1u8, 2][..], &[0xaau8][..]));
        assert_eq!(
            v.packet_number(),
            TruncatedPn {
                value: 0x0102,
                len: 2
            }
        );
        assert_eq!(v.header_len(), 13);
        assert_eq!(
            v.packet_number_and_header_len(),
            (v.packet_number(), v.header_len())
        );
        assert_eq!(v.payload(), &[0xad, 0xbe, 0xef]);
        assert_eq!(v.packet_len(), 16);
    }

    #[test]
    fn construct_long() {
        let mut out = Vec::new();
        long_repr().emit(&mut out);
        out.extend_from_slice(&[0xad, 0xbe, 0xef]);
        assert_eq!(out, LONG);
        assert_eq!(long_repr().len(), 13);
    }

    #[test]
    fn parse_long_and_short() {
        let v = HeaderView::new_checked(&LONG[..], LOCAL_CID_LEN).unwrap();
        assert_eq!(Header::parse(&v).unwrap(), long_repr());
        let v = HeaderView::new_checked(&SHORT[..], LOCAL_CID_LEN).unwrap();
        assert!(!v.is_long());
        assert_eq!(v.payload(), &[0xf0, 0x0d]);
        assert_eq!(
            Header::parse(&v).unwrap(),
            Header::Short {
                dcid: cid(&[1, 2, 3, 4, 5, 6, 7, 8]),
                pn: TruncatedPn {
                    value: 0x2a,
                    len: 1
                }
            }
        );
    }

    #[test]
    fn emit_short_and_version_negotiation() {
        let mut out = Vec::new();
        Header::Short {
            dcid: cid(&[1, 2, 3, 4, 5, 6, 7, 8]),
            pn: TruncatedPn {
                value: 0x2a,
                len: 1,
            },
        }
        .emit(&mut out);
        assert_eq!(out, SHORT[..10]);
        let vn = Header::VersionNegotiation {
            dcid: cid(&[7]),
            scid: cid(&[]),
            versions: vec![VERSION_1],
        };
        let mut out = Vec::new();
        vn.emit(&mut out);
        assert_eq!(out, [0xc0, 0, 0, 0, 0, 1, 7, 0, 0x42, 0x52, 0x00, 0x01]);
        let v = HeaderView::new_checked(&out[..], LOCAL_CID_LEN).unwrap();
        assert_eq!(Header::parse(&v).unwrap(), vn);
    }

    #[test]
    fn foreign_versions_expose_only_the_invariant_fields() {
        let b = [0xc3, 0x1a, 0x2a, 0x3a, 0x4a, 0x01, 0x07, 0x00, 0xff, 0xff];
        let v = HeaderView::new_checked(&b[..], 8).unwrap();
        assert!(v.is_foreign_version() && is_greased_version(v.version()));
        assert_eq!(
            (v.dcid(), v.scid(), v.long_type()),
            (&[7u8][..], &[][..], None)
        );
        assert_eq!(v.packet_number().len, 0);
        assert!(Header::parse(&v).is_err());
    }

    #[test]
    fn rejects_bad_headers() {
        let mut bad = LONG;
        bad[0] |= 0x04; // reserved bit
        assert!(HeaderView::new_checked(&bad[..], 8).is_err());
        let mut bad = LONG;
        bad[0] &= !FIXED_BIT;
        assert!(HeaderView::new_checked(&bad[..], 8).is_err());
        let mut bad = LONG;
        bad[5] = 21; // dcid length over 20
        assert!(HeaderView::new_checked(&bad[..], 8).is_err());
        for n in 0..LONG.len() {
            assert!(
                HeaderView::new_checked(&LONG[..n], 8).is_err(),
                "prefix {n}"
            );
        }
        assert!(HeaderView::new_checked(&SHORT[..9], 8).is_err());
    }

    #[test]
    fn packet_number_rfc_examples() {
        // RFC 9000 §A.2: 0xac5c02 with 0xabe8b3 acked needs 2 bytes;
        // 0xace8fe with 0xabe8b3 acked needs 3.
        assert_eq!(TruncatedPn::encode(0xac5c02, Some(0xabe8b3)).len, 2);
        assert_eq!(TruncatedPn::encode(0xace8fe, Some(0xabe8b3)).len, 3);
        // RFC 9000 §A.3: largest 0xa82f30ea, truncated 0x9b32 -> 0xa82f9b32.
        let t = TruncatedPn {
            value: 0x9b32,
            len: 2,
        };
        assert_eq!(decode_packet_number(Some(0xa82f30ea), t), 0xa82f9b32);
        assert_eq!(
            decode_packet_number(None, TruncatedPn { value: 0, len: 1 }),
            0
        );
    }

    proptest! {
        #[test]
        fn packet_numbers_round_trip(largest in 0u64..(1 << 40), ahead in 1u64..(1 << 20)) {
            let full = largest + ahead;
            let t = TruncatedPn::encode(full, Some(largest));
            prop_assert_eq!(decode_packet_number(Some(largest), t), full);
        }

        #[test]
        fn headers_round_trip(
            long in any::<bool>(),
            dcid in proptest::collection::vec(any::<u8>(), 0..=20),
            scid in proptest::collection::vec(any::<u8>(), 0..=20),
            pn in any::<u32>(),
            pn_len in 1u8..=4,
            payload in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let pn = TruncatedPn { value: if pn_len == 4 { pn } else { pn % (1 << (8 * u32::from(pn_len))) }, len: pn_len };
            let h = if long {
                Header::Long { ty: LongType::Handshake, version: VERSION_1, dcid: cid(&dcid), scid: cid(&scid), pn, payload_len: payload.len() }
            } else {
                Header::Short { dcid: cid(&dcid), pn }
            };
            let mut out = Vec::new();
            h.emit(&mut out);
            prop_assert_eq!(out.len(), h.len());
            out.extend_from_slice(&payload);
            let v = HeaderView::new_checked(&out[..], dcid.len()).unwrap();
            prop_assert_eq!(v.payload(), &payload[..]);
            prop_assert_eq!(Header::parse(&v).unwrap(), h);
            // A quote cut just past a long header's source ID names the
            // same sender; a short header names nobody.
            let quoted = if long { &out[..7 + dcid.len() + scid.len()] } else { &out[..] };
            prop_assert_eq!(long_header_source_cid(quoted), long.then_some(&scid[..]));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), cid_len in 0usize..21) {
            if let Ok(v) = HeaderView::new_checked(&bytes[..], cid_len) {
                let _ = Header::parse(&v);
                let _ = (v.payload(), v.scid(), v.versions().count());
                if v.is_long() {
                    prop_assert_eq!(long_header_source_cid(&bytes), Some(v.scid()));
                }
            }
            let _ = long_header_source_cid(&bytes);
        }
    }
}
