//! Evidence from a run: what turns a simulation or a lab run into files and
//! figures a person can check and trust.
//!
//! Layer: output, beside the simulator and the transport. It depends only on
//! `brisk-time` and `brisk-wire`; the simulator (`brisk sim`), the lab report
//! (`brisk lab`), the transport and the real-time lab call into it. Nothing
//! here reads a clock: every timestamp is a [`brisk_time::Instant`] passed in.
//!
//! Modules:
//! - [`pcap`]: libpcap files of raw IP datagrams (nanosecond or microsecond
//!   timestamps, optional header-only snaplen) that tshark, Wireshark and
//!   tcptrace open.
//! - [`stats`]: latency and size percentiles on HDR histograms
//!   ([`stats::Percentiles`], in ms for latencies), and time series with
//!   spike-preserving downsampling ([`stats::Series`]).
//! - [`plot`]: report-sized SVG figures (line, CDF, tcptrace-style
//!   time-sequence, grouped bars) that need no fonts installed.
//! - [`qlog`]: qlog 0.3 JSON-SEQ traces of transport events in QUIC's
//!   schema, for qvis and other qlog tools; [`qlog_check`] reads one back
//!   and checks it against the schema and qvis's loader.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod pcap;
#[cfg(feature = "plot")]
pub mod plot;
pub mod qlog;
pub mod qlog_check;
#[cfg(feature = "stats")]
pub mod stats;
