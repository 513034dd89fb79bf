//! Version-agnostic helpers over a whole IP datagram: what a queue, a link
//! or a capture needs without caring whether it is IPv4 or IPv6.

use crate::ipv4::{Ipv4Packet, Ipv4Repr};
use crate::ipv6::{Ipv6Packet, Ipv6Repr};
use crate::tcp::{self, TcpPacket, TcpRepr};
use crate::udp::{self, UdpRepr};
use crate::{Ecn, Result, WireError};
use std::net::{IpAddr, SocketAddr};

/// The IP version of a datagram, from its first nibble.
pub fn version(bytes: &[u8]) -> Result<u8> {
    match bytes.first().map(|b| b >> 4) {
        Some(v @ (4 | 6)) => Ok(v),
        Some(v) => Err(WireError::BadVersion(v)),
        None => Err(WireError::Truncated { need: 1, have: 0 }),
    }
}

/// The transport 5-tuple a flow-queueing discipline hashes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Upper-layer protocol (6 TCP, 17 UDP); for IPv6, after extension headers.
    pub protocol: u8,
    /// Zero for protocols without ports and for non-first fragments.
    pub src_port: u16,
    /// Zero for protocols without ports and for non-first fragments.
    pub dst_port: u16,
}

/// What the network layer shows of a datagram, read in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpSummary {
    /// 4 or 6.
    pub version: u8,
    /// The ECN codepoint from the TOS byte or traffic class.
    pub ecn: Ecn,
    /// The DSCP, six bits.
    pub dscp: u8,
    /// Bytes of the whole datagram per its length field.
    pub total_len: usize,
    /// Offset of the transport header within the datagram.
    pub transport_offset: usize,
    /// Addresses, protocol and ports.
    pub flow: FlowKey,
}

/// Reads version, ECN, DSCP, length and the 5-tuple. Ports are read for TCP
/// and UDP when present; the transport header is not otherwise validated.
pub fn summarize(bytes: &[u8]) -> Result<IpSummary> {
    let (version, ecn, dscp, total_len, off, src, dst, protocol) = match version(bytes)? {
        4 => {
            let p = Ipv4Packet::new_checked(bytes)?;
            // A non-first fragment carries no transport header.
            let off = if frag_offset(bytes) != 0 {
                usize::MAX
            } else {
                p.header_len()
            };
            let (s, d) = (IpAddr::V4(p.src()), IpAddr::V4(p.dst()));
            (4, p.ecn(), p.dscp(), p.total_len(), off, s, d, p.protocol())
        }
        _ => {
            let p = Ipv6Packet::new_checked(bytes)?;
            let (proto, off) = p.upper_layer().unwrap_or((p.next_header(), usize::MAX));
            let (s, d) = (IpAddr::V6(p.src()), IpAddr::V6(p.dst()));
            (6, p.ecn(), p.dscp(), p.total_len(), off, s, d, proto)
        }
    };
    let (src_port, dst_port) = match (protocol, bytes.get(off..off.saturating_add(4))) {
        (6 | 17, Some(h)) => (
            u16::from_be_bytes([h[0], h[1]]),
            u16::from_be_bytes([h[2], h[3]]),
        ),
        _ => (0, 0),
    };
    Ok(IpSummary {
        version,
        ecn,
        dscp,
        total_len,
        transport_offset: off.min(total_len),
        flow: FlowKey {
            src,
            dst,
            protocol,
            src_port,
            dst_port,
        },
    })
}

fn frag_offset(bytes: &[u8]) -> u16 {
    u16::from_be_bytes([bytes[6], bytes[7]]) & 0x1fff
}

/// The ECN codepoint of a datagram.
pub fn ecn(bytes: &[u8]) -> Result<Ecn> {
    match version(bytes)? {
        4 => Ok(Ipv4Packet::new_checked(bytes)?.ecn()),
        _ => Ok(Ipv6Packet::new_checked(bytes)?.ecn()),
    }
}

/// Rewrites the ECN codepoint in place, keeping an IPv4 checksum valid.
pub fn set_ecn(bytes: &mut [u8], ecn: Ecn) -> Result<()> {
    match version(bytes)? {
        4 => Ipv4Packet::new_checked(bytes)?.set_ecn(ecn),
        _ => Ipv6Packet::new_checked(bytes)?.set_ecn(ecn),
    }
    Ok(())
}

