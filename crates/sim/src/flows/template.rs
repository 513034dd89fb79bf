//! A flow's datagram built once and re-stamped for every packet: the
//! built-in sources send the same addresses, ports and length each time,
//! and only the [`stamp`](super::stamp) changes. Patching those 16 bytes and
//! finishing the UDP checksum from a precomputed partial sum costs a few
//! words of arithmetic instead of a pass over the whole payload.

use super::{FlowAddrs, stamp};
use brisk_time::Instant;
use brisk_wire::{Ecn, checksum, ip, udp};

/// A valid IP/UDP datagram whose payload starts with a zero stamp.
#[derive(Debug, Clone)]
pub(crate) struct StampedDatagram {
    bytes: Vec<u8>,
    /// Where the UDP header starts (after the IPv4 or IPv6 header).
    udp_offset: usize,
    /// Ones' complement sum of the pseudo-header and the UDP datagram with
    /// its checksum field and stamp zeroed.
    base_sum: u32,
}

impl StampedDatagram {
    /// The datagram `addrs.sender -> addrs.receiver` carrying `payload_len`
    /// bytes (at least a stamp's worth). `None` when [`ip::udp_datagram`]
    /// refuses it (mixed families, over 64 KiB).
    pub(crate) fn new(addrs: FlowAddrs, ecn: Ecn, payload_len: usize) -> Option<Self> {
        let payload = vec![0u8; payload_len.max(stamp::LEN)];
        let mut bytes = ip::udp_datagram(addrs.sender, addrs.receiver, ecn, &payload).ok()?;
        let udp_len = udp::HEADER_LEN + payload.len();
        let udp_offset = bytes.len() - udp_len;
        bytes[udp_offset + 6..udp_offset + 8].fill(0);
        let pseudo = checksum::pseudo_header_ip(
            addrs.sender.ip(),
            addrs.receiver.ip(),
            udp::PROTOCOL,
            udp_len,
        );
        let base_sum = checksum::add(pseudo, &bytes[udp_offset..]);
        Some(StampedDatagram {
            bytes,
            udp_offset,
            base_sum,
        })
    }

    /// A copy stamped with `seq` and `sent`, checksums valid: byte for byte
    /// what [`ip::udp_datagram`] builds for the stamped payload.
    #[cfg(test)]
    pub(crate) fn stamped(&self, seq: u64, sent: Instant) -> Vec<u8> {
        self.stamped_in(Vec::new(), seq, sent)
    }

    /// [`StampedDatagram::stamped`] written over `buf`, reusing its
    /// allocation. A `buf` of the template's length is taken to be one of
    /// its own datagrams handed back by the network, which rewrites at
    /// most the IP header (ECN and its checksum) and never a payload byte:
    /// only the headers and the stamp are written again, not the payload,
    /// whose copy cost more than the rest of the packet's trip. Any other
    /// `buf` gets the whole datagram.
    pub(crate) fn stamped_in(&self, mut buf: Vec<u8>, seq: u64, sent: Instant) -> Vec<u8> {
        let head = self.udp_offset + udp::HEADER_LEN + stamp::LEN;
        if buf.len() == self.bytes.len() {
            buf[..head].copy_from_slice(&self.bytes[..head]);
            debug_assert_eq!(buf[head..], self.bytes[head..], "a payload byte changed");
        } else {
            buf.clear();
            buf.extend_from_slice(&self.bytes);
        }
        let mut d = buf;
        let at = self.udp_offset + udp::HEADER_LEN;
        let s = &mut d[at..at + stamp::LEN];
        stamp::write(s, seq, sent);
        // The stamp starts on a word boundary, so its words add on.
        let c = match checksum::finish(checksum::add(self.base_sum, s)) {
            // RFC 768: a computed zero is sent as all ones.
            0 => 0xffff,
            c => c,
        };
        d[self.udp_offset + 6..self.udp_offset + 8].copy_from_slice(&c.to_be_bytes());
        d
    }

    /// The UDP payload length.
    pub(crate) fn payload_len(&self) -> usize {
        self.bytes.len() - self.udp_offset - udp::HEADER_LEN
    }

