//! Reading a datagram as a TCP segment the optimizer can act on, and the
//! two packets it ever writes itself: a local ACK in the receiver's name
//! and a receiver's packet with its acknowledgment moved forward.
//!
//! Everything here takes bytes from the network: a datagram that is not
//! TCP, is a fragment, is cut short or fails a checksum is reported as such
//! and forwarded untouched by the caller, never acted on.

use brisk_wire::Ecn;
use brisk_wire::ip::{self, parse_tcp};
use brisk_wire::ipv4::Ipv4Packet;
use brisk_wire::tcp::{SackBlock, TcpFlags, TcpOption, TcpPacket, TcpRepr};
use std::net::{IpAddr, SocketAddr};

/// What a datagram turned out to be.
#[derive(Debug)]
pub(crate) enum Read {
    /// Not TCP (or an IPv4 fragment, whose TCP header is not whole here).
    NotTcp,
    /// Claims to be TCP but is cut short, malformed or fails a checksum.
    Broken,
    /// A whole, checksummed TCP segment.
    Segment(Seen),
}

/// The options of a segment, as far as the optimizer cares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SeenOptions {
    /// MSS option, bytes.
    pub(crate) mss: Option<u16>,
    /// Window scale shift (clamped to 14 as receivers do, RFC 7323 §2.3).
    pub(crate) window_scale: Option<u8>,
    /// SACK permitted (SYN only).
    pub(crate) sack_permitted: bool,
    /// Timestamps: TSval, TSecr.
    pub(crate) timestamps: Option<(u32, u32)>,
    /// SACK blocks.
    pub(crate) sack: Vec<SackBlock>,
    /// An option the optimizer does not understand (or Fast Open, whose
    /// data in the SYN it will not take responsibility for).
    pub(crate) unknown: bool,
}

/// A TCP segment's header fields, read from a verified datagram.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) src: SocketAddr,
    pub(crate) dst: SocketAddr,
    pub(crate) seq: u32,
    pub(crate) ack: u32,
    pub(crate) flags: TcpFlags,
    pub(crate) window: u16,
    pub(crate) payload_len: usize,
    pub(crate) options: SeenOptions,
}

impl Seen {
    /// Sequence space the segment takes: its data plus one for SYN and FIN.
    pub(crate) fn seq_len(&self) -> u64 {
        self.payload_len as u64
            + u64::from(self.flags.contains(TcpFlags::SYN))
            + u64::from(self.flags.contains(TcpFlags::FIN))
    }
    pub(crate) fn has(&self, f: TcpFlags) -> bool {
        self.flags.contains(f)
    }
}

/// Reads `datagram` (a whole IPv4 or IPv6 datagram).
pub(crate) fn read(datagram: &[u8]) -> Read {
    let Ok(summary) = ip::summarize(datagram) else {
        return Read::NotTcp;
    };
    if summary.flow.protocol != brisk_wire::tcp::PROTOCOL {
        return Read::NotTcp;
    }
    if summary.version == 4 {
        match Ipv4Packet::new_checked(datagram) {
            Ok(p) if p.is_fragment() => return Read::NotTcp,
            Ok(_) => {}
            Err(_) => return Read::Broken,
        }
    }
    let Ok(seg) = parse_tcp(datagram) else {
        return Read::Broken;
    };
    let mut options = SeenOptions::default();
    for o in &seg.tcp.options {
        match o {
            TcpOption::Mss(m) => options.mss = Some(*m),
            TcpOption::WindowScale(s) => options.window_scale = Some((*s).min(14)),
            TcpOption::SackPermitted => options.sack_permitted = true,
            TcpOption::Timestamps { tsval, tsecr } => options.timestamps = Some((*tsval, *tsecr)),
            TcpOption::Sack(blocks) => options.sack.clone_from(blocks),
            TcpOption::EndOfList | TcpOption::Nop => {}
            TcpOption::FastOpen(_) | TcpOption::Unknown { .. } => options.unknown = true,
        }
    }
    Read::Segment(Seen {
        src: SocketAddr::new(seg.src, seg.tcp.src_port),
        dst: SocketAddr::new(seg.dst, seg.tcp.dst_port),
        seq: seg.tcp.seq_number,
        ack: seg.tcp.ack_number,
        flags: seg.tcp.flags,
        window: seg.tcp.window,
        payload_len: seg.payload.len(),
        options,
    })
}

