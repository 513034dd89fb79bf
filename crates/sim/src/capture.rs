//! The bottleneck capture as a pcap file that tshark, Wireshark and tcptrace
//! open: both directions in one file, raw IP, nanosecond timestamps.

use crate::engine::{CaptureSink, Direction};
use brisk_time::Instant;
use brisk_trace::pcap::{PcapConfig, PcapError, PcapWriter};
use std::io::Write;

/// Streams captured packets into a pcap file as the run goes.
pub struct PcapSink<W: Write> {
    writer: PcapWriter<W>,
    /// The first write error; later packets are skipped.
    error: Option<PcapError>,
}

impl<W: Write> PcapSink<W> {
    /// Starts a capture that keeps `snaplen` bytes of each packet.
    pub fn new(out: W, snaplen: u32) -> Result<Self, PcapError> {
        let config = PcapConfig {
            snaplen_bytes: snaplen.max(1),
            ..PcapConfig::default()
        };
        Ok(PcapSink {
            writer: PcapWriter::new(out, config)?,
            error: None,
        })
    }

    pub fn packets(&self) -> u64 {
        self.writer.packets()
    }

    /// Flushes, reporting the first error the run hit, if any.
    pub fn finish(self) -> Result<W, PcapError> {
        match self.error {
            Some(e) => Err(e),
            None => self.writer.into_inner(),
        }
    }
}

impl<W: Write> CaptureSink for PcapSink<W> {
    fn packet(&mut self, at: Instant, _direction: Direction, datagram: &[u8]) {
        if self.error.is_none()
            && let Err(e) = self.writer.write_packet(at, datagram)
        {
            self.error = Some(e);
        }
    }
}
