//! A libpcap file writer for raw IP datagrams.
//!
//! Brisk carries real IPv4/IPv6 datagrams everywhere, so a capture needs no
//! invented link layer: records are written with `LINKTYPE_RAW` (101), whose
//! payload starts at the IP header and may mix both families, or with
//! `LINKTYPE_IPV4` (228) / `LINKTYPE_IPV6` (229) when a capture holds only
//! one. Timestamps come from [`Instant`] and default to nanosecond resolution
//! (magic `0xa1b23c4d`), which tshark and tcptrace 6.6.7 both read (tcptrace
//! through libpcap, which scales to microseconds); [`TsResolution::Micros`]
//! writes the classic `0xa1b2c3d4` format for tools that parse pcap
//! themselves and know only that magic.
//!
//! The file layout (all fields little-endian here; readers detect the byte
//! order from the magic) is a 24-byte global header followed by one 16-byte
//! record header plus the captured bytes per datagram:
//!
//! ```text
//! global: magic u32 | major u16 = 2 | minor u16 = 4 | thiszone i32 = 0
//!         | sigfigs u32 = 0 | snaplen u32 | linktype u32
//! record: ts_sec u32 | ts_frac u32 (ns or us) | incl_len u32 | orig_len u32
//! ```

use brisk_time::Instant;
use std::io::{self, Write};

/// The nanosecond-resolution pcap magic number.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// The classic microsecond-resolution pcap magic number.
pub const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
/// A snaplen that keeps every byte of any IP datagram (the libpcap default).
pub const SNAPLEN_FULL_BYTES: u32 = 262_144;
/// A snaplen that keeps the IP and transport headers of every Brisk packet
/// (IPv4 with options is at most 60 bytes, TCP with options at most 60, and a
/// Brisk/UDP header fits well inside the rest) while dropping payload.
pub const SNAPLEN_HEADERS_BYTES: u32 = 128;

/// The link-layer header type recorded in the file: what the bytes of each
/// record start with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    /// `LINKTYPE_RAW` (101): an IPv4 or IPv6 header, told apart by version.
    Raw,
    /// `LINKTYPE_IPV4` (228): IPv4 only.
    Ipv4,
    /// `LINKTYPE_IPV6` (229): IPv6 only.
    Ipv6,
}

impl LinkType {
    /// The `LINKTYPE_*` value written to the file header.
    pub const fn code(self) -> u32 {
        match self {
            LinkType::Raw => 101,
            LinkType::Ipv4 => 228,
            LinkType::Ipv6 => 229,
        }
    }

    fn accepts(self, ip_version: u8) -> bool {
        match self {
            LinkType::Raw => ip_version == 4 || ip_version == 6,
            LinkType::Ipv4 => ip_version == 4,
            LinkType::Ipv6 => ip_version == 6,
        }
    }
}

/// The resolution of record timestamps, which also selects the magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsResolution {
    /// Nanoseconds (magic `0xa1b23c4d`): the default.
    Nanos,
    /// Microseconds (magic `0xa1b2c3d4`): for readers that predate
    /// nanosecond files.
    Micros,
}

/// How a capture is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcapConfig {
    /// The link-layer header type in the file header; raw IP by default.
    pub link: LinkType,
    /// Nanosecond or microsecond timestamps.
    pub resolution: TsResolution,
    /// Bytes kept of each datagram; the record still carries its full length.
    pub snaplen_bytes: u32,
    /// Added to every timestamp, so a live capture can show wall-clock time
    /// while the simulator's captures start at the Unix epoch.
    pub unix_offset_nanos: u64,
}

impl Default for PcapConfig {
    fn default() -> Self {
        PcapConfig {
            link: LinkType::Raw,
            resolution: TsResolution::Nanos,
            snaplen_bytes: SNAPLEN_FULL_BYTES,
            unix_offset_nanos: 0,
        }
    }
}

impl PcapConfig {
    /// Microsecond timestamps: the most conservative choice for analysis
    /// tools. tcptrace 6.6.7 reads nanosecond files too when its libpcap is
    /// 1.5 or newer (the tests check both), but not every build is.
    pub fn for_tcptrace() -> Self {
        PcapConfig {
            resolution: TsResolution::Micros,
            ..Self::default()
        }
    }

    /// Keeps only the first [`SNAPLEN_HEADERS_BYTES`] of each datagram.
    pub fn headers_only(self) -> Self {
        PcapConfig {
            snaplen_bytes: SNAPLEN_HEADERS_BYTES,
            ..self
        }
    }
}