    /// The whole datagram's length.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> [FlowAddrs; 2] {
        [
            FlowAddrs {
                sender: "10.1.0.1:40000".parse().unwrap(),
                receiver: "10.2.0.1:42000".parse().unwrap(),
            },
            FlowAddrs {
                sender: "[2001:db8:1::1]:40000".parse().unwrap(),
                receiver: "[2001:db8:2::1]:42000".parse().unwrap(),
            },
        ]
    }

    /// What the sources built before templates: the whole datagram anew.
    fn from_scratch(addrs: FlowAddrs, ecn: Ecn, len: usize, seq: u64, t: Instant) -> Vec<u8> {
        let mut payload = vec![0u8; len];
        stamp::write(&mut payload, seq, t);
        ip::udp_datagram(addrs.sender, addrs.receiver, ecn, &payload).unwrap()
    }

    #[test]
    fn stamped_copies_equal_datagrams_built_from_scratch() {
        for addrs in families() {
            for (ecn, len) in [(Ecn::NotEct, 1472), (Ecn::Ect1, 16), (Ecn::Ect0, 333)] {
                let t = StampedDatagram::new(addrs, ecn, len).unwrap();
                assert_eq!(t.payload_len(), len);
                // A recycled buffer holds an older datagram, maybe longer.
                let mut old = vec![0xa5; 2000];
                for (seq, ns) in [(0, 0), (1, 1_000), (u64::MAX, u64::MAX), (77, 5 << 40)] {
                    let at = Instant::from_nanos(ns);
                    let d = t.stamped(seq, at);
                    assert_eq!(d, from_scratch(addrs, ecn, len, seq, at));
                    old = t.stamped_in(old, seq, at);
                    assert_eq!(old, d);
                    let (_, _, _, payload) = ip::parse_udp(&d).unwrap();
                    assert_eq!(stamp::read(payload), Some((seq, at)));
                }
            }
        }
    }

    #[test]
    fn a_datagram_handed_back_after_marking_is_restamped_exactly() {
        for addrs in families() {
            let t = StampedDatagram::new(addrs, Ecn::Ect0, 1000).unwrap();
            let mut d = t.stamped(1, Instant::from_millis(1));
            // What a queue does to it on the way: CE in the real header.
            ip::set_ecn(&mut d, Ecn::Ce).unwrap();
            let at = Instant::from_millis(2);
            let again = t.stamped_in(d, 2, at);
            assert_eq!(again, from_scratch(addrs, Ecn::Ect0, 1000, 2, at));
            // A shorter buffer (another flow's, say) is written whole.
            let short = t.stamped_in(vec![0xa5; 64], 3, at);
            assert_eq!(short, from_scratch(addrs, Ecn::Ect0, 1000, 3, at));
        }
    }

    #[test]
    fn a_computed_zero_checksum_is_sent_as_all_ones() {
        for addrs in families() {
            let t = StampedDatagram::new(addrs, Ecn::NotEct, 16).unwrap();
            // The stamp's last word is the low 16 bits of the time: pick the
            // value that brings the sum to 0xffff, so the checksum is zero.
            let fold = |mut s: u32| {
                while s >> 16 != 0 {
                    s = (s & 0xffff) + (s >> 16);
                }
                s
            };
            let low = 0xffff - fold(t.base_sum);
            let at = Instant::from_nanos(u64::from(low));
            let d = t.stamped(0, at);
            let off = t.udp_offset;
            assert_eq!(&d[off + 6..off + 8], &[0xff, 0xff]);
            assert_eq!(d, from_scratch(addrs, Ecn::NotEct, 16, 0, at));
            assert!(ip::parse_udp(&d).is_ok());
        }
    }

    #[test]
    fn mixed_families_give_no_template() {
        let addrs = FlowAddrs {
            sender: "10.1.0.1:1".parse().unwrap(),
            receiver: "[2001:db8::1]:1".parse().unwrap(),
        };
        assert!(StampedDatagram::new(addrs, Ecn::NotEct, 100).is_none());
    }
}
