//! IP/ICMP translation between IPv6 and IPv4 (RFC 7915), stateless: the
//! caller chooses the new addresses and ports, this module rewrites headers.
//!
//! A datagram is first parsed ([`Ipv6Datagram::parse`],
//! [`Ipv4Datagram::parse`]) into its addresses and [`Content`]: a transport
//! flow (TCP, UDP, ICMP echo) or an ICMP error with the flow of the packet
//! it quotes. The NAT maps that to a [`Plan`] and calls `translate`.
//!
//! What is preserved and what is not:
//! - Traffic class <-> TOS is copied whole, so DSCP and the ECN field
//!   (ECT(0), ECT(1), CE) survive both ways. The flow label becomes zero.
//! - TTL and hop limit are copied after the decrement a router owes; a
//!   packet arriving with 1 or 0 is refused with
//!   [`TranslateError::HopLimitExceeded`] so the caller can send Time
//!   Exceeded.
//! - TCP/UDP checksums are patched incrementally (RFC 1624) for the new
//!   pseudo-header and ports, never recomputed, so a corrupted payload stays
//!   detectably corrupted. The exception is IPv4 UDP without a checksum
//!   (zero), for which IPv6 requires one to be computed. ICMP errors change
//!   their whole body, so their checksum is verified on the way in and
//!   recomputed on the way out.
//! - IPv4 options and IPv6 extension headers (hop-by-hop, destination
//!   options, routing with no segments left, atomic fragment headers) are
//!   dropped. A routing header with segments left is refused.
//! - Fragments: incoming IPv4 fragments and non-atomic IPv6 fragments are
//!   refused ([`TranslateError::Fragment`]): a stateful NAT cannot find the
//!   ports of a non-first fragment without reassembly, which this crate
//!   does not do. Outgoing, an IPv4 packet without DF that would exceed the
//!   configured lowest IPv6 MTU is split into IPv6 fragments (RFC 7915
//!   §4.1); with DF it is refused with the MTU to report.
//! - IPv6 -> IPv4: DF is set only above 1260 bytes (RFC 7915 §5.1), so an
//!   IPv4 path narrower than 1280 can still fragment small packets.

use crate::icmp::{self, IcmpKind, MappedError};
use brisk_wire::ipv4::{self, Ipv4Packet, Ipv4Repr};
use brisk_wire::ipv6::{self, Ipv6Packet, Ipv6Repr};
use brisk_wire::udp::UdpPacket;
use brisk_wire::{Ecn, WireError, checksum};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

const EXT_HOP_BY_HOP: u8 = 0;
const EXT_ROUTING: u8 = 43;
const EXT_FRAGMENT: u8 = 44;
const EXT_DEST_OPTS: u8 = 60;
/// More extension headers than this is an attack, not a packet.
const MAX_EXT_HEADERS: usize = 8;
/// RFC 7915 §5.1: translated IPv4 packets up to this size leave DF clear.
const DF_THRESHOLD: usize = 1260;
/// Bytes an ICMP header occupies before the quoted packet.
const ICMP_HEADER_LEN: usize = 8;
/// Fragment header length.
const FRAG_HEADER_LEN: usize = 8;

/// Link sizes the translator must respect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TranslateConfig {
    /// MTU of the IPv4 next hop: larger translated packets are refused with
    /// an MTU for ICMPv6 Packet Too Big.
    pub ipv4_mtu: usize,
    /// MTU of the IPv6 next hop: larger DF packets are refused with an MTU
    /// for ICMPv4 "fragmentation needed".
    pub ipv6_mtu: usize,
    /// RFC 7915's "lowest-ipv6-mtu": IPv4 packets without DF are fragmented
    /// to this size, since the IPv4 sender cannot learn the IPv6 path MTU.
    pub lowest_ipv6_mtu: usize,
}

impl Default for TranslateConfig {
    fn default() -> Self {
        TranslateConfig {
            ipv4_mtu: 1500,
            ipv6_mtu: 1500,
            lowest_ipv6_mtu: 1280,
        }
    }
}

/// Why a datagram was not translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    /// The IP, TCP, UDP or ICMP header does not parse; the text names the field.
    #[error("malformed datagram: {0}")]
    Malformed(#[from] WireError),
    /// A checksum does not verify: translating would hide the corruption.
    #[error("bad IPv4 header or ICMP checksum")]
    BadChecksum,
    /// An IP fragment; this translator does not reassemble.
    #[error("fragments are not translated")]
    Fragment,
    /// An upper layer other than TCP, UDP or ICMP: the NAT keeps state for
    /// these three only.
    #[error("protocol {0} cannot be translated")]
    UnknownProtocol(u8),
    /// An ICMP type or code RFC 7915 maps to nothing (it is dropped).
    #[error("ICMP type {icmp_type} code {code} has no counterpart")]
    UntranslatableIcmp {
        /// The ICMP or ICMPv6 type.
        icmp_type: u8,
        /// The code.
        code: u8,
    },
    /// An ICMP error quoting another ICMP error (RFC 7915 forbids translating
    /// it).
    #[error("an ICMP error quotes another ICMP error")]
    ErrorAboutError,
    /// An IPv6 routing header with segments left: the datagram is not yet at
    /// its final destination (RFC 7915 §5.1).
    #[error("routing header with segments left")]
    SegmentsLeft,
    /// TTL or hop limit would reach zero here; the caller sends Time Exceeded.
    #[error("hop limit exhausted")]
    HopLimitExceeded,
    /// An IPv6 datagram too big for the IPv4 link; the caller sends Packet Too
    /// Big with `mtu`.
    #[error("too big for the IPv4 link: report MTU {mtu} to the IPv6 sender")]
    PacketTooBig {
        /// The MTU to report, in bytes, as the IPv6 sender must use it.
        mtu: u32,
    },
    /// An IPv4 datagram with DF set too big for the IPv6 link; the caller sends
    /// Fragmentation Needed with `mtu`.
    #[error("DF set and too big for the IPv6 link: report MTU {mtu} to the IPv4 sender")]
    FragmentationNeeded {
        /// The MTU to report, in bytes, as the IPv4 sender must use it.
        mtu: u16,
    },
    /// The caller's plan does not match the datagram (a flow rewrite for an
    /// ICMP error, or the reverse): a bug in the caller, not the packet.
    #[error("the plan does not match the datagram (flow vs ICMP error)")]
    PlanMismatch,
}