/// Builds a complete IPv4 or IPv6 datagram carrying one UDP payload, with
/// valid checksums. `src` and `dst` must be of the same family.
pub fn udp_datagram(src: SocketAddr, dst: SocketAddr, ecn: Ecn, payload: &[u8]) -> Result<Vec<u8>> {
    let repr = UdpRepr {
        src_port: src.port(),
        dst_port: dst.port(),
    };
    let udp_len = udp::HEADER_LEN + payload.len();
    datagram(src.ip(), dst.ip(), udp::PROTOCOL, ecn, udp_len, |buf| {
        repr.emit(buf, src.ip(), dst.ip(), payload)
    })
}

/// [`udp_datagram`] written into `out`, whose old contents it replaces: a
/// sender of many datagrams reuses one allocation. Same bytes, same errors;
/// after an error `out` holds no datagram.
pub fn udp_datagram_into(
    src: SocketAddr,
    dst: SocketAddr,
    ecn: Ecn,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    let repr = UdpRepr {
        src_port: src.port(),
        dst_port: dst.port(),
    };
    let udp_len = udp::HEADER_LEN + payload.len();
    datagram_into(
        src.ip(),
        dst.ip(),
        udp::PROTOCOL,
        ecn,
        udp_len,
        out,
        |buf| repr.emit(buf, src.ip(), dst.ip(), payload),
    )
}

/// Builds a complete IPv4 or IPv6 datagram carrying one TCP segment, with
/// valid checksums (TTL / hop limit 64, DF set, DSCP, ident and flow label
/// zero). `src` and `dst` must be of the same family; ports come from `tcp`.
pub fn tcp_datagram(
    src: IpAddr,
    dst: IpAddr,
    ecn: Ecn,
    tcp: &TcpRepr,
    payload: &[u8],
) -> Result<Vec<u8>> {
    let tcp_len = tcp.header_len() + payload.len();
    datagram(src, dst, tcp::PROTOCOL, ecn, tcp_len, |buf| {
        tcp.emit(buf, src, dst, payload)
    })
}

/// Writes an IP header for `transport_len` bytes of `protocol`, then lets
/// `fill` write the transport header and payload after it.
fn datagram(
    src: IpAddr,
    dst: IpAddr,
    protocol: u8,
    ecn: Ecn,
    transport_len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    datagram_into(src, dst, protocol, ecn, transport_len, &mut buf, fill)?;
    Ok(buf)
}

/// [`datagram`] into `out`, zeroed first to the datagram's length so the
/// bytes do not depend on what `out` held; cleared on error.
fn datagram_into(
    src: IpAddr,
    dst: IpAddr,
    protocol: u8,
    ecn: Ecn,
    transport_len: usize,
    out: &mut Vec<u8>,
    fill: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<()> {
    out.clear();
    let result = ip_header_len(src, dst).and_then(|header_len| {
        out.resize(header_len + transport_len, 0);
        ip_header(src, dst, protocol, ecn, out)?;
        fill(&mut out[header_len..])
    });
    if result.is_err() {
        out.clear();
    }
    result
}

/// The IP header's length for a datagram from `src` to `dst`: 20 bytes for
/// IPv4, 40 for IPv6 (no options, no extension headers).
fn ip_header_len(src: IpAddr, dst: IpAddr) -> Result<usize> {
    if src.is_ipv4() != dst.is_ipv4() {
        return Err(WireError::FamilyMismatch);
    }
    Ok(header_len_from(src))
}

/// The IP header's length for a datagram from `src`'s family.
fn header_len_from(src: IpAddr) -> usize {
    match src {
        IpAddr::V4(_) => crate::ipv4::HEADER_LEN,
        IpAddr::V6(_) => crate::ipv6::HEADER_LEN,
    }
}

/// Writes the IP header at the start of `datagram`, whose whole length is
/// the header and `protocol`'s bytes after it.
fn ip_header(src: IpAddr, dst: IpAddr, protocol: u8, ecn: Ecn, datagram: &mut [u8]) -> Result<()> {
    let transport_len = datagram.len().saturating_sub(header_len_from(src));
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => Ipv4Repr {
            src: s,
            dst: d,
            protocol,
            dscp: 0,
            ecn,
            ttl: 64,
            ident: 0,
            payload_len: transport_len,
        }
        .emit(datagram),
        (IpAddr::V6(s), IpAddr::V6(d)) => Ipv6Repr {
            src: s,
            dst: d,
            next_header: protocol,
            dscp: 0,
            ecn,
            flow_label: 0,
            hop_limit: 64,
            payload_len: transport_len,
        }
        .emit(datagram),
        _ => Err(WireError::FamilyMismatch),
    }
}