/// Why a capture could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The file or pipe refused the bytes.
    #[error("pcap i/o: {0}")]
    Io(#[from] io::Error),
    /// A snaplen of 0 would keep nothing of any datagram.
    #[error("snaplen must be at least 1 byte")]
    ZeroSnaplen,
    /// The datagram's IP version does not match the link type (IPv6 into an
    /// IPv4-only file), or its first nibble is not 4 or 6.
    #[error("not an IP datagram the link type {link:?} can carry (version nibble {version})")]
    WrongFamily {
        /// The file's link type.
        link: LinkType,
        /// The datagram's first nibble.
        version: u8,
    },
    /// The datagram is longer than a pcap record's 32-bit length can state.
    #[error("datagram of {len_bytes} bytes does not fit a pcap record")]
    TooLong {
        /// The datagram's length.
        len_bytes: usize,
    },
    /// pcap's 32-bit seconds end in February 2106.
    #[error("timestamp {nanos} ns since the Unix epoch is past what pcap can hold (2106)")]
    TimestampOverflow {
        /// The record's time, offset included, in ns since the Unix epoch.
        nanos: u128,
    },
}

/// Writes a pcap file, one IP datagram per record, to any [`Write`].
///
/// The writer does not buffer: wrap a file in a `BufWriter`.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    config: PcapConfig,
    packets: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header and returns a writer ready for records.
    pub fn new(mut out: W, config: PcapConfig) -> Result<Self, PcapError> {
        if config.snaplen_bytes == 0 {
            return Err(PcapError::ZeroSnaplen);
        }
        let magic = match config.resolution {
            TsResolution::Nanos => MAGIC_NANOS,
            TsResolution::Micros => MAGIC_MICROS,
        };
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&magic.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes());
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay zero: timestamps are UTC, accuracy unknown.
        header[16..20].copy_from_slice(&config.snaplen_bytes.to_le_bytes());
        header[20..24].copy_from_slice(&config.link.code().to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter {
            out,
            config,
            packets: 0,
        })
    }

    /// Appends one datagram seen at `at`. The datagram must start with an IP
    /// header of a family the link type carries; it is otherwise written as
    /// is, so a malformed packet under test is captured faithfully.
    pub fn write_packet(&mut self, at: Instant, datagram: &[u8]) -> Result<(), PcapError> {
        let version = datagram.first().map_or(0, |b| b >> 4);
        if !self.config.link.accepts(version) {
            return Err(PcapError::WrongFamily {
                link: self.config.link,
                version,
            });
        }
        let orig_len = u32::try_from(datagram.len()).map_err(|_| PcapError::TooLong {
            len_bytes: datagram.len(),
        })?;
        let incl_len = orig_len.min(self.config.snaplen_bytes);
        let (secs, frac) = self.timestamp(at)?;
        let mut record = [0u8; 16];
        record[0..4].copy_from_slice(&secs.to_le_bytes());
        record[4..8].copy_from_slice(&frac.to_le_bytes());
        record[8..12].copy_from_slice(&incl_len.to_le_bytes());
        record[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&record)?;
        self.out.write_all(&datagram[..incl_len as usize])?;
        self.packets += 1;
        Ok(())
    }

    /// Seconds and fraction (ns or µs) since the Unix epoch.
    fn timestamp(&self, at: Instant) -> Result<(u32, u32), PcapError> {
        let nanos = u128::from(at.as_nanos()) + u128::from(self.config.unix_offset_nanos);
        let secs = u32::try_from(nanos / 1_000_000_000)
            .map_err(|_| PcapError::TimestampOverflow { nanos })?;
        let sub_nanos = (nanos % 1_000_000_000) as u32;
        let frac = match self.config.resolution {
            TsResolution::Nanos => sub_nanos,
            TsResolution::Micros => sub_nanos / 1_000,
        };
        Ok((secs, frac))
    }

    /// Records written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// The settings the file header was written with.
    pub fn config(&self) -> &PcapConfig {
        &self.config
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> Result<W, PcapError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::{Ecn, udp_datagram};
    use std::net::SocketAddr;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    fn datagram(a: &str, b: &str, payload_len: usize) -> Vec<u8> {
        let (a, b): (SocketAddr, SocketAddr) = (a.parse().unwrap(), b.parse().unwrap());
        udp_datagram(a, b, Ecn::Ect1, &vec![0xab; payload_len]).unwrap()
    }

    #[test]
    fn global_header_matches_the_libpcap_layout() {
        let out = PcapWriter::new(Vec::new(), PcapConfig::default())
            .unwrap()
            .into_inner()
            .unwrap();
        assert_eq!(out.len(), 24);
        assert_eq!(&out[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(&out[4..8], &[2, 0, 4, 0]);
        assert_eq!(u32_at(&out, 16), SNAPLEN_FULL_BYTES);
        assert_eq!(u32_at(&out, 20), 101);

        let cfg = PcapConfig {
            link: LinkType::Ipv6,
            resolution: TsResolution::Micros,
            ..PcapConfig::default()
        };
        let out = PcapWriter::new(Vec::new(), cfg)
            .unwrap()
            .into_inner()
            .unwrap();
        assert_eq!(&out[0..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(u32_at(&out, 20), 229);
    }

    #[test]
    fn record_carries_time_lengths_and_bytes() {
        let d4 = datagram("10.0.0.1:1", "10.0.0.2:2", 10);
        let d6 = datagram("[2001:db8::1]:1", "[2001:db8::2]:2", 10);
        let mut w = PcapWriter::new(Vec::new(), PcapConfig::default()).unwrap();
        w.write_packet(Instant::from_nanos(3_000_000_123), &d4)
            .unwrap();
        w.write_packet(Instant::from_nanos(4_500_000_000), &d6)
            .unwrap();
        assert_eq!(w.packets(), 2);
        let out = w.into_inner().unwrap();
        assert_eq!((u32_at(&out, 24), u32_at(&out, 28)), (3, 123));
        assert_eq!(
            (u32_at(&out, 32), u32_at(&out, 36)),
            (d4.len() as u32, d4.len() as u32)
        );
        assert_eq!(&out[40..40 + d4.len()], &d4[..]);
        let second = 40 + d4.len();
        assert_eq!(
            (u32_at(&out, second), u32_at(&out, second + 4)),
            (4, 500_000_000)
        );
        assert_eq!(out.len(), second + 16 + d6.len());
    }

    #[test]
    fn micros_truncate_and_offset_shifts_to_wall_clock() {
        let cfg = PcapConfig {
            unix_offset_nanos: 1_700_000_000_000_000_000,
            resolution: TsResolution::Micros,
            ..PcapConfig::default()
        };
        let mut w = PcapWriter::new(Vec::new(), cfg).unwrap();
        w.write_packet(
            Instant::from_nanos(1_999_999),
            &datagram("10.0.0.1:1", "10.0.0.2:2", 0),
        )
        .unwrap();
        let out = w.into_inner().unwrap();
        assert_eq!((u32_at(&out, 24), u32_at(&out, 28)), (1_700_000_000, 1_999));
    }

    #[test]
    fn snaplen_keeps_headers_and_the_original_length() {
        let d = datagram("[2001:db8::1]:1", "[2001:db8::2]:2", 1_200);
        let mut w = PcapWriter::new(Vec::new(), PcapConfig::default().headers_only()).unwrap();
        w.write_packet(Instant::ZERO, &d).unwrap();
        let out = w.into_inner().unwrap();
        assert_eq!(u32_at(&out, 16), SNAPLEN_HEADERS_BYTES);
        assert_eq!(
            (u32_at(&out, 32), u32_at(&out, 36)),
            (SNAPLEN_HEADERS_BYTES, d.len() as u32)
        );
        assert_eq!(out.len(), 40 + SNAPLEN_HEADERS_BYTES as usize);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let cfg = PcapConfig {
            snaplen_bytes: 0,
            ..PcapConfig::default()
        };
        assert!(matches!(
            PcapWriter::new(Vec::new(), cfg),
            Err(PcapError::ZeroSnaplen)
        ));

        let mut w = PcapWriter::new(Vec::new(), PcapConfig::default()).unwrap();
        assert!(matches!(
            w.write_packet(Instant::ZERO, &[]),
            Err(PcapError::WrongFamily { .. })
        ));
        assert!(matches!(
            w.write_packet(Instant::ZERO, &[0x20, 0]),
            Err(PcapError::WrongFamily { .. })
        ));
        let late = Instant::from_nanos(u64::MAX);
        let cfg = PcapConfig {
            unix_offset_nanos: u64::MAX,
            ..PcapConfig::default()
        };
        let mut far = PcapWriter::new(Vec::new(), cfg).unwrap();
        let d4 = datagram("10.0.0.1:1", "10.0.0.2:2", 0);
        assert!(matches!(
            far.write_packet(late, &d4),
            Err(PcapError::TimestampOverflow { .. })
        ));

        let cfg = PcapConfig {
            link: LinkType::Ipv4,
            ..PcapConfig::default()
        };
        let mut v4 = PcapWriter::new(Vec::new(), cfg).unwrap();
        v4.write_packet(Instant::ZERO, &d4).unwrap();
        let d6 = datagram("[::1]:1", "[::1]:2", 0);
        assert!(matches!(
            v4.write_packet(Instant::ZERO, &d6),
            Err(PcapError::WrongFamily { version: 6, .. })
        ));
        assert_eq!(v4.packets(), 1);
        // Nothing of a refused record reaches the output.
        assert_eq!(v4.into_inner().unwrap().len(), 24 + 16 + d4.len());
    }
}