type Result<T> = core::result::Result<T, TranslateError>;

/// The transport protocols a NAT64 keeps state for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Proto {
    /// TCP, keyed by ports.
    Tcp,
    /// UDP, keyed by ports.
    Udp,
    /// ICMP queries (echo), keyed by their identifier.
    Icmp,
}

/// One packet's transport five-tuple. For ICMP echo both ports hold the
/// identifier, which plays the querier's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow<A> {
    /// TCP, UDP or ICMP echo.
    pub proto: Proto,
    /// Source address.
    pub src: A,
    /// Destination address.
    pub dst: A,
    /// Source port, or the echo identifier.
    pub src_port: u16,
    /// Destination port, or the echo identifier.
    pub dst_port: u16,
}

/// The TCP control bits the NAT's state machine follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpControl {
    /// SYN: opens (or, from the other side, answers) a session.
    pub syn: bool,
    /// FIN: one direction is closing.
    pub fin: bool,
    /// RST: the session ends at once.
    pub rst: bool,
}

/// Echo direction, for ICMP query flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    /// Echo request (ping).
    Request,
    /// Echo reply.
    Reply,
}

/// What a parsed datagram carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content<A> {
    /// TCP, UDP or ICMP echo.
    Flow {
        /// Addresses, protocol and ports (or echo identifier).
        flow: Flow<A>,
        /// SYN, FIN and RST, all false for UDP and ICMP.
        tcp: TcpControl,
        /// Request or reply for ICMP echo; `None` for TCP and UDP.
        echo: Option<Echo>,
    },
    /// An ICMP error quoting `inner`, the packet that caused it, with that
    /// packet's own source and destination (so it usually runs the other
    /// way from the error).
    Error {
        /// The quoted packet's flow, as that packet carried it.
        inner: Flow<A>,
    },
}

/// New addresses and ports for a flow. For ICMP echo the identifier is
/// written from `src_port` in requests and `dst_port` in replies: the
/// identifier belongs to the querier, whichever way the message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rewrite<A> {
    /// New source address.
    pub src: A,
    /// New destination address.
    pub dst: A,
    /// New source port (echo request: the new identifier).
    pub src_port: u16,
    /// New destination port (echo reply: the new identifier).
    pub dst_port: u16,
}

/// How to translate one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan<A> {
    /// A flow packet gets new addresses and ports.
    Flow(Rewrite<A>),
    /// An ICMP error gets new outer addresses, and the packet it quotes its
    /// own rewrite.
    Error {
        /// New source of the error itself.
        src: A,
        /// New destination of the error: the quoted packet's sender.
        dst: A,
        /// The rewrite of the quoted packet.
        inner: Rewrite<A>,
    },
}

/// The quoted packet inside an ICMP error, located within the outer bytes.
#[derive(Debug, Clone, Copy)]
struct Quoted {
    /// Start of the quoted IP header.
    start: usize,
    /// End of the quoted bytes (RFC 4884 extensions excluded).
    end: usize,
    /// Start of the quoted transport header.
    l4: usize,
    /// Original protocol / next-header number of the transport.
    protocol: u8,
    /// Traffic class / TOS of the quoted header.
    tos: u8,
    /// TTL / hop limit of the quoted header.
    hop_limit: u8,
    /// Transport length the quoted header declares (the original packet's,
    /// not what was quoted).
    l4_len: usize,
    echo: Option<Echo>,
}

/// A parsed IPv6 datagram, ready to translate to IPv4.
#[derive(Debug, Clone)]
pub struct Ipv6Datagram<'a> {
    bytes: &'a [u8],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    traffic_class: u8,
    hop_limit: u8,
    l4: usize,
    content: Content<Ipv6Addr>,
    quoted: Option<Quoted>,
}

/// A parsed IPv4 datagram, ready to translate to IPv6.
#[derive(Debug, Clone)]
pub struct Ipv4Datagram<'a> {
    bytes: &'a [u8],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    tos: u8,
    ttl: u8,
    ident: u16,
    dont_frag: bool,
    l4: usize,
    content: Content<Ipv4Addr>,
    quoted: Option<Quoted>,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Follows IPv6 extension headers from `off` to the transport header and
