//! What `--out` writes while the router runs: a pcap at each side of the
//! bottleneck and a per-packet log of the queue's work.
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
use brisk_netmodel::queue::DropReason;
use brisk_sim::engine::Direction;
use brisk_time::Instant;
use brisk_trace::pcap::{PcapConfig, PcapWriter};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

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