/// Bytes of IP and UDP header in front of the payload of a UDP datagram
/// sent from `src` (28 over IPv4, 48 over IPv6): the room
/// [`udp_datagram_in_place`] wants.
pub fn udp_headroom(src: IpAddr) -> usize {
    header_len_from(src) + udp::HEADER_LEN
}

/// Makes `packet` the datagram [`udp_datagram`] would build, where
/// `packet` holds [`udp_headroom`] bytes of room (any content) and then the
/// UDP payload: the headers go into the room and the payload stays where it
/// is, so a sender that wrote its payload after the room copies nothing.
/// Same bytes, same errors.
pub fn udp_datagram_in_place(
    src: SocketAddr,
    dst: SocketAddr,
    ecn: Ecn,
    packet: &mut [u8],
) -> Result<()> {
    let header_len = ip_header_in_room(src, dst, ecn, packet)?;
    UdpRepr {
        src_port: src.port(),
        dst_port: dst.port(),
    }
    .emit_header(&mut packet[header_len..], src.ip(), dst.ip())
}

/// Writes the IP header into the room at the front of `packet` and
/// returns its length; the UDP header follows it.
fn ip_header_in_room(
    src: SocketAddr,
    dst: SocketAddr,
    ecn: Ecn,
    packet: &mut [u8],
) -> Result<usize> {
    let header_len = ip_header_len(src.ip(), dst.ip())?;
    let room = header_len + udp::HEADER_LEN;
    if packet.len() < room {
        return Err(WireError::Truncated {
            need: room,
            have: packet.len(),
        });
    }
    ip_header(src.ip(), dst.ip(), udp::PROTOCOL, ecn, packet)?;
    Ok(header_len)
}

/// [`udp_datagram_in_place`] with the UDP checksum left zero, for the
/// simulator, whose receivers take it on trust: whoever needs the datagram
/// as it would be on a wire (a capture) completes it with
/// [`fill_udp_checksum`], which gives the same bytes
/// [`udp_datagram_in_place`] would have written.
pub fn udp_datagram_in_place_unsummed(
    src: SocketAddr,
    dst: SocketAddr,
    ecn: Ecn,
    packet: &mut [u8],
) -> Result<()> {
    let header_len = ip_header_in_room(src, dst, ecn, packet)?;
    UdpRepr {
        src_port: src.port(),
        dst_port: dst.port(),
    }
    .emit_header_unsummed(&mut packet[header_len..])
}

/// [`udp_datagram_in_place_unsummed`] for a host that sends many datagrams
/// with the same addresses, codepoint and length (one flow's full-sized
/// packets): their headers are the same bytes, which depend on nothing
/// else, so they are copied from the last ones written instead of written
/// field by field with the IPv4 checksum summed. Errors are not
/// remembered.
#[derive(Debug, Clone, Default)]
pub struct UdpHeaderMemo {
    /// The last headers written, and what they were written for.
    last: Option<(UdpHeaderKey, [u8; UDP_HEADROOM_MAX])>,
}

/// What UDP and IP headers are written for: source, destination, ECN
/// codepoint and the datagram's length.
type UdpHeaderKey = (SocketAddr, SocketAddr, Ecn, usize);

/// The most room [`udp_headroom`] asks for (IPv6).
const UDP_HEADROOM_MAX: usize = 48;

impl UdpHeaderMemo {
    /// [`udp_datagram_in_place_unsummed`]: same bytes, same errors.
    // Inlined into the sender's loop, with the writing out of line: a
    // repeat is a compare and a copy, less than the call it would make.
    #[inline]
    pub fn write(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        ecn: Ecn,
        packet: &mut [u8],
    ) -> Result<()> {
        // Compared field by field: a key tuple put together on the stack
        // was read back in pieces that straddled the stores just made,
        // which the processor cannot forward.
        if let Some(((s, d, e, len), headers)) = &self.last
            && *len == packet.len()
            && *e == ecn
            && *d == dst
            && *s == src
        {
            let room = udp_headroom(src.ip());
            packet[..room].copy_from_slice(&headers[..room]);
            return Ok(());
        }
        self.write_new(src, dst, ecn, packet)
    }