/// returns the transport protocol and its offset. Only atomic fragment
/// headers (offset 0, no more fragments) pass; a routing header must have
/// no segments left (RFC 7915 §5.1).
fn skip_extensions(b: &[u8], mut next: u8, mut off: usize) -> Result<(u8, usize)> {
    let short = WireError::Malformed("ipv6 extension header truncated");
    for _ in 0..MAX_EXT_HEADERS {
        match next {
            EXT_HOP_BY_HOP | EXT_DEST_OPTS | EXT_ROUTING => {
                let h = b.get(off..off + 4).ok_or(short)?;
                if next == EXT_ROUTING && h[3] != 0 {
                    return Err(TranslateError::SegmentsLeft);
                }
                next = h[0];
                off += (usize::from(h[1]) + 1) * 8;
            }
            EXT_FRAGMENT => {
                let h = b.get(off..off + FRAG_HEADER_LEN).ok_or(short)?;
                let offset_flags = u16::from_be_bytes([h[2], h[3]]);
                if offset_flags & 0xfff9 != 0 {
                    return Err(TranslateError::Fragment);
                }
                next = h[0];
                off += FRAG_HEADER_LEN;
            }
            _ => {
                return if off <= b.len() {
                    Ok((next, off))
                } else {
                    Err(short.into())
                };
            }
        }
    }
    Err(WireError::Malformed("too many ipv6 extension headers").into())
}

/// Reads ports (or echo identifier) and TCP control bits from a transport
/// header of which at least 8 bytes are present. `icmp_proto` says which
/// ICMP flavour the protocol number means.
fn read_flow<A: Copy>(
    protocol: u8,
    l4: &[u8],
    src: A,
    dst: A,
    icmp_proto: u8,
) -> Result<(Flow<A>, TcpControl, Option<Echo>)> {
    let short = WireError::Truncated {
        need: ICMP_HEADER_LEN,
        have: l4.len(),
    };
    if protocol != PROTO_TCP && protocol != PROTO_UDP && protocol != icmp_proto {
        return Err(TranslateError::UnknownProtocol(protocol));
    }
    if l4.len() < ICMP_HEADER_LEN {
        return Err(short.into());
    }
    let (p0, p1) = (
        u16::from_be_bytes([l4[0], l4[1]]),
        u16::from_be_bytes([l4[2], l4[3]]),
    );
    let flow = |proto, src_port, dst_port| Flow {
        proto,
        src,
        dst,
        src_port,
        dst_port,
    };
    match protocol {
        PROTO_TCP => {
            let flags = l4.get(13).copied().unwrap_or(0);
            let tcp = TcpControl {
                syn: flags & 0x02 != 0,
                fin: flags & 0x01 != 0,
                rst: flags & 0x04 != 0,
            };
            Ok((flow(Proto::Tcp, p0, p1), tcp, None))
        }
        PROTO_UDP => Ok((flow(Proto::Udp, p0, p1), TcpControl::default(), None)),
        p if p == icmp_proto => {
            let kind = if icmp_proto == icmp::PROTO_ICMP {
                icmp::kind_v4(l4[0])
            } else {
                icmp::kind_v6(l4[0])
            };
            let echo = match kind {
                IcmpKind::EchoRequest => Echo::Request,
                IcmpKind::EchoReply => Echo::Reply,
                IcmpKind::Error => return Err(TranslateError::ErrorAboutError),
                IcmpKind::Other => {
                    return Err(TranslateError::UntranslatableIcmp {
                        icmp_type: l4[0],
                        code: l4[1],
                    });
                }
            };
            let id = u16::from_be_bytes([l4[4], l4[5]]);
            Ok((flow(Proto::Icmp, id, id), TcpControl::default(), Some(echo)))
        }
        other => Err(TranslateError::UnknownProtocol(other)),
    }
}

/// The end of the quoted packet in an ICMP error: RFC 4884 puts a length
/// (in `unit`-byte words) at `len_at` when extensions follow the quote.
fn quote_end(icmp: &[u8], len_at: Option<usize>, unit: usize) -> usize {
    let words = len_at
        .and_then(|at| icmp.get(at))
        .map_or(0, |&w| usize::from(w));
    let end = ICMP_HEADER_LEN + words * unit;
    if words == 0 || end > icmp.len() {
        icmp.len()
    } else {
        end
    }
}

