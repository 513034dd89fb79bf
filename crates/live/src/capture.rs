//! What `--out` writes while the router runs: a pcap at each side of the
//! bottleneck and a per-packet log of the queue's work; and
//! [`BottleneckCapture`], the bottleneck itself as the lab report keeps it.
//!
//! `client.pcap` holds what the client's TUN device carried: packets the
//! client sent, as the router read them (before the up link), and packets
//! delivered to it, as the router wrote them (after the down link, with the
//! queue's CE marks). `server.pcap` is the same at the server's device. A
//! packet dropped or lost on the way appears only on its sender's side.
//! Timestamps are wall-clock time; raw IP with nanosecond resolution,
//! which tshark and tcptrace read. `events.csv` has one line per queue
//! delay, drop, loss or mark: `time_s,direction,flow,packet_id,event,queue_delay_us`.

use crate::error::LiveError;
use crate::router::core::{PacketRecord, RecordKind, Side};
use brisk_netmodel::Direction;
use brisk_netmodel::queue::DropReason;
use brisk_time::Instant;
use brisk_trace::pcap::{PcapConfig, PcapWriter};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// How much of a run [`BottleneckCapture`] keeps by default: 32 MiB, about
/// 230,000 packets at the default 128-byte snaplen (10 s of a saturated
/// 10 Mbit/s link, data and ACKs, is about 14,000).
pub const BOTTLENECK_CAPTURE_LIMIT_BYTES: usize = 32 << 20;

/// The bottleneck's packets in one in-memory pcap, both directions, as the
/// simulator's `bottleneck.pcap` holds them: each packet as it leaves its
/// link (after the queue's CE marks, before any NAT64 translation, without
/// what the queue dropped or the link lost), stamped with the time the
/// model delivered it. Memory is bounded: once the file would pass its
/// limit, further packets are counted, not kept.
#[derive(Debug)]
pub struct BottleneckCapture {
    writer: PcapWriter<Vec<u8>>,
    len_bytes: usize,
    limit_bytes: usize,
    skipped_packets: u64,
}

/// A finished bottleneck capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BottleneckPcap {
    /// The pcap file.
    pub bytes: Vec<u8>,
    /// Packets in the file.
    pub packets: u64,
    /// Packets left out: past the limit, or not writable as raw IP.
    pub skipped_packets: u64,
    pub limit_bytes: usize,
}

impl BottleneckCapture {
    /// Keeps `snaplen` bytes of each packet, up to `limit_bytes` in all;
    /// timestamps are shifted by `unix_offset_nanos` to wall-clock time.
    pub fn new(
        snaplen: u32,
        unix_offset_nanos: u64,
        limit_bytes: usize,
    ) -> Result<BottleneckCapture, LiveError> {
        let config = PcapConfig {
            snaplen_bytes: snaplen.max(1),
            unix_offset_nanos,
            ..PcapConfig::default()
        };
        let writer = PcapWriter::new(Vec::new(), config)?;
        Ok(BottleneckCapture {
            len_bytes: PCAP_FILE_HEADER_BYTES,
            writer,
            limit_bytes,
            skipped_packets: 0,
        })
    }

    /// A datagram left the bottleneck at `at`.
    pub fn packet(&mut self, at: Instant, datagram: &[u8]) {
        let snaplen = self.writer.config().snaplen_bytes as usize;
        let record = PCAP_RECORD_HEADER_BYTES + datagram.len().min(snaplen);
        // The writer checks a datagram before writing any of it, and a
        // Vec takes every write: a refused packet leaves the file whole.
        if self.len_bytes + record > self.limit_bytes
            || self.writer.write_packet(at, datagram).is_err()
        {
            self.skipped_packets += 1;
            return;
        }
        self.len_bytes += record;
    }

    /// Bytes of the file so far.
    pub fn len_bytes(&self) -> usize {
        self.len_bytes
    }

    /// The file and what it left out.
    pub fn finish(self) -> Result<BottleneckPcap, LiveError> {
        let packets = self.writer.packets();
        Ok(BottleneckPcap {
            bytes: self.writer.into_inner()?,
            packets,
            skipped_packets: self.skipped_packets,
            limit_bytes: self.limit_bytes,
        })
    }
}

/// A pcap file's global header.
const PCAP_FILE_HEADER_BYTES: usize = 24;
/// A pcap record's own header: timestamp and two lengths.
const PCAP_RECORD_HEADER_BYTES: usize = 16;

/// The files one run writes.
pub struct Captures {
    client: PcapWriter<BufWriter<File>>,
    server: PcapWriter<BufWriter<File>>,
    events: BufWriter<File>,
    /// The first write error; later writes are skipped.
    error: Option<LiveError>,
}

