//! Linux `struct tcp_info` (`getsockopt(TCP_INFO)`), parsed from its bytes.
//!
//! The layout is the kernel's UAPI (`include/uapi/linux/tcp.h`), host byte
//! order. The struct only ever grew at its end, and the kernel copies
//! `min(len, sizeof)` bytes, so fields added after Linux 2.6 are `Option`s
//! that are `None` when an older kernel returned fewer bytes. Units follow
//! the kernel: times in microseconds, `snd_cwnd`, `snd_ssthresh` and
//! `unacked` in packets (segments), rates in bytes per second.

use crate::sockopt::{self, AsSocket, SockoptError};
use serde::Serialize;

/// Why `TCP_INFO` bytes could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TcpInfoError {
    #[error("TCP_INFO returned {len} bytes; at least {MIN_LEN} are needed")]
    /// The buffer is shorter than [`MIN_LEN`], the fields every kernel has.
    TooShort {
        /// Bytes the kernel (or the caller) supplied.
        len: usize,
    },
}

/// Bytes up to and including `tcpi_total_retrans`, present since 2.6.
pub const MIN_LEN: usize = 104;

/// `tcpi_options` bits (`TCPI_OPT_*`).
pub mod options {
    /// TCP timestamps (RFC 7323) were negotiated.
    pub const TIMESTAMPS: u8 = 1;
    /// Selective acknowledgements (RFC 2018) were negotiated.
    pub const SACK: u8 = 2;
    /// Window scaling (RFC 7323) was negotiated.
    pub const WSCALE: u8 = 4;
    /// ECN was negotiated at connection set-up.
    pub const ECN: u8 = 8;
    /// At least one CE mark was received.
    pub const ECN_SEEN: u8 = 16;
    /// The SYN (sent or received) carried data that the peer acknowledged:
    /// Fast Open worked.
    pub const SYN_DATA: u8 = 32;
}

/// Byte offsets of the fields read here (see the module doc).
mod field {
    pub(crate) const STATE: usize = 0;
    pub(crate) const CA_STATE: usize = 1;
    pub(crate) const RETRANSMITS: usize = 2;
    pub(crate) const OPTIONS: usize = 5;
    pub(crate) const WSCALE: usize = 6;
    pub(crate) const APP_LIMITED_TFO_FAIL: usize = 7;
    pub(crate) const RTO: usize = 8;
    pub(crate) const SND_MSS: usize = 16;
    pub(crate) const RCV_MSS: usize = 20;
    pub(crate) const UNACKED: usize = 24;
    pub(crate) const SACKED: usize = 28;
    pub(crate) const LOST: usize = 32;
    pub(crate) const RETRANS: usize = 36;
    pub(crate) const PMTU: usize = 60;
    pub(crate) const RTT: usize = 68;
    pub(crate) const RTTVAR: usize = 72;
    pub(crate) const SND_SSTHRESH: usize = 76;
    pub(crate) const SND_CWND: usize = 80;
    pub(crate) const ADVMSS: usize = 84;
    pub(crate) const REORDERING: usize = 88;
    pub(crate) const TOTAL_RETRANS: usize = 100;
    pub(crate) const PACING_RATE: usize = 104;
    pub(crate) const BYTES_ACKED: usize = 120;
    pub(crate) const BYTES_RECEIVED: usize = 128;
    pub(crate) const SEGS_OUT: usize = 136;
    pub(crate) const SEGS_IN: usize = 140;
    pub(crate) const NOTSENT_BYTES: usize = 144;
    pub(crate) const MIN_RTT: usize = 148;
    pub(crate) const DELIVERY_RATE: usize = 160;
    pub(crate) const DELIVERED: usize = 192;
    pub(crate) const DELIVERED_CE: usize = 196;
    pub(crate) const BYTES_SENT: usize = 200;
    pub(crate) const BYTES_RETRANS: usize = 208;
    pub(crate) const SND_WND: usize = 228;
}