impl<'a> Ipv6Datagram<'a> {
    /// Validates the header chain and transport header. Bytes after the
    /// IPv6 payload length are ignored.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let p = Ipv6Packet::new_checked(bytes)?;
        let bytes = &bytes[..p.total_len()];
        let (src, dst) = (p.src(), p.dst());
        let (protocol, l4) = skip_extensions(bytes, p.next_header(), ipv6::HEADER_LEN)?;
        let transport = &bytes[l4..];
        let mut quoted = None;
        let content = match protocol {
            icmp::PROTO_ICMPV6
                if transport
                    .first()
                    .is_some_and(|&t| icmp::kind_v6(t) == IcmpKind::Error) =>
            {
                if transport.len() < ICMP_HEADER_LEN + ipv6::HEADER_LEN {
                    return Err(
                        WireError::Malformed("icmpv6 error too short to quote a header").into(),
                    );
                }
                if !icmp::verify_icmpv6(transport, src, dst) {
                    return Err(TranslateError::BadChecksum);
                }
                let len_at = matches!(
                    transport[0],
                    icmp::V6_DEST_UNREACHABLE | icmp::V6_TIME_EXCEEDED
                )
                .then_some(4);
                let end = l4 + quote_end(transport, len_at, 8);
                let (q, inner) = parse_quoted_v6(bytes, l4 + ICMP_HEADER_LEN, end)?;
                quoted = Some(q);
                Content::Error { inner }
            }
            _ => {
                let (flow, tcp, echo) =
                    read_flow(protocol, transport, src, dst, icmp::PROTO_ICMPV6)?;
                if protocol == PROTO_TCP {
                    brisk_wire::tcp::TcpPacket::new_checked(transport)?;
                } else if protocol == PROTO_UDP {
                    UdpPacket::new_checked(transport)?;
                }
                Content::Flow { flow, tcp, echo }
            }
        };
        Ok(Ipv6Datagram {
            bytes,
            src,
            dst,
            traffic_class: (p.dscp() << 2) | p.ecn().bits(),
            hop_limit: p.hop_limit(),
            l4,
            content,
            quoted,
        })
    }

    /// Source address.
    pub fn src(&self) -> Ipv6Addr {
        self.src
    }
    /// Destination address.
    pub fn dst(&self) -> Ipv6Addr {
        self.dst
    }
    /// Hop limit as received.
    pub fn hop_limit(&self) -> u8 {
        self.hop_limit
    }
    /// ECN codepoint, carried over unchanged (RFC 7915 §5.1).
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.traffic_class)
    }
    /// What the datagram carries: a flow packet or an ICMP error.
    pub fn content(&self) -> &Content<Ipv6Addr> {
        &self.content
    }
    /// The datagram's bytes (without trailing bytes past its length).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Whether a router may forward this packet at all: hop limit left, and
    /// small enough for the IPv4 link. Call before creating NAT state.
    pub fn check_forward(&self, cfg: &TranslateConfig) -> Result<()> {
        if self.hop_limit <= 1 {
            return Err(TranslateError::HopLimitExceeded);
        }
        let v4_len = ipv4::HEADER_LEN + (self.bytes.len() - self.l4);
        if matches!(self.content, Content::Flow { .. }) && v4_len > cfg.ipv4_mtu {
            let mtu = u32::try_from(cfg.ipv4_mtu)
                .unwrap_or(u32::MAX)
                .saturating_add(20);
            return Err(TranslateError::PacketTooBig { mtu });
        }
        Ok(())
    }

    /// The IPv4 datagram for this packet under `plan`. `ident` is the IPv4
    /// identification to use (the caller keeps the counter).
    pub fn translate(
        &self,
        plan: &Plan<Ipv4Addr>,
        ident: u16,
        cfg: &TranslateConfig,
    ) -> Result<Vec<u8>> {
        self.check_forward(cfg)?;
        let ttl = self.hop_limit - 1;
        match (plan, &self.content, self.quoted) {
            (Plan::Flow(rw), Content::Flow { flow, echo, .. }, _) => {
                let transport = &self.bytes[self.l4..];
                let protocol = v4_protocol(flow.proto);
                let mut out = v4_header(
                    rw.src,
                    rw.dst,
                    protocol,
                    self.traffic_class,
                    ttl,
                    ident,
                    transport.len(),
                )?;
                out.extend_from_slice(transport);
                let old = pseudo6(self.src, self.dst, protocol_v6(flow.proto), transport.len());
                let new = pseudo4(rw.src, rw.dst, protocol, transport.len());
                rewrite_transport(
                    &mut out[ipv4::HEADER_LEN..],
                    flow.proto,
                    *echo,
                    rw,
                    old,
                    new,
                    Family::V4,
                );
                Ok(out)
            }
            (Plan::Error { src, dst, inner }, Content::Error { .. }, Some(q)) => {
                let icmp_in = &self.bytes[self.l4..];
                let rest = [icmp_in[4], icmp_in[5], icmp_in[6], icmp_in[7]];
                let (icmp_type, code) = (icmp_in[0], icmp_in[1]);
                let mapped = icmp::map_error_v6_to_v4(icmp_type, code, rest)
                    .ok_or(TranslateError::UntranslatableIcmp { icmp_type, code })?;
                let (new_type, new_code, new_rest) = match mapped {
                    MappedError::Plain { icmp_type, code } => (icmp_type, code, [0; 4]),
                    MappedError::TooBig { advertised_mtu } => {
                        let mtu = icmp::mtu_v6_to_v4(advertised_mtu, cfg.ipv4_mtu, cfg.ipv6_mtu);
                        let [hi, lo] = mtu.to_be_bytes();
                        (
                            icmp::V4_DEST_UNREACHABLE,
                            icmp::V4_CODE_FRAG_NEEDED,
                            [0, 0, hi, lo],
                        )
                    }
                    MappedError::Pointer {
                        icmp_type,
                        code,
                        pointer,
                    } => (icmp_type, code, [pointer, 0, 0, 0]),
                };
                let mut quote = self.quoted_to_v4(&q, inner)?;
                quote.truncate(icmp::V4_ERROR_MAX_LEN - ipv4::HEADER_LEN - ICMP_HEADER_LEN);
                let icmp_len = ICMP_HEADER_LEN + quote.len();
                let mut out = v4_header(
                    *src,
                    *dst,
                    icmp::PROTO_ICMP,
                    self.traffic_class,
                    ttl,
                    ident,
                    icmp_len,
                )?;
                out.extend_from_slice(&[new_type, new_code, 0, 0]);
                out.extend_from_slice(&new_rest);
                out.extend_from_slice(&quote);
                icmp::fill_icmpv4_checksum(&mut out[ipv4::HEADER_LEN..]);
                Ok(out)
            }
            _ => Err(TranslateError::PlanMismatch),
        }
    }

    /// The quoted IPv6 packet as IPv4: header rebuilt, ports or identifier
    /// rewritten, transport checksum patched (as far as it was quoted).
    fn quoted_to_v4(&self, q: &Quoted, rw: &Rewrite<Ipv4Addr>) -> Result<Vec<u8>> {
        let proto = proto_of(q.protocol, icmp::PROTO_ICMPV6)
            .ok_or(TranslateError::UnknownProtocol(q.protocol))?;
        let protocol = v4_protocol(proto);
        let declared = q.l4_len.min(usize::from(u16::MAX) - ipv4::HEADER_LEN);
        let mut out = v4_header(rw.src, rw.dst, protocol, q.tos, q.hop_limit, 0, declared)?;
        out.extend_from_slice(&self.bytes[q.l4..q.end]);
        let (old_src, old_dst) = quoted_addrs6(self.bytes, q.start);
        let old = pseudo6(old_src, old_dst, q.protocol, q.l4_len);
        let new = pseudo4(rw.src, rw.dst, protocol, q.l4_len);
        rewrite_transport(
            &mut out[ipv4::HEADER_LEN..],
            proto,
            q.echo,
            rw,
            old,
            new,
            Family::V4,
        );
        Ok(out)
    }
}