fn create(dir: &Path, name: &str) -> Result<BufWriter<File>, LiveError> {
    let path = dir.join(name);
    File::create(&path)
        .map(|f| BufWriter::with_capacity(1 << 20, f))
        .map_err(LiveError::io(format!("create {}", path.display())))
}

impl Captures {
    /// Creates `client.pcap`, `server.pcap` and `events.csv` in `dir`,
    /// keeping `snaplen` bytes per packet.
    pub fn create(dir: &Path, snaplen: u32, unix_offset_nanos: u64) -> Result<Captures, LiveError> {
        std::fs::create_dir_all(dir).map_err(LiveError::io(format!("create {}", dir.display())))?;
        let config = PcapConfig {
            snaplen_bytes: snaplen.max(1),
            unix_offset_nanos,
            ..PcapConfig::default()
        };
        let mut events = create(dir, "events.csv")?;
        writeln!(
            events,
            "time_s,direction,flow,packet_id,event,queue_delay_us"
        )
        .map_err(LiveError::io("write events.csv"))?;
        Ok(Captures {
            client: PcapWriter::new(create(dir, "client.pcap")?, config)?,
            server: PcapWriter::new(create(dir, "server.pcap")?, config)?,
            events,
            error: None,
        })
    }

    /// A datagram crossed `side`'s TUN device at `at`.
    pub fn packet(&mut self, side: Side, at: Instant, datagram: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let w = match side {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        };
        if let Err(e) = w.write_packet(at, datagram) {
            self.error = Some(e.into());
        }
    }

    /// One line of the per-packet log.
    pub fn record(&mut self, r: &PacketRecord) {
        if self.error.is_some() {
            return;
        }
        let dir = match r.dir {
            Direction::Down => "down",
            Direction::Up => "up",
        };
        let (event, delay) = match r.kind {
            RecordKind::Dequeued(d) => ("dequeue", d.as_micros().to_string()),
            RecordKind::Dropped(DropReason::Overflow) => ("drop_overflow", String::new()),
            RecordKind::Dropped(DropReason::Aqm) => ("drop_aqm", String::new()),
            RecordKind::Lost => ("lost", String::new()),
            RecordKind::Marked => ("mark_ce", String::new()),
        };
        let flow = r.flow.map_or(String::new(), |f| f.to_string());
        if let Err(e) = writeln!(
            self.events,
            "{:.9},{dir},{flow},{},{event},{delay}",
            r.at.as_secs_f64(),
            r.packet_id
        ) {
            self.error = Some(LiveError::io("write events.csv")(e));
        }
    }

    /// Flushes every file, reporting the first error of the run.
    pub fn finish(mut self) -> Result<(), LiveError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.client.into_inner()?;
        self.server.into_inner()?;
        self.events
            .flush()
            .map_err(LiveError::io("write events.csv"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::Ecn;
    use brisk_wire::ip::udp_datagram;
    use std::net::SocketAddr;

    /// Each record's (timestamp ns, kept length, original length).
    fn records(file: &[u8]) -> Vec<(u32, u32, u32)> {
        let word = |at: usize| u32::from_le_bytes(file[at..at + 4].try_into().unwrap());
        let mut at = PCAP_FILE_HEADER_BYTES;
        let mut out = Vec::new();
        while at < file.len() {
            let (ns, incl, orig) = (word(at + 4), word(at + 8), word(at + 12));
            out.push((ns, incl, orig));
            at += PCAP_RECORD_HEADER_BYTES + incl as usize;
        }
        assert_eq!(at, file.len(), "records end with the file");
        out
    }

    #[test]
    fn the_bottleneck_capture_stops_at_its_limit_and_counts_the_rest() {
        for (src, dst) in [
            ("10.0.0.1:1", "10.0.0.2:2"),
            ("[2001:db8::1]:1", "[2001:db8::2]:2"),
        ] {
            let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
            let big = udp_datagram(src, dst, Ecn::Ect1, &[1; 1000]).unwrap();
            // Room for the header and three 128-byte records, not four.
            let limit = PCAP_FILE_HEADER_BYTES + 3 * (PCAP_RECORD_HEADER_BYTES + 128) + 100;
            let mut c = BottleneckCapture::new(128, 0, limit).unwrap();
            for i in 0..5u64 {
                c.packet(Instant::from_micros(i), &big);
            }
            // Not IP: refused whole, counted, the file stays readable.
            c.packet(Instant::from_micros(9), &[0x15, 0, 0]);
            assert!(c.len_bytes() <= limit);
            let pcap = c.finish().unwrap();
            assert_eq!((pcap.packets, pcap.skipped_packets), (3, 3));
            assert_eq!(pcap.bytes.len(), limit - 100);
            let recs = records(&pcap.bytes);
            assert_eq!(recs.len(), 3);
            assert_eq!(recs[2], (2_000, 128, big.len() as u32));
        }
    }
}