/// The fields of an ACK the optimizer sends to the server in the client's
/// name: the client's own sequence number, timestamps and window scale.
#[derive(Debug, Clone)]
pub(crate) struct LocalAck<'a> {
    pub(crate) from: SocketAddr,
    pub(crate) to: SocketAddr,
    pub(crate) seq: u32,
    pub(crate) ack: u32,
    pub(crate) window: u16,
    pub(crate) timestamps: Option<(u32, u32)>,
    pub(crate) sack: &'a [SackBlock],
}

/// Builds the datagram of a local ACK; `None` only if the addresses are of
/// two families, which a tracked connection never has.
pub(crate) fn local_ack(a: &LocalAck<'_>) -> Option<Vec<u8>> {
    let mut options = Vec::with_capacity(2);
    if let Some((tsval, tsecr)) = a.timestamps {
        options.push(TcpOption::Nop);
        options.push(TcpOption::Nop);
        options.push(TcpOption::Timestamps { tsval, tsecr });
    }
    // Room for at most three blocks beside timestamps (RFC 2018 §3).
    let room = if a.timestamps.is_some() { 3 } else { 4 };
    if !a.sack.is_empty() {
        options.push(TcpOption::Nop);
        options.push(TcpOption::Nop);
        options.push(TcpOption::Sack(a.sack.iter().take(room).copied().collect()));
    }
    let repr = TcpRepr {
        src_port: a.from.port(),
        dst_port: a.to.port(),
        seq_number: a.seq,
        ack_number: a.ack,
        flags: TcpFlags::ACK,
        window: a.window,
        urgent_pointer: 0,
        options,
    };
    ip::tcp_datagram(a.from.ip(), a.to.ip(), Ecn::NotEct, &repr, &[]).ok()
}

/// Moves the acknowledgment of a client's packet (one that carries data,
/// FIN or anything else the server must see) up to `ack` with `window`,
/// blanks its SACK blocks (they speak of data below the new acknowledgment)
/// with no-ops, and fixes the TCP checksum. Returns false, leaving the
/// bytes as they were, if the datagram is not a whole TCP segment.
pub(crate) fn move_ack(datagram: &mut [u8], ack: u32, window: u16) -> bool {
    rewrite(datagram, |tcp| {
        tcp.set_ack_number(ack);
        tcp.set_window(window);
        blank_sack(tcp.options_bytes_mut());
    })
}

/// Sets the window field of a client's segment (its handshake ACK offering
/// more than the buffers hold), checksum fixed. False if the datagram is
/// not a whole TCP segment; it is then left as it was.
pub(crate) fn set_window(datagram: &mut [u8], window: u16) -> bool {
    rewrite(datagram, |tcp| tcp.set_window(window))
}

/// Applies `change` to the TCP header of a datagram and fixes the TCP
/// checksum (the IP header does not change).
fn rewrite(datagram: &mut [u8], change: impl FnOnce(&mut TcpPacket<&mut [u8]>)) -> bool {
    let Ok(s) = ip::summarize(datagram) else {
        return false;
    };
    let (src, dst): (IpAddr, IpAddr) = (s.flow.src, s.flow.dst);
    let Some(bytes) = datagram.get_mut(s.transport_offset..s.total_len) else {
        return false;
    };
    let Ok(mut tcp) = TcpPacket::new_checked(bytes) else {
        return false;
    };
    change(&mut tcp);
    tcp.fill_checksum(src, dst);
    true
}

/// Overwrites every SACK option in an options area with no-ops, walking the
/// kind/length list without trusting a length that runs past the end.
fn blank_sack(options: &mut [u8]) {
    use brisk_wire::tcp::option::kind;
    let mut at = 0;
    while let Some(&k) = options.get(at) {
        match k {
            kind::END_OF_LIST => return,
            kind::NOP => at += 1,
            _ => {
                let Some(&len) = options.get(at + 1) else {
                    return;
                };
                let end = at + usize::from(len);
                if len < 2 || end > options.len() {
                    return;
                }
                if k == kind::SACK {
                    options[at..end].fill(kind::NOP);
                }
                at = end;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_sack_leaves_other_options_and_survives_bad_lengths() {
        let mut o = [
            1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        blank_sack(&mut o);
        assert_eq!(&o[..12], &[1; 12]);
        assert_eq!(&o[12..], &[8, 10, 1, 2, 3, 4, 5, 6, 7, 8]);
        let mut bad = [5, 40, 0, 0];
        blank_sack(&mut bad);
        assert_eq!(bad, [5, 40, 0, 0]);
        let mut zero = [5, 0, 5];
        blank_sack(&mut zero);
        assert_eq!(zero, [5, 0, 5]);
    }
}