/// The quoted packet of an ICMPv6 error, which starts at `start` and ends
/// at `end` within `b`.
fn parse_quoted_v6(b: &[u8], start: usize, end: usize) -> Result<(Quoted, Flow<Ipv6Addr>)> {
    let q = b
        .get(start..end)
        .ok_or(WireError::Malformed("icmpv6 quote out of range"))?;
    if q.len() < ipv6::HEADER_LEN {
        return Err(WireError::Truncated {
            need: ipv6::HEADER_LEN,
            have: q.len(),
        }
        .into());
    }
    if q[0] >> 4 != 6 {
        return Err(WireError::BadVersion(q[0] >> 4).into());
    }
    let (src, dst) = quoted_addrs6(b, start);
    let (protocol, l4) = skip_extensions(q, q[6], ipv6::HEADER_LEN)?;
    let (flow, _, echo) = read_flow(protocol, &q[l4..], src, dst, icmp::PROTO_ICMPV6)?;
    let payload_len = usize::from(u16::from_be_bytes([q[4], q[5]]));
    let quoted = Quoted {
        start,
        end,
        l4: start + l4,
        protocol,
        tos: ((q[0] & 0x0f) << 4) | (q[1] >> 4),
        hop_limit: q[7],
        l4_len: payload_len.saturating_sub(l4 - ipv6::HEADER_LEN),
        echo,
    };
    Ok((quoted, flow))
}

/// Source and destination of an IPv6 header at `start` (40 bytes checked
/// by the caller).
fn quoted_addrs6(b: &[u8], start: usize) -> (Ipv6Addr, Ipv6Addr) {
    let mut s = [0u8; 16];
    let mut d = [0u8; 16];
    s.copy_from_slice(&b[start + 8..start + 24]);
    d.copy_from_slice(&b[start + 24..start + 40]);
    (Ipv6Addr::from(s), Ipv6Addr::from(d))
}

impl<'a> Ipv4Datagram<'a> {
    /// Validates the header (checksum included) and transport header.
    /// Bytes after the total length are ignored.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let p = Ipv4Packet::new_checked(bytes)?;
        if !p.verify_checksum() {
            return Err(TranslateError::BadChecksum);
        }
        if p.is_fragment() {
            return Err(TranslateError::Fragment);
        }
        let bytes = &bytes[..p.total_len()];
        let (src, dst, l4) = (p.src(), p.dst(), p.header_len());
        let transport = &bytes[l4..];
        let mut quoted = None;
        let content = match p.protocol() {
            icmp::PROTO_ICMP
                if transport
                    .first()
                    .is_some_and(|&t| icmp::kind_v4(t) == IcmpKind::Error) =>
            {
                if transport.len() < ICMP_HEADER_LEN + ipv4::HEADER_LEN {
                    return Err(
                        WireError::Malformed("icmp error too short to quote a header").into(),
                    );
                }
                if !icmp::verify_icmpv4(transport) {
                    return Err(TranslateError::BadChecksum);
                }
                let end = l4 + quote_end(transport, Some(5), 4);
                let (q, inner) = parse_quoted_v4(bytes, l4 + ICMP_HEADER_LEN, end)?;
                quoted = Some(q);
                Content::Error { inner }
            }
            protocol => {
                let (flow, tcp, echo) = read_flow(protocol, transport, src, dst, icmp::PROTO_ICMP)?;
                if protocol == PROTO_TCP {
                    brisk_wire::tcp::TcpPacket::new_checked(transport)?;
                } else if protocol == PROTO_UDP {
                    UdpPacket::new_checked(transport)?;
                }
                Content::Flow { flow, tcp, echo }
            }
        };
        Ok(Ipv4Datagram {
            bytes,
            src,
            dst,
            tos: (p.dscp() << 2) | p.ecn().bits(),
            ttl: p.ttl(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
            l4,
            content,
            quoted,
        })
    }