/// The fields of `struct tcp_info` that the responsiveness helpers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TcpInfo {
    /// `TCP_ESTABLISHED` is 1, `TCP_SYN_SENT` 2, `TCP_LISTEN` 10.
    pub state: u8,
    /// Open 0, Disorder 1, CWR 2, Recovery 3, Loss 4.
    pub ca_state: u8,
    /// Retransmissions of the current RTO episode (`tcpi_retransmits`).
    pub retransmits: u8,
    /// `TCPI_OPT_*` bits, see [`options`].
    pub options: u8,
    /// The peer's window scale shift (RFC 7323), 0 to 14.
    pub snd_wscale: u8,
    /// Our window scale shift, 0 to 14.
    pub rcv_wscale: u8,
    /// Why the last Fast Open attempt fell back (0 none or unknown, 1 no
    /// cookie sent, 2 SYN-ACK did not ack the SYN data, 3 SYN retransmitted
    /// without data). Linux 5.5+.
    pub fastopen_client_fail: u8,
    /// Retransmission timeout, microseconds.
    pub rto_us: u32,
    /// Sending maximum segment size, bytes.
    pub snd_mss_bytes: u32,
    /// Largest segment received (an estimate of the peer's MSS), bytes.
    pub rcv_mss_bytes: u32,
    /// Segments sent and not yet acknowledged.
    pub unacked_pkts: u32,
    /// Segments the peer has SACKed (on a listener: its backlog limit).
    pub sacked_pkts: u32,
    /// Segments judged lost.
    pub lost_pkts: u32,
    /// Retransmitted segments not yet acknowledged.
    pub retrans_pkts: u32,
    /// Path MTU, bytes.
    pub pmtu_bytes: u32,
    /// Smoothed RTT.
    pub rtt_us: u32,
    /// RTT variation, microseconds.
    pub rttvar_us: u32,
    /// Slow-start threshold, segments (2147483647 until the first loss).
    pub snd_ssthresh_pkts: u32,
    /// Congestion window, in segments on Linux (octets on the BSDs).
    pub snd_cwnd_pkts: u32,
    /// MSS advertised to the peer, bytes.
    pub advmss_bytes: u32,
    /// Reordering degree the kernel assumes, segments.
    pub reordering: u32,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Pacing rate, bytes per second (Linux 3.15+).
    pub pacing_rate_bytes_per_s: Option<u64>,
    /// Bytes the peer acknowledged (Linux 4.1+).
    pub bytes_acked: Option<u64>,
    /// Bytes received and acknowledged (Linux 4.1+).
    pub bytes_received: Option<u64>,
    /// Segments sent, retransmissions included (Linux 4.2+).
    pub segs_out: Option<u32>,
    /// Segments received (Linux 4.2+).
    pub segs_in: Option<u32>,
    /// Bytes written by the application and not yet sent (Linux 4.6+).
    pub notsent_bytes: Option<u32>,
    /// Windowed minimum RTT (Linux 4.6+).
    pub min_rtt_us: Option<u32>,
    /// Latest delivery rate sample, bytes per second (Linux 4.9+).
    pub delivery_rate_bytes_per_s: Option<u64>,
    /// Segments delivered, retransmissions included (Linux 4.18+).
    pub delivered_pkts: Option<u32>,
    /// Segments delivered with a CE mark (Linux 4.18+).
    pub delivered_ce_pkts: Option<u32>,
    /// Bytes sent, retransmissions included (Linux 4.19+).
    pub bytes_sent: Option<u64>,
    /// Bytes retransmitted (Linux 4.19+).
    pub bytes_retrans: Option<u64>,
    /// The peer's advertised receive window (Linux 5.4+).
    pub snd_wnd_bytes: Option<u32>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at + 4)?;
    Some(u32::from_ne_bytes(bytes.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let bytes = b.get(at..at + 8)?;
    Some(u64::from_ne_bytes(bytes.try_into().ok()?))
}

impl TcpInfo {
    /// Parses the bytes `getsockopt(TCP_INFO)` returned (host order).
    pub fn parse(b: &[u8]) -> Result<Self, TcpInfoError> {
        if b.len() < MIN_LEN {
            return Err(TcpInfoError::TooShort { len: b.len() });
        }
        let u32_req = |at| u32_at(b, at).unwrap_or(0);
        let wscale = b[field::WSCALE];
        let bits = b[field::APP_LIMITED_TFO_FAIL];
        // C bit-fields are allocated from the low bit on little-endian
        // targets and from the high bit on big-endian ones.
        let (snd_wscale, rcv_wscale, tfo_fail) = if cfg!(target_endian = "little") {
            (wscale & 0x0f, wscale >> 4, (bits >> 1) & 0x03)
        } else {
            (wscale >> 4, wscale & 0x0f, (bits >> 5) & 0x03)
        };
        Ok(TcpInfo {
            state: b[field::STATE],
            ca_state: b[field::CA_STATE],
            retransmits: b[field::RETRANSMITS],
            options: b[field::OPTIONS],
            snd_wscale,
            rcv_wscale,
            fastopen_client_fail: tfo_fail,
            rto_us: u32_req(field::RTO),
            snd_mss_bytes: u32_req(field::SND_MSS),
            rcv_mss_bytes: u32_req(field::RCV_MSS),
            unacked_pkts: u32_req(field::UNACKED),
            sacked_pkts: u32_req(field::SACKED),
            lost_pkts: u32_req(field::LOST),
            retrans_pkts: u32_req(field::RETRANS),
            pmtu_bytes: u32_req(field::PMTU),
            rtt_us: u32_req(field::RTT),
            rttvar_us: u32_req(field::RTTVAR),
            snd_ssthresh_pkts: u32_req(field::SND_SSTHRESH),
            snd_cwnd_pkts: u32_req(field::SND_CWND),
            advmss_bytes: u32_req(field::ADVMSS),
            reordering: u32_req(field::REORDERING),
            total_retrans: u32_req(field::TOTAL_RETRANS),
            pacing_rate_bytes_per_s: u64_at(b, field::PACING_RATE),
            bytes_acked: u64_at(b, field::BYTES_ACKED),
            bytes_received: u64_at(b, field::BYTES_RECEIVED),
            segs_out: u32_at(b, field::SEGS_OUT),
            segs_in: u32_at(b, field::SEGS_IN),
            notsent_bytes: u32_at(b, field::NOTSENT_BYTES),
            min_rtt_us: u32_at(b, field::MIN_RTT),
            delivery_rate_bytes_per_s: u64_at(b, field::DELIVERY_RATE),
            delivered_pkts: u32_at(b, field::DELIVERED),
            delivered_ce_pkts: u32_at(b, field::DELIVERED_CE),
            bytes_sent: u64_at(b, field::BYTES_SENT),
            bytes_retrans: u64_at(b, field::BYTES_RETRANS),
            snd_wnd_bytes: u32_at(b, field::SND_WND),
        })
    }

    /// Reads `TCP_INFO` from a live socket.
    pub fn read<S: AsSocket>(sock: &S) -> Result<Self, SockoptError> {
        let mut buf = [0u8; 256];
        let len = sockopt::tcp_info_bytes(sock, &mut buf)?;
        TcpInfo::parse(&buf[..len]).map_err(|e| SockoptError::Refused {
            option: "TCP_INFO",
            errno: "short read",
            hint: e.to_string(),
            source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, e),
        })
    }

    /// Whether the peer acknowledged data carried in the SYN (Fast Open).
    pub fn syn_data_acked(&self) -> bool {
        self.options & options::SYN_DATA != 0
    }

    /// Whether ECN was negotiated on this connection.
    pub fn ecn_negotiated(&self) -> bool {
        self.options & options::ECN != 0
    }

    /// The congestion window in bytes (`snd_cwnd * snd_mss`).
    pub fn cwnd_bytes(&self) -> u64 {
        u64::from(self.snd_cwnd_pkts) * u64::from(self.snd_mss_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 232-byte `tcp_info` (Linux 5.4 size) with a distinct value in each
    /// field, written in host order.
    fn sample() -> Vec<u8> {
        let mut b = vec![0u8; 232];
        b[field::STATE] = 1;
        b[field::CA_STATE] = 3;
        b[field::RETRANSMITS] = 2;
        b[field::OPTIONS] = options::SACK | options::ECN | options::SYN_DATA;
        b[field::WSCALE] = if cfg!(target_endian = "little") {
            0x97
        } else {
            0x79
        };
        b[field::APP_LIMITED_TFO_FAIL] = if cfg!(target_endian = "little") {
            0b0000_0101
        } else {
            0b1100_0000
        };
        let put32 = |b: &mut Vec<u8>, at: usize, v: u32| {
            b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        };
        let put64 = |b: &mut Vec<u8>, at: usize, v: u64| {
            b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        };
        put32(&mut b, field::RTO, 204_000);
        put32(&mut b, field::SND_MSS, 1448);
        put32(&mut b, field::RCV_MSS, 536);
        put32(&mut b, field::UNACKED, 7);
        put32(&mut b, field::SACKED, 1);
        put32(&mut b, field::LOST, 2);
        put32(&mut b, field::RETRANS, 3);
        put32(&mut b, field::PMTU, 1500);
        put32(&mut b, field::RTT, 250_123);
        put32(&mut b, field::RTTVAR, 1_250);
        put32(&mut b, field::SND_SSTHRESH, 0x7fff_ffff);
        put32(&mut b, field::SND_CWND, 10);
        put32(&mut b, field::ADVMSS, 1460);
        put32(&mut b, field::REORDERING, 3);
        put32(&mut b, field::TOTAL_RETRANS, 9);
        put64(&mut b, field::PACING_RATE, 1_234_567);
        put64(&mut b, field::BYTES_ACKED, 100_000);
        put64(&mut b, field::BYTES_RECEIVED, 77);
        put32(&mut b, field::SEGS_OUT, 80);
        put32(&mut b, field::SEGS_IN, 40);
        put32(&mut b, field::NOTSENT_BYTES, 16_384);
        put32(&mut b, field::MIN_RTT, 249_800);
        put64(&mut b, field::DELIVERY_RATE, 625_000);
        put32(&mut b, field::DELIVERED, 70);
        put32(&mut b, field::DELIVERED_CE, 4);
        put64(&mut b, field::BYTES_SENT, 110_000);
        put64(&mut b, field::BYTES_RETRANS, 4_344);
        put32(&mut b, field::SND_WND, 65_535);
        b
    }

    #[test]
    fn parses_every_field_at_its_offset() {
        let info = TcpInfo::parse(&sample()).unwrap();
        assert_eq!(info.state, 1);
        assert_eq!(info.ca_state, 3);
        assert_eq!(info.retransmits, 2);
        assert!(info.syn_data_acked());
        assert!(info.ecn_negotiated());
        assert_eq!((info.snd_wscale, info.rcv_wscale), (7, 9));
        assert_eq!(info.fastopen_client_fail, 2);
        assert_eq!(info.rto_us, 204_000);
        assert_eq!(info.snd_mss_bytes, 1448);
        assert_eq!(info.rcv_mss_bytes, 536);
        assert_eq!(info.unacked_pkts, 7);
        assert_eq!(
            (info.sacked_pkts, info.lost_pkts, info.retrans_pkts),
            (1, 2, 3)
        );
        assert_eq!(info.pmtu_bytes, 1500);
        assert_eq!(info.rtt_us, 250_123);
        assert_eq!(info.rttvar_us, 1_250);
        assert_eq!(info.snd_ssthresh_pkts, 0x7fff_ffff);
        assert_eq!(info.snd_cwnd_pkts, 10);
        assert_eq!(info.cwnd_bytes(), 14_480);
        assert_eq!(info.advmss_bytes, 1460);
        assert_eq!(info.reordering, 3);
        assert_eq!(info.total_retrans, 9);
        assert_eq!(info.pacing_rate_bytes_per_s, Some(1_234_567));
        assert_eq!(info.bytes_acked, Some(100_000));
        assert_eq!(info.bytes_received, Some(77));
        assert_eq!((info.segs_out, info.segs_in), (Some(80), Some(40)));
        assert_eq!(info.notsent_bytes, Some(16_384));
        assert_eq!(info.min_rtt_us, Some(249_800));
        assert_eq!(info.delivery_rate_bytes_per_s, Some(625_000));
        assert_eq!(info.delivered_pkts, Some(70));
        assert_eq!(info.delivered_ce_pkts, Some(4));
        assert_eq!(info.bytes_sent, Some(110_000));
        assert_eq!(info.bytes_retrans, Some(4_344));
        assert_eq!(info.snd_wnd_bytes, Some(65_535));
        // Linux 5.3 returned 228 bytes, ending just before tcpi_snd_wnd.
        let info = TcpInfo::parse(&sample()[..228]).unwrap();
        assert_eq!(info.bytes_retrans, Some(4_344));
        assert_eq!(info.snd_wnd_bytes, None);
    }

    #[test]
    fn older_kernels_leave_newer_fields_empty() {
        // Linux 4.4 returned 144 bytes: no notsent_bytes, no min_rtt.
        let info = TcpInfo::parse(&sample()[..144]).unwrap();
        assert_eq!(info.snd_cwnd_pkts, 10);
        assert_eq!(info.segs_in, Some(40));
        assert_eq!(info.notsent_bytes, None);
        assert_eq!(info.min_rtt_us, None);
        // 2.6-era 104 bytes: the required prefix only.
        let info = TcpInfo::parse(&sample()[..MIN_LEN]).unwrap();
        assert_eq!(info.total_retrans, 9);
        assert_eq!(info.pacing_rate_bytes_per_s, None);
    }

    #[test]
    fn short_or_empty_input_is_an_error() {
        for len in [0, 1, 7, MIN_LEN - 1] {
            assert_eq!(
                TcpInfo::parse(&sample()[..len]),
                Err(TcpInfoError::TooShort { len })
            );
        }
    }

    /// Every offset used here agrees with the libc crate's declaration of
    /// glibc's `struct tcp_info`, an independent transcription of the UAPI.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn offsets_match_the_libc_declaration() {
        use std::mem::offset_of;
        let checks = [
            (offset_of!(libc::tcp_info, tcpi_state), field::STATE),
            (offset_of!(libc::tcp_info, tcpi_ca_state), field::CA_STATE),
            (
                offset_of!(libc::tcp_info, tcpi_retransmits),
                field::RETRANSMITS,
            ),
            (offset_of!(libc::tcp_info, tcpi_options), field::OPTIONS),
            (
                offset_of!(libc::tcp_info, tcpi_snd_rcv_wscale),
                field::WSCALE,
            ),
            (offset_of!(libc::tcp_info, tcpi_rto), field::RTO),
            (offset_of!(libc::tcp_info, tcpi_snd_mss), field::SND_MSS),
            (offset_of!(libc::tcp_info, tcpi_rcv_mss), field::RCV_MSS),
            (offset_of!(libc::tcp_info, tcpi_unacked), field::UNACKED),
            (offset_of!(libc::tcp_info, tcpi_sacked), field::SACKED),
            (offset_of!(libc::tcp_info, tcpi_lost), field::LOST),
            (offset_of!(libc::tcp_info, tcpi_retrans), field::RETRANS),
            (offset_of!(libc::tcp_info, tcpi_pmtu), field::PMTU),
            (offset_of!(libc::tcp_info, tcpi_rtt), field::RTT),
            (offset_of!(libc::tcp_info, tcpi_rttvar), field::RTTVAR),
            (
                offset_of!(libc::tcp_info, tcpi_snd_ssthresh),
                field::SND_SSTHRESH,
            ),
            (offset_of!(libc::tcp_info, tcpi_snd_cwnd), field::SND_CWND),
            (offset_of!(libc::tcp_info, tcpi_advmss), field::ADVMSS),
            (
                offset_of!(libc::tcp_info, tcpi_reordering),
                field::REORDERING,
            ),
            (
                offset_of!(libc::tcp_info, tcpi_total_retrans),
                field::TOTAL_RETRANS,
            ),
            (
                offset_of!(libc::tcp_info, tcpi_pacing_rate),
                field::PACING_RATE,
            ),
            (
                offset_of!(libc::tcp_info, tcpi_bytes_acked),
                field::BYTES_ACKED,
            ),
            (
                offset_of!(libc::tcp_info, tcpi_bytes_received),
                field::BYTES_RECEIVED,
            ),
            (offset_of!(libc::tcp_info, tcpi_segs_out), field::SEGS_OUT),
            (offset_of!(libc::tcp_info, tcpi_segs_in), field::SEGS_IN),
            (
                offset_of!(libc::tcp_info, tcpi_notsent_bytes),
                field::NOTSENT_BYTES,
            ),
            (offset_of!(libc::tcp_info, tcpi_min_rtt), field::MIN_RTT),
            (
                offset_of!(libc::tcp_info, tcpi_delivery_rate),
                field::DELIVERY_RATE,
            ),
            (offset_of!(libc::tcp_info, tcpi_delivered), field::DELIVERED),
            (
                offset_of!(libc::tcp_info, tcpi_delivered_ce),
                field::DELIVERED_CE,
            ),
            (
                offset_of!(libc::tcp_info, tcpi_bytes_sent),
                field::BYTES_SENT,
            ),
            (
                offset_of!(libc::tcp_info, tcpi_bytes_retrans),
                field::BYTES_RETRANS,
            ),
            (offset_of!(libc::tcp_info, tcpi_snd_wnd), field::SND_WND),
        ];
        for (i, (theirs, ours)) in checks.iter().enumerate() {
            assert_eq!(theirs, ours, "field #{i}");
        }
        // The wscale/flags byte pair sits between the u8s and tcpi_rto.
        assert_eq!(field::APP_LIMITED_TFO_FAIL, field::WSCALE + 1);
        assert_eq!(
            offset_of!(libc::tcp_info, tcpi_rto),
            field::APP_LIMITED_TFO_FAIL + 1
        );
    }
}
