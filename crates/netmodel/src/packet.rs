//! The unit that flows through queues and links: a real IP datagram plus the
//! bookkeeping a model needs (an id for tracing, timestamps for delay); and
//! [`HeaderMemo`], which spares a source that sends one header over and
//! over reading it again for every packet.

use brisk_time::Instant;
use brisk_wire::{Ecn, FlowKey, IpSummary, WireError, ip};

/// A real IPv4 or IPv6 datagram in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The whole datagram, IP header first. Rewrite its ECN field with
    /// [`Packet::set_ecn`], which keeps the copy the packet reads it from.
    pub data: Vec<u8>,
    /// Unique within a run; assigned by whoever created the packet.
    pub id: u64,
    /// When the packet entered the network (sent by its host).
    pub sent_at: Instant,
    /// When it entered the current queue; set by the queue.
    pub enqueued_at: Instant,
    flow: FlowKey,
    /// The bits of the header's ECN codepoint, kept beside it: a packet
    /// that waited in a deep queue has a cold header, and reading it there
    /// was the costliest load of a saturated run. A whole word: a one-byte
    /// field left seven bytes of padding, which every move of a packet
    /// copied in two overlapping halves that the processor cannot forward
    /// from the stores just made.
    ecn_bits: u64,
}

impl Packet {
    /// Wraps a datagram, validating its IP header once. Malformed bytes are
    /// an error, so every model downstream may rely on a valid header.
    pub fn new(id: u64, sent_at: Instant, data: Vec<u8>) -> Result<Packet, WireError> {
        let s = ip::summarize(&data)?;
        Ok(Packet::from_summary(id, sent_at, data, s))
    }

    /// [`Packet::new`] with the header read through `memo`: a datagram whose
    /// header and length equal the last one `memo` saw is not parsed again.
    /// Same result as [`Packet::new`], errors included.
    pub fn new_with_memo(
        id: u64,
        sent_at: Instant,
        data: Vec<u8>,
        memo: &mut HeaderMemo,
    ) -> Result<Packet, WireError> {
        let s = memo.summarize(&data)?;
        Ok(Packet::from_summary(id, sent_at, data, s))
    }

    /// The packet of `data` whose header `s` describes; bytes past the IP
    /// length (link padding) are cut.
    fn from_summary(id: u64, sent_at: Instant, mut data: Vec<u8>, s: IpSummary) -> Packet {
        data.truncate(s.total_len);
        Packet {
            data,
            id,
            sent_at,
            enqueued_at: sent_at,
            flow: s.flow,
            ecn_bits: u64::from(s.ecn.bits()),
        }
    }

    /// Bytes on the wire (the IP datagram; link-layer framing is not counted).
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when `data` is empty; a packet built by [`Packet::new`] always holds at least an IP header.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The 5-tuple, read once at construction.
    pub fn flow(&self) -> FlowKey {
        self.flow
    }

    /// The ECN codepoint as it is now in the header.
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.ecn_bits as u8)
    }

    /// Rewrites the ECN codepoint in the real header (checksum kept valid).
    pub fn set_ecn(&mut self, ecn: Ecn) {
        // The header was validated in `new`, so this cannot fail.
        if ip::set_ecn(&mut self.data, ecn).is_ok() {
            self.ecn_bits = u64::from(ecn.bits());
        }
    }

    /// Marks CE if the packet is ECN-capable; returns whether it was.
    /// A queue calls this where it would otherwise drop.
    pub fn try_mark_ce(&mut self) -> bool {
        if self.ecn().is_ecn_capable() {
            self.set_ecn(Ecn::Ce);
            true
        } else {
            false
        }
    }
}

/// The longest header prefix a [`HeaderMemo`] keeps: IPv6 with a few
/// extension headers, or IPv4 with options, plus the ports.
const MEMO_PREFIX_MAX: usize = 64;

/// The last datagram header one source's packets were read with. A
/// simulated source sends the same addresses, ports and length packet after
/// packet; reading that header once per packet was a tenth of a saturated
/// run's work. [`ip::summarize`] reads nothing past the transport ports but
/// the datagram's length, so equal bytes up to the ports and an equal length
/// give an equal summary, and an equal error-free outcome.
#[derive(Debug, Clone)]
pub struct HeaderMemo {
    /// The datagram's bytes up to and including its ports.
    prefix: [u8; MEMO_PREFIX_MAX],
    prefix_len: usize,
    data_len: usize,
    /// `None` until a datagram with ports in the first
    /// [`MEMO_PREFIX_MAX`] bytes was read.
    summary: Option<IpSummary>,
}

impl Default for HeaderMemo {
    fn default() -> Self {
        HeaderMemo {
            prefix: [0; MEMO_PREFIX_MAX],
            prefix_len: 0,
            data_len: 0,
            summary: None,
        }
    }
}