    /// Source address.
    pub fn src(&self) -> Ipv4Addr {
        self.src
    }
    /// Destination address.
    pub fn dst(&self) -> Ipv4Addr {
        self.dst
    }
    /// TTL as received.
    pub fn ttl(&self) -> u8 {
        self.ttl
    }
    /// ECN codepoint, carried over unchanged (RFC 7915 §4.1).
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.tos)
    }
    /// What the datagram carries: a flow packet or an ICMP error.
    pub fn content(&self) -> &Content<Ipv4Addr> {
        &self.content
    }
    /// The datagram's bytes (without trailing bytes past its length).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Whether a router may forward this packet: TTL left, and either small
    /// enough for the IPv6 link or allowed to be fragmented.
    pub fn check_forward(&self, cfg: &TranslateConfig) -> Result<()> {
        if self.ttl <= 1 {
            return Err(TranslateError::HopLimitExceeded);
        }
        let v6_len = ipv6::HEADER_LEN + (self.bytes.len() - self.l4);
        if matches!(self.content, Content::Flow { .. }) && self.dont_frag && v6_len > cfg.ipv6_mtu {
            let mtu = u16::try_from(cfg.ipv6_mtu.saturating_sub(20)).unwrap_or(u16::MAX);
            return Err(TranslateError::FragmentationNeeded { mtu });
        }
        Ok(())
    }

    /// The IPv6 datagram(s) for this packet under `plan`: one, or several
    /// fragments when DF was clear and the result exceeds the lowest IPv6
    /// MTU.
    pub fn translate(&self, plan: &Plan<Ipv6Addr>, cfg: &TranslateConfig) -> Result<Vec<Vec<u8>>> {
        self.check_forward(cfg)?;
        let hop_limit = self.ttl - 1;
        match (plan, &self.content, self.quoted) {
            (Plan::Flow(rw), Content::Flow { flow, echo, .. }, _) => {
                let transport = &self.bytes[self.l4..];
                let next_header = protocol_v6(flow.proto);
                let mut out = v6_header(
                    rw.src,
                    rw.dst,
                    next_header,
                    self.tos,
                    hop_limit,
                    transport.len(),
                )?;
                out.extend_from_slice(transport);
                let old = pseudo4(self.src, self.dst, v4_protocol(flow.proto), transport.len());
                let new = pseudo6(rw.src, rw.dst, next_header, transport.len());
                let l4 = &mut out[ipv6::HEADER_LEN..];
                if flow.proto == Proto::Udp && be16(l4, 6) == Some(0) {
                    // IPv4 UDP may omit the checksum; IPv6 UDP may not
                    // (RFC 7915 §4.5): compute it over the whole datagram.
                    rewrite_ports(l4, rw.src_port, rw.dst_port);
                    if let Ok(mut udp) = UdpPacket::new_checked(&mut *l4) {
                        udp.fill_checksum(IpAddr::V6(rw.src), IpAddr::V6(rw.dst));
                    }
                } else {
                    rewrite_transport(l4, flow.proto, *echo, rw, old, new, Family::V6);
                }
                let frag_mtu = cfg.lowest_ipv6_mtu.min(cfg.ipv6_mtu);
                if !self.dont_frag && out.len() > frag_mtu {
                    Ok(fragment_v6(&out, frag_mtu, self.ident))
                } else {
                    Ok(vec![out])
                }
            }
            (Plan::Error { src, dst, inner }, Content::Error { .. }, Some(q)) => {
                let icmp_in = &self.bytes[self.l4..];
                let rest = [icmp_in[4], icmp_in[5], icmp_in[6], icmp_in[7]];
                let (icmp_type, code) = (icmp_in[0], icmp_in[1]);
                let mapped = icmp::map_error_v4_to_v6(icmp_type, code, rest)
                    .ok_or(TranslateError::UntranslatableIcmp { icmp_type, code })?;
                let (new_type, new_code, new_rest) = match mapped {
                    MappedError::Plain { icmp_type, code } => (icmp_type, code, [0; 4]),
                    MappedError::TooBig { advertised_mtu } => {
                        let inner_total = ipv4::HEADER_LEN + q.l4_len;
                        let mtu = icmp::mtu_v4_to_v6(
                            advertised_mtu,
                            inner_total,
                            cfg.ipv4_mtu,
                            cfg.ipv6_mtu,
                        );
                        (icmp::V6_PACKET_TOO_BIG, 0, mtu.to_be_bytes())
                    }
                    MappedError::Pointer {
                        icmp_type,
                        code,
                        pointer,
                    } => (icmp_type, code, u32::from(pointer).to_be_bytes()),
                };
                let mut quote = self.quoted_to_v6(&q, inner)?;
                quote.truncate(icmp::V6_ERROR_MAX_LEN - ipv6::HEADER_LEN - ICMP_HEADER_LEN);
                let icmp_len = ICMP_HEADER_LEN + quote.len();
                let mut out = v6_header(
                    *src,
                    *dst,
                    icmp::PROTO_ICMPV6,
                    self.tos,
                    hop_limit,
                    icmp_len,
                )?;
                out.extend_from_slice(&[new_type, new_code, 0, 0]);
                out.extend_from_slice(&new_rest);
                out.extend_from_slice(&quote);
                icmp::fill_icmpv6_checksum(&mut out[ipv6::HEADER_LEN..], *src, *dst);
                Ok(vec![out])
            }
            _ => Err(TranslateError::PlanMismatch),
        }
    }

    /// The quoted IPv4 packet as IPv6.
    fn quoted_to_v6(&self, q: &Quoted, rw: &Rewrite<Ipv6Addr>) -> Result<Vec<u8>> {
        let proto = proto_of(q.protocol, icmp::PROTO_ICMP)
            .ok_or(TranslateError::UnknownProtocol(q.protocol))?;
        let next_header = protocol_v6(proto);
        let mut out = v6_header(rw.src, rw.dst, next_header, q.tos, q.hop_limit, q.l4_len)?;
        out.extend_from_slice(&self.bytes[q.l4..q.end]);
        let (old_src, old_dst) = quoted_addrs4(self.bytes, q.start);
        let old = pseudo4(old_src, old_dst, q.protocol, q.l4_len);
        let new = pseudo6(rw.src, rw.dst, next_header, q.l4_len);
        rewrite_transport(
            &mut out[ipv6::HEADER_LEN..],
            proto,
            q.echo,
            rw,
            old,
            new,
            Family::V6,
        );
        Ok(out)
    }
}