    /// [`UdpHeaderMemo::write`] for headers not the last ones: writes and
    /// remembers them.
    #[cold]
    #[inline(never)]
    fn write_new(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        ecn: Ecn,
        packet: &mut [u8],
    ) -> Result<()> {
        let key = (src, dst, ecn, packet.len());
        udp_datagram_in_place_unsummed(src, dst, ecn, packet)?;
        let room = udp_headroom(src.ip());
        self.last = packet.get(..room).and_then(|written| {
            let mut headers = [0; UDP_HEADROOM_MAX];
            headers.get_mut(..room)?.copy_from_slice(written);
            Some((key, headers))
        });
        Ok(())
    }
}

/// True if `datagram` is IP/UDP with its UDP checksum field zero (left
/// for [`fill_udp_checksum`], or over IPv4 not used).
pub fn udp_checksum_unset(datagram: &[u8]) -> bool {
    let Ok(s) = summarize(datagram) else {
        return false;
    };
    s.flow.protocol == udp::PROTOCOL
        && s.transport_offset.saturating_add(udp::HEADER_LEN) <= s.total_len.min(datagram.len())
        && datagram[s.transport_offset + 6..s.transport_offset + 8] == [0, 0]
}

/// Writes the UDP checksum of an IP/UDP datagram; anything else is left as
/// it is.
pub fn fill_udp_checksum(datagram: &mut [u8]) {
    let Ok(s) = summarize(datagram) else {
        return;
    };
    let end = s.total_len.min(datagram.len());
    if s.flow.protocol != udp::PROTOCOL || s.transport_offset.saturating_add(udp::HEADER_LEN) > end
    {
        return;
    }
    udp::fill_checksum(
        &mut datagram[s.transport_offset..end],
        s.flow.src,
        s.flow.dst,
    );
}

/// The UDP payload and addresses of a datagram built by [`udp_datagram`] (or
/// any valid IP/UDP datagram), checksums verified.
pub fn parse_udp(bytes: &[u8]) -> Result<(SocketAddr, SocketAddr, Ecn, &[u8])> {
    parse_udp_checked(bytes, true)
}

/// [`parse_udp`] taking the UDP checksum on trust, as a host takes it for a
/// packet that never left the machine (Linux's `CHECKSUM_UNNECESSARY` on
/// loopback): for the simulator, whose datagrams [`udp_datagram`] built
/// and whose links change no byte the checksum covers. The structure, the
/// lengths and an IPv4 header's checksum are still checked.
pub fn parse_udp_trusted(bytes: &[u8]) -> Result<(SocketAddr, SocketAddr, Ecn, &[u8])> {
    parse_udp_checked(bytes, false)
}

fn parse_udp_checked(
    bytes: &[u8],
    verify_udp: bool,
) -> Result<(SocketAddr, SocketAddr, Ecn, &[u8])> {
    let (from, to, ecn, start, end) = parse_udp_at(bytes, verify_udp)?;
    Ok((from, to, ecn, &bytes[start..end]))
}

/// [`parse_udp_checked`] with the payload as its place in `bytes`.
fn parse_udp_at(
    bytes: &[u8],
    verify_udp: bool,
) -> Result<(SocketAddr, SocketAddr, Ecn, usize, usize)> {
    let s = summarize(bytes)?;
    if s.flow.protocol != udp::PROTOCOL || s.transport_offset >= s.total_len {
        return Err(WireError::Malformed("not a udp datagram"));
    }
    if s.version == 4 {
        Ipv4Repr::parse(&Ipv4Packet::new_checked(bytes)?)?;
    }
    let u = udp::UdpPacket::new_checked(&bytes[s.transport_offset..s.total_len])?;
    if verify_udp {
        UdpRepr::parse(&u, s.flow.src, s.flow.dst)?;
    }
    let start = s.transport_offset + udp::HEADER_LEN;
    Ok((
        SocketAddr::new(s.flow.src, s.flow.src_port),
        SocketAddr::new(s.flow.dst, s.flow.dst_port),
        s.ecn,
        start,
        start + u.len() - udp::HEADER_LEN,
    ))
}

/// Header bytes a [`UdpMemo`] keeps: an IPv6 header with a few extension
/// headers, and the UDP header.
const UDP_MEMO_PREFIX_MAX: usize = 64;

