//! Evidence from a run: what turns a simulation or a lab run into files and
//! figures a person can check and trust.
//!
//! Layer: output, beside the simulator and the transport. It depends only on
//! `brisk-time` and `brisk-wire`; the simulator (`brisk sim`), the lab report
//! (`brisk lab`) and the real-time lab call into it. Nothing here reads a
//! clock: every timestamp is a [`brisk_time::Instant`] passed in.
//!
//! Modules:
//! - [`pcap`]: libpcap files of raw IP datagrams (nanosecond or microsecond
//!   timestamps, optional header-only snaplen) for tshark, Wireshark and
//!   tcptrace.
//! - [`stats`]: latency and size percentiles on HDR histograms
//!   ([`stats::Percentiles`] in ms), and time series with spike-preserving
//!   downsampling ([`stats::Series`]).
pub mod pcap;
pub mod stats;