/// The quoted packet of an ICMPv4 error, `b[start..end]`.
fn parse_quoted_v4(b: &[u8], start: usize, end: usize) -> Result<(Quoted, Flow<Ipv4Addr>)> {
    let q = b
        .get(start..end)
        .ok_or(WireError::Malformed("icmp quote out of range"))?;
    if q.len() < ipv4::HEADER_LEN {
        return Err(WireError::Truncated {
            need: ipv4::HEADER_LEN,
            have: q.len(),
        }
        .into());
    }
    if q[0] >> 4 != 4 {
        return Err(WireError::BadVersion(q[0] >> 4).into());
    }
    let ihl = usize::from(q[0] & 0x0f) * 4;
    if ihl < ipv4::HEADER_LEN || ihl > q.len() {
        return Err(WireError::Malformed("quoted ipv4 header length").into());
    }
    let frag = u16::from_be_bytes([q[6], q[7]]);
    if frag & 0x1fff != 0 {
        // A non-first fragment has no ports to map.
        return Err(TranslateError::Fragment);
    }
    let (src, dst) = quoted_addrs4(b, start);
    let protocol = q[9];
    let (flow, _, echo) = read_flow(protocol, &q[ihl..], src, dst, icmp::PROTO_ICMP)?;
    let total = usize::from(u16::from_be_bytes([q[2], q[3]]));
    let quoted = Quoted {
        start,
        end,
        l4: start + ihl,
        protocol,
        tos: q[1],
        hop_limit: q[8],
        l4_len: total.saturating_sub(ihl),
        echo,
    };
    Ok((quoted, flow))
}

fn quoted_addrs4(b: &[u8], start: usize) -> (Ipv4Addr, Ipv4Addr) {
    let a = |at: usize| Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3]);
    (a(start + 12), a(start + 16))
}

/// The protocol a NAT tracks for a protocol number, if any.
fn proto_of(protocol: u8, icmp_proto: u8) -> Option<Proto> {
    match protocol {
        PROTO_TCP => Some(Proto::Tcp),
        PROTO_UDP => Some(Proto::Udp),
        p if p == icmp_proto => Some(Proto::Icmp),
        _ => None,
    }
}

fn v4_protocol(proto: Proto) -> u8 {
    match proto {
        Proto::Tcp => PROTO_TCP,
        Proto::Udp => PROTO_UDP,
        Proto::Icmp => icmp::PROTO_ICMP,
    }
}

fn protocol_v6(proto: Proto) -> u8 {
    match proto {
        Proto::Tcp => PROTO_TCP,
        Proto::Udp => PROTO_UDP,
        Proto::Icmp => icmp::PROTO_ICMPV6,
    }
}

/// An IPv4 header for `payload_len` bytes, DF set above 1260 bytes.
fn v4_header(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    protocol: u8,
    tos: u8,
    ttl: u8,
    ident: u16,
    payload_len: usize,
) -> Result<Vec<u8>> {
    let mut out = vec![0u8; ipv4::HEADER_LEN];
    let repr = Ipv4Repr {
        src,
        dst,
        protocol,
        dscp: tos >> 2,
        ecn: Ecn::from_bits(tos),
        ttl,
        ident,
        payload_len,
    };
    repr.emit(&mut out)?;
    // `emit` always sets DF; clear it for small packets and re-checksum.
    // (A view cannot do it: the payload is not appended yet.)
    if ipv4::HEADER_LEN + payload_len <= DF_THRESHOLD {
        out[6] &= !0x40;
        out[10..12].copy_from_slice(&[0, 0]);
        let c = checksum::of(&out);
        out[10..12].copy_from_slice(&c.to_be_bytes());
    }
    Ok(out)
}

/// An IPv6 header for `payload_len` bytes, flow label zero.
fn v6_header(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    next_header: u8,
    traffic_class: u8,
    hop_limit: u8,
    payload_len: usize,
) -> Result<Vec<u8>> {
    let mut out = vec![0u8; ipv6::HEADER_LEN];
    Ipv6Repr {
        src,
        dst,
        next_header,
        dscp: traffic_class >> 2,
        ecn: Ecn::from_bits(traffic_class),
        flow_label: 0,
        hop_limit,
        payload_len,
    }
    .emit(&mut out)?;
    Ok(out)
}