/// [`parse_udp_trusted`] for a host that reads many datagrams with the same
/// headers (one flow's full-sized packets): a datagram whose bytes up to
/// its payload and whose length equal those of the last one read is
/// answered from memory. The answer is the same, as it rests on nothing
/// else: the addresses, ports, ECN codepoint, lengths and the IPv4
/// header's checksum all lie in those bytes. Errors are not remembered.
#[derive(Debug, Clone)]
pub struct UdpMemo {
    /// The last datagram's bytes before its payload.
    prefix: [u8; UDP_MEMO_PREFIX_MAX],
    /// Its length in bytes.
    data_len: usize,
    /// What [`parse_udp_trusted`] found in it (the payload as its start and
    /// end in bytes), if a datagram was remembered.
    found: Option<(SocketAddr, SocketAddr, Ecn, usize, usize)>,
}

impl Default for UdpMemo {
    fn default() -> Self {
        UdpMemo {
            prefix: [0; UDP_MEMO_PREFIX_MAX],
            data_len: 0,
            found: None,
        }
    }
}

impl UdpMemo {
    /// [`parse_udp_trusted`], answered from memory when `bytes` repeats
    /// the remembered headers and length.
    pub fn parse_trusted<'a>(
        &mut self,
        bytes: &'a [u8],
    ) -> Result<(SocketAddr, SocketAddr, Ecn, &'a [u8])> {
        if let Some((from, to, ecn, start, end)) = self.found
            && bytes.len() == self.data_len
            && bytes.get(..start) == self.prefix.get(..start)
        {
            return Ok((from, to, ecn, &bytes[start..end]));
        }
        let found = parse_udp_at(bytes, false)?;
        let (from, to, ecn, start, end) = found;
        match (bytes.get(..start), self.prefix.get_mut(..start)) {
            (Some(header), Some(kept)) => {
                kept.copy_from_slice(header);
                self.data_len = bytes.len();
                self.found = Some(found);
            }
            _ => self.found = None,
        }
        Ok((from, to, ecn, &bytes[start..end]))
    }
}

/// A TCP segment read out of a whole datagram by [`parse_tcp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSegment<'a> {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// The ECN codepoint the segment arrived with.
    pub ecn: Ecn,
    /// The TCP header, checksum verified.
    pub tcp: TcpRepr,
    /// The segment's data, borrowed from the datagram.
    pub payload: &'a [u8],
}