impl HeaderMemo {
    /// [`ip::summarize`], answered from memory when `bytes` repeats the
    /// remembered header and length.
    pub fn summarize(&mut self, bytes: &[u8]) -> Result<IpSummary, WireError> {
        if let Some(s) = self.summary
            && bytes.len() == self.data_len
            && bytes.get(..self.prefix_len) == self.prefix.get(..self.prefix_len)
        {
            return Ok(s);
        }
        let s = ip::summarize(bytes)?;
        // Only a datagram whose ports were read: for any other the summary
        // may rest on bytes the prefix would not cover.
        let ports_end = s.transport_offset + 4;
        let has_ports = matches!(s.flow.protocol, 6 | 17) && ports_end <= s.total_len;
        match bytes.get(..ports_end) {
            Some(prefix) if has_ports && ports_end <= MEMO_PREFIX_MAX => {
                self.prefix[..ports_end].copy_from_slice(prefix);
                self.prefix_len = ports_end;
                self.data_len = bytes.len();
                self.summary = Some(s);
            }
            _ => self.summary = None,
        }
        Ok(s)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::SocketAddr;

    /// A UDP packet of `len` bytes in total from flow `flow` with codepoint `ecn`.
    pub(crate) fn udp(id: u64, flow: u16, len: usize, ecn: Ecn) -> Packet {
        let src: SocketAddr = format!("10.0.0.1:{}", 1000 + flow).parse().unwrap();
        let dst: SocketAddr = "10.0.1.1:5000".parse().unwrap();
        let payload = vec![0u8; len.saturating_sub(28)];
        let data = ip::udp_datagram(src, dst, ecn, &payload).unwrap();
        Packet::new(id, Instant::ZERO, data).unwrap()
    }

    #[test]
    fn marking_rewrites_real_header() {
        let mut p = udp(1, 0, 100, Ecn::Ect0);
        assert_eq!(p.len(), 100);
        assert!(p.try_mark_ce());
        assert_eq!(ip::ecn(&p.data).unwrap(), Ecn::Ce);
        assert_eq!(p.ecn(), Ecn::Ce);
        let mut n = udp(2, 0, 100, Ecn::NotEct);
        assert!(!n.try_mark_ce());
        assert_eq!(n.ecn(), Ecn::NotEct);
    }

    #[test]
    fn malformed_bytes_are_refused() {
        assert!(Packet::new(1, Instant::ZERO, vec![0x45, 0, 0]).is_err());
        assert!(Packet::new(1, Instant::ZERO, Vec::new()).is_err());
    }

    #[test]
    fn memo_answers_as_summarize_does_on_repeated_and_mangled_headers() {
        use rand::Rng as _;
        let mut rng = crate::rng(7, 0);
        let pairs = [
            ("10.1.0.1:40000", "10.2.0.1:42000"),
            ("[2001:db8:1::1]:40000", "[2001:db8:2::1]:42000"),
        ];
        let mut seeds = Vec::new();
        for (src, dst) in pairs {
            let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
            for len in [16, 100, 1472] {
                seeds.push(ip::udp_datagram(src, dst, Ecn::Ect1, &vec![7u8; len]).unwrap());
            }
            // The same as TCP (protocol 6), and as a protocol without ports.
            let mut tcp = seeds[seeds.len() - 1].clone();
            let proto = if src.is_ipv4() { 9 } else { 6 };
            tcp[proto] = 6;
            seeds.push(tcp.clone());
            tcp[proto] = 1;
            seeds.push(tcp);
        }
        let mut memo = HeaderMemo::default();
        let (mut hits, mut errors) = (0, 0);
        for _ in 0..20_000 {
            let mut d = seeds[rng.random_range(0..seeds.len())].clone();
            // Mostly the same header again; sometimes one byte of the
            // headers changed (ECN, length, fragment, next header, ports)
            // or the datagram cut or lengthened.
            match rng.random_range(0..10) {
                0..=5 => {}
                6 | 7 => {
                    let at = rng.random_range(0..d.len().min(48));
                    d[at] = rng.random();
                }
                8 => d.truncate(rng.random_range(0..d.len())),
                _ => d.push(rng.random()),
            }
            let before = memo.summary.is_some() && memo.data_len == d.len();
            let got = memo.summarize(&d);
            assert_eq!(got, ip::summarize(&d), "{d:02x?}");
            hits += usize::from(before && got.is_ok());
            errors += usize::from(got.is_err());
        }
        assert!(hits > 1_000 && errors > 500, "hits {hits}, errors {errors}");
        let data = seeds[0].clone();
        let a = Packet::new(3, Instant::from_millis(1), data.clone()).unwrap();
        let b = Packet::new_with_memo(3, Instant::from_millis(1), data, &mut memo).unwrap();
        assert_eq!(a, b);
    }
}