fn pseudo6(src: Ipv6Addr, dst: Ipv6Addr, protocol: u8, len: usize) -> u32 {
    checksum::pseudo_header_ip(IpAddr::V6(src), IpAddr::V6(dst), protocol, len)
}

fn pseudo4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, len: usize) -> u32 {
    checksum::pseudo_header_ip(IpAddr::V4(src), IpAddr::V4(dst), protocol, len)
}

/// Folds a one's complement sum to 16 bits.
fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// RFC 1624 eqn. 3: the checksum after the covered data whose sum was `old`
/// became data whose sum is `new`.
fn adjust(check: u16, old: u32, new: u32) -> u16 {
    let sum = u32::from(!check) + u32::from(!fold(old)) + u32::from(fold(new));
    !fold(sum)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

fn rewrite_ports(l4: &mut [u8], src_port: u16, dst_port: u16) {
    l4[0..2].copy_from_slice(&src_port.to_be_bytes());
    l4[2..4].copy_from_slice(&dst_port.to_be_bytes());
}

/// Rewrites the ports (or echo type and identifier) of a transport header
/// of at least 8 bytes translated to `to`, and patches its checksum for
/// those changes and the pseudo-header moving from sum `old` to sum `new`.
/// ICMPv4 has no pseudo-header, so the caller passes 0 for its side. A
/// quoted TCP header cut before its checksum is left unpatched.
fn rewrite_transport<A: Copy>(
    l4: &mut [u8],
    proto: Proto,
    echo: Option<Echo>,
    rw: &Rewrite<A>,
    old_pseudo: u32,
    new_pseudo: u32,
    to: Family,
) {
    let words = |l4: &[u8], range: core::ops::Range<usize>| checksum::add(0, &l4[range]);
    match proto {
        Proto::Tcp | Proto::Udp => {
            let ck_at = if proto == Proto::Tcp { 16 } else { 6 };
            let old_ports = words(l4, 0..4);
            rewrite_ports(l4, rw.src_port, rw.dst_port);
            let new_ports = words(l4, 0..4);
            let Some(old_ck) = be16(l4, ck_at) else {
                return;
            };
            if proto == Proto::Udp && old_ck == 0 {
                return;
            }
            let mut ck = adjust(
                old_ck,
                old_pseudo.wrapping_add(old_ports),
                new_pseudo.wrapping_add(new_ports),
            );
            if proto == Proto::Udp && ck == 0 {
                ck = 0xffff;
            }
            l4[ck_at..ck_at + 2].copy_from_slice(&ck.to_be_bytes());
        }
        Proto::Icmp => {
            let (old_pseudo, new_pseudo) = match to {
                Family::V4 => (old_pseudo, 0),
                Family::V6 => (0, new_pseudo),
            };
            let old = old_pseudo
                .wrapping_add(words(l4, 0..2))
                .wrapping_add(words(l4, 4..6));
            let (id, new_type) = match (echo, to) {
                (Some(Echo::Reply), Family::V4) => (rw.dst_port, icmp::V4_ECHO_REPLY),
                (Some(Echo::Reply), Family::V6) => (rw.dst_port, icmp::V6_ECHO_REPLY),
                (_, Family::V4) => (rw.src_port, icmp::V4_ECHO_REQUEST),
                (_, Family::V6) => (rw.src_port, icmp::V6_ECHO_REQUEST),
            };
            l4[0] = new_type;
            l4[4..6].copy_from_slice(&id.to_be_bytes());
            let new = new_pseudo
                .wrapping_add(words(l4, 0..2))
                .wrapping_add(words(l4, 4..6));
            let old_ck = u16::from_be_bytes([l4[2], l4[3]]);
            l4[2..4].copy_from_slice(&adjust(old_ck, old, new).to_be_bytes());
        }
    }
}

/// Splits an IPv6 packet (40-byte header, no extension headers) into
/// fragments of at most `mtu` bytes; the fragment identification is the
/// IPv4 identification (RFC 7915 §4.1).
fn fragment_v6(packet: &[u8], mtu: usize, ident: u16) -> Vec<Vec<u8>> {
    let (header, payload) = packet.split_at(ipv6::HEADER_LEN);
    let next_header = header[6];
    let chunk = (mtu.saturating_sub(ipv6::HEADER_LEN + FRAG_HEADER_LEN) & !7).max(8);
    let mut out = Vec::with_capacity(payload.len().div_ceil(chunk));
    let mut offset = 0;
    while offset < payload.len() {
        let end = (offset + chunk).min(payload.len());
        let more = u16::from(end < payload.len());
        let mut f = Vec::with_capacity(ipv6::HEADER_LEN + FRAG_HEADER_LEN + end - offset);
        f.extend_from_slice(header);
        f[6] = EXT_FRAGMENT;
        let len = u16::try_from(FRAG_HEADER_LEN + end - offset).unwrap_or(u16::MAX);
        f[4..6].copy_from_slice(&len.to_be_bytes());
        // Offsets are below 64 KiB, so offset / 8 fits 13 bits.
        let offset_flags = (u16::try_from(offset / 8).unwrap_or(0) << 3) | more;
        f.extend_from_slice(&[next_header, 0]);
        f.extend_from_slice(&offset_flags.to_be_bytes());
        f.extend_from_slice(&u32::from(ident).to_be_bytes());
        f.extend_from_slice(&payload[offset..end]);
        out.push(f);
        offset = end;
    }
    out
}

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;