/// The TCP header, payload, addresses and ECN codepoint of a datagram built
/// by [`tcp_datagram`] (or any valid IP/TCP datagram, IPv6 extension headers
/// skipped), IPv4 header and TCP checksums verified.
pub fn parse_tcp(bytes: &[u8]) -> Result<TcpSegment<'_>> {
    let s = summarize(bytes)?;
    if s.flow.protocol != tcp::PROTOCOL || s.transport_offset >= s.total_len {
        return Err(WireError::Malformed("not a tcp datagram"));
    }
    if s.version == 4 {
        Ipv4Repr::parse(&Ipv4Packet::new_checked(bytes)?)?;
    }
    let segment = bytes
        .get(s.transport_offset..s.total_len)
        .ok_or(WireError::Malformed("tcp segment outside the datagram"))?;
    let p = TcpPacket::new_checked(segment)?;
    let tcp = TcpRepr::parse(&p, s.flow.src, s.flow.dst)?;
    Ok(TcpSegment {
        src: s.flow.src,
        dst: s.flow.dst,
        ecn: s.ecn,
        tcp,
        payload: &segment[p.header_len()..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_udp_headers_are_the_ones_written_afresh() {
        // Repeats and every change of key, over stale room bytes, in both
        // families; a datagram too short fails as it does afresh.
        let v4: SocketAddr = "10.1.0.1:40000".parse().unwrap();
        let v4b: SocketAddr = "10.2.0.1:42000".parse().unwrap();
        let v6: SocketAddr = "[2001:db8:1::1]:40000".parse().unwrap();
        let v6b: SocketAddr = "[2001:db8:2::1]:42000".parse().unwrap();
        let mut memo = UdpHeaderMemo::default();
        let mut changed = v4b;
        changed.set_port(42001);
        let cases = [
            (v4, v4b, Ecn::Ect0, 1200),
            (v4, v4b, Ecn::Ect0, 1200),
            (v4, v4b, Ecn::Ce, 1200),
            (v4, v4b, Ecn::Ce, 1200),
            (v4, v4b, Ecn::Ce, 700),
            (v4, changed, Ecn::Ce, 700),
            (v4b, v4, Ecn::Ce, 700),
            (v6, v6b, Ecn::NotEct, 1200),
            (v6, v6b, Ecn::NotEct, 1200),
            (v6, v6b, Ecn::NotEct, 20),
            (v6, v4b, Ecn::NotEct, 1200),
            (v6, v6b, Ecn::NotEct, 1200),
        ];
        for (i, (src, dst, ecn, len)) in cases.into_iter().enumerate() {
            let stale: Vec<u8> = (0..len).map(|b| (b * 7 + i) as u8).collect();
            let (mut fresh, mut kept) = (stale.clone(), stale);
            let want = udp_datagram_in_place_unsummed(src, dst, ecn, &mut fresh);
            let got = memo.write(src, dst, ecn, &mut kept);
            assert_eq!(got, want, "case {i}");
            assert_eq!(kept, fresh, "case {i}");
        }
    }
    use crate::fixtures::{TCP4_DATA, TCP4_SYN, TCP6_DATA, TCP6_SYNACK, UDP4, UDP6};
    use crate::tcp::TcpFlags;

    /// A sender and a receiver address over IPv4, then over IPv6.
    fn both_families() -> [(SocketAddr, SocketAddr); 2] {
        [
            ("10.0.0.1:1000", "10.0.0.2:2000"),
            ("[2001:db8::1]:1000", "[2001:db8::2]:2000"),
        ]
        .map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap()))
    }

    #[test]
    fn udp_round_trip_both_families() {
        for (a, b) in both_families() {
            let mut d = udp_datagram(a, b, Ecn::Ect1, b"hello").unwrap();
            let s = summarize(&d).unwrap();
            assert_eq!(s.ecn, Ecn::Ect1);
            assert_eq!(s.total_len, d.len());
            assert_eq!(
                (s.flow.src_port, s.flow.dst_port, s.flow.protocol),
                (1000, 2000, 17)
            );
            set_ecn(&mut d, Ecn::Ce).unwrap();
            let (src, dst, e, payload) = parse_udp(&d).unwrap();
            assert_eq!((src, dst, e, payload), (a, b, Ecn::Ce, &b"hello"[..]));
        }
    }

    #[test]
    fn udp_datagram_in_place_refuses_mixed_families_and_missing_room() {
        let v4: SocketAddr = "10.0.0.1:1000".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::2]:2000".parse().unwrap();
        let mut packet = vec![0u8; 100];
        assert_eq!(
            udp_datagram_in_place(v4, v6, Ecn::NotEct, &mut packet),
            Err(WireError::FamilyMismatch)
        );
        assert_eq!(udp_headroom(v4.ip()), 28);
        assert_eq!(udp_headroom(v6.ip()), 48);
        let mut short = vec![0u8; 47];
        assert_eq!(
            udp_datagram_in_place(v6, v6, Ecn::NotEct, &mut short),
            Err(WireError::Truncated { need: 48, have: 47 })
        );
        // Room and no payload is an empty datagram.
        let mut empty = vec![0xa5u8; 28];
        udp_datagram_in_place(v4, v4, Ecn::Ect0, &mut empty).unwrap();
        assert_eq!(parse_udp(&empty).unwrap(), (v4, v4, Ecn::Ect0, &b""[..]));
    }

    #[test]
    fn an_unsummed_datagram_filled_in_is_the_summed_one() {
        for (a, b) in both_families() {
            for payload in [&b""[..], b"x", b"hello", &[0xff; 1401]] {
                let room = udp_headroom(a.ip());
                let mut summed = vec![0u8; room];
                summed.extend_from_slice(payload);
                let mut unsummed = summed.clone();
                udp_datagram_in_place(a, b, Ecn::Ect1, &mut summed).unwrap();
                udp_datagram_in_place_unsummed(a, b, Ecn::Ect1, &mut unsummed).unwrap();
                assert!(udp_checksum_unset(&unsummed));
                assert!(!udp_checksum_unset(&summed));
                assert_eq!(parse_udp_trusted(&unsummed), parse_udp_trusted(&summed));
                assert_ne!(summed, unsummed);
                fill_udp_checksum(&mut unsummed);
                assert_eq!(summed, unsummed, "{a} {}", payload.len());
                // Filling a datagram whose checksum is right changes nothing.
                fill_udp_checksum(&mut summed);
                assert_eq!(summed, unsummed);
            }
        }
        // Not UDP, or not IP: left alone, never a panic.
        let mut tcp = TCP4_SYN.to_vec();
        fill_udp_checksum(&mut tcp);
        assert_eq!(tcp, TCP4_SYN);
        assert!(!udp_checksum_unset(&tcp));
        let mut junk = vec![0x45, 0, 0];
        fill_udp_checksum(&mut junk);
        assert_eq!(junk, [0x45, 0, 0]);
    }

    #[test]
    fn trusted_parse_skips_only_the_udp_checksum() {
        for (a, b) in both_families() {
            let mut d = udp_datagram(a, b, Ecn::Ect0, b"hello").unwrap();
            assert_eq!(parse_udp_trusted(&d), parse_udp(&d));
            // A payload byte flipped: only the verifying parse notices.
            let last = d.len() - 1;
            d[last] ^= 1;
            assert_eq!(parse_udp(&d), Err(WireError::BadChecksum));
            assert_eq!(parse_udp_trusted(&d).unwrap().3, b"helln");
            // Broken structure is refused either way.
            assert!(parse_udp_trusted(&d[..d.len() - 6]).is_err());
            let mut not_udp = d.clone();
            not_udp[if a.is_ipv4() { 9 } else { 6 }] = 6;
            assert!(parse_udp_trusted(&not_udp).is_err());
        }
    }

    #[test]
    fn the_udp_memo_answers_as_the_trusted_parse_does() {
        for (a, b) in both_families() {
            let mut memo = UdpMemo::default();
            let full = udp_datagram(a, b, Ecn::Ect0, &[7; 1400]).unwrap();
            let mut marked = full.clone();
            set_ecn(&mut marked, Ecn::Ce).unwrap();
            let mut other_payload = full.clone();
            let last = other_payload.len() - 1;
            other_payload[last] ^= 0x5a;
            let short = udp_datagram(a, b, Ecn::Ect0, b"ack").unwrap();
            let reply = udp_datagram(b, a, Ecn::NotEct, &[1; 1400]).unwrap();
            let mut bad_len = full.clone();
            let udp_len_at = udp_headroom(a.ip()) - 4;
            bad_len[udp_len_at] = 0xff;
            // Repeats, changes of ECN, payload, length and direction, a
            // broken header and a truncated copy, in an order that has
            // each follow a remembered one.
            let sequence: [&[u8]; 12] = [
                &full,
                &full,
                &other_payload,
                &marked,
                &full,
                &short,
                &short,
                &reply,
                &full[..full.len() - 1],
                &full,
                &bad_len,
                &full,
            ];
            for (i, d) in sequence.into_iter().enumerate() {
                assert_eq!(memo.parse_trusted(d), parse_udp_trusted(d), "{a} #{i}");
            }
            assert!(memo.parse_trusted(&bad_len).is_err());
            assert_eq!(memo.parse_trusted(&marked).unwrap().2, Ecn::Ce);
            assert_eq!(
                memo.parse_trusted(&other_payload).unwrap().3[1399],
                7 ^ 0x5a
            );
        }
    }

    #[test]
    fn udp_datagram_into_a_used_buffer_gives_the_same_bytes() {
        let mut out = vec![0xa5u8; 3000];
        for (a, b) in both_families() {
            // Longer, then shorter than what the buffer held before.
            for len in [1400, 0, 37, 1200] {
                let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                let want = udp_datagram(a, b, Ecn::Ect0, &payload).unwrap();
                udp_datagram_into(a, b, Ecn::Ect0, &payload, &mut out).unwrap();
                assert_eq!(out, want);
                assert_eq!(parse_udp(&out).unwrap().3, &payload[..]);
            }
        }
        let (a, b): (SocketAddr, SocketAddr) =
            ("10.0.0.1:1".parse().unwrap(), "[::1]:1".parse().unwrap());
        let got = udp_datagram_into(a, b, Ecn::NotEct, b"x", &mut out);
        assert_eq!(got, Err(WireError::FamilyMismatch));
        assert!(out.is_empty());
        // Too long for an IPv4 total length: the same error as udp_datagram.
        let big = vec![0u8; 70_000];
        let a4: SocketAddr = "10.0.0.1:1".parse().unwrap();
        let err = udp_datagram(a4, a4, Ecn::NotEct, &big).err();
        assert!(err.is_some());
        assert_eq!(
            udp_datagram_into(a4, a4, Ecn::NotEct, &big, &mut out).err(),
            err
        );
        assert!(out.is_empty());
    }

    #[test]
    fn mixed_families_are_refused() {
        let a: SocketAddr = "10.0.0.1:1".parse().unwrap();
        let b: SocketAddr = "[::1]:1".parse().unwrap();
        assert_eq!(
            udp_datagram(a, b, Ecn::NotEct, b"").err(),
            Some(WireError::FamilyMismatch)
        );
        let tcp = parse_tcp(&TCP4_DATA).unwrap().tcp;
        let got = tcp_datagram(a.ip(), b.ip(), Ecn::NotEct, &tcp, b"").err();
        assert_eq!(got, Some(WireError::FamilyMismatch));
    }

    #[test]
    fn summarize_and_parse_real_captures() {
        let v4 = |d| IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, d));
        let v6 = |d| IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, d));
        let s = summarize(&TCP4_DATA).unwrap();
        assert_eq!((s.version, s.ecn, s.dscp), (4, Ecn::Ect0, 0));
        assert_eq!((s.total_len, s.transport_offset), (58, 20));
        let flow = FlowKey {
            src: v4(1),
            dst: v4(2),
            protocol: 6,
            src_port: 46184,
            dst_port: 40001,
        };
        assert_eq!(s.flow, flow);
        let seg = parse_tcp(&TCP4_DATA).unwrap();
        assert_eq!((seg.src, seg.dst, seg.ecn), (v4(1), v4(2), Ecn::Ect0));
        assert_eq!(seg.payload, b"hello\n");
        assert_eq!(seg.tcp.seq_number, 0x81a7_d8da);

        let seg = parse_tcp(&TCP6_SYNACK).unwrap();
        assert_eq!((seg.src, seg.dst, seg.ecn), (v6(2), v6(1), Ecn::NotEct));
        assert!(
            seg.tcp
                .flags
                .contains(TcpFlags::SYN | TcpFlags::ACK | TcpFlags::ECE)
        );
        assert_eq!(seg.tcp.mss(), Some(1440));

        let (src, dst, ecn, payload) = parse_udp(&UDP4).unwrap();
        assert_eq!(
            (src, dst, ecn),
            (
                "192.0.2.1:57040".parse().unwrap(),
                "192.0.2.2:40003".parse().unwrap(),
                Ecn::Ect1
            )
        );
        assert_eq!(payload, b"brisk");
        let (src, _, ecn, payload) = parse_udp(&UDP6).unwrap();
        assert_eq!(
            (src, ecn, payload),
            (
                "[2001:db8::1]:57387".parse().unwrap(),
                Ecn::Ect0,
                &b"brisk"[..]
            )
        );

        // Each parser refuses the other transport.
        assert!(parse_tcp(&UDP4).is_err() && parse_tcp(&UDP6).is_err());
        assert!(parse_udp(&TCP4_SYN).is_err() && parse_udp(&TCP6_DATA).is_err());
    }

    #[test]
    fn tcp_round_trip_both_families() {
        for bytes in [
            &TCP4_SYN[..],
            &TCP4_DATA[..],
            &TCP6_SYNACK[..],
            &TCP6_DATA[..],
        ] {
            let seg = parse_tcp(bytes).unwrap();
            let mut d = tcp_datagram(seg.src, seg.dst, Ecn::Ect1, &seg.tcp, seg.payload).unwrap();
            assert_eq!(d.len(), bytes.len());
            // The transport bytes are the captured ones; only IP fields differ.
            let off = if seg.src.is_ipv4() { 20 } else { 40 };
            assert_eq!(d[off..], bytes[off..]);
            set_ecn(&mut d, Ecn::Ce).unwrap();
            let back = parse_tcp(&d).unwrap();
            assert_eq!(
                back,
                TcpSegment {
                    ecn: Ecn::Ce,
                    ..seg
                }
            );
        }
    }

    #[test]
    fn corrupted_tcp_datagrams_are_refused() {
        let mut b = TCP4_DATA;
        b[57] ^= 0x20; // payload bit: TCP checksum
        assert_eq!(parse_tcp(&b).err(), Some(WireError::BadChecksum));
        let mut b = TCP4_DATA;
        b[8] = 63; // TTL without fixing the header checksum
        assert_eq!(parse_tcp(&b).err(), Some(WireError::BadChecksum));
        let mut b = TCP6_DATA;
        b[52] = 0x40; // data offset 4 words
        assert!(matches!(parse_tcp(&b), Err(WireError::Malformed(_))));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(summarize(&[]).is_err());
        assert!(summarize(&[0x45]).is_err());
        assert!(summarize(&[0x60; 39]).is_err());
        assert!(set_ecn(&mut [0x10, 0, 0], Ecn::Ce).is_err());
    }
}
