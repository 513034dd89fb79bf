//! A Brisk bulk download ([`super::brisk_bulk`]) alone through a lab of
//! its own, measured the way the simulator measures its L4S runs: over the
//! second half of the transfer, with a per-second trace of the whole
//! ([`crate::steady_state`]). The lab is brought up with the router's
//! per-packet log and its bottleneck capture on, written to a scratch
//! directory that is removed afterwards. Unless told otherwise, both ends
//! probe up to the lab path's MTU ([`lab_path_mtu`]), so their datagrams
//! are as large as the simulator's on the same links.

use super::RecipeError;
use super::brisk_bulk::{self, BriskBulkConfig, BriskBulkReport};
use crate::capture::{BOTTLENECK_CAPTURE_LIMIT_BYTES, BottleneckPcap};
use crate::lab::{Lab, LabConfig};
use crate::results::LiveResults;
use crate::steady_state::{self, SteadyState};
use crate::topology::MTU_BYTES;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The trace's interval.
pub const TRACE_INTERVAL: Duration = Duration::from_secs(1);

/// One measured download and the lab's own outputs.
pub struct SteadyBulkRun {
    /// The router's results for the whole run.
    pub results: LiveResults,
    /// The bottleneck capture, both directions.
    pub pcap: BottleneckPcap,
    /// What the receiver and the sender measured.
    pub bulk: BriskBulkReport,
    /// The down link over the transfer's second half, and per second.
    pub steady: SteadyState,
}

/// Brings up a lab on `config` (its `out` and bottleneck capture are set
/// here), runs the download, tears the lab down and measures.
pub fn run(mut config: LabConfig, bulk: &BriskBulkConfig) -> Result<SteadyBulkRun, RecipeError> {
    let rate_bps = super::down_rate_bps(&config.network).ok_or_else(|| {
        RecipeError::Unsupported("the down link needs a constant rate to be measured".into())
    })?;
    let mut bulk = bulk.clone();
    bulk.path_mtu.get_or_insert(lab_path_mtu(&config.network));
    let bulk = &bulk;
    let scratch = Scratch::new();
    config.out = Some(scratch.0.clone());
    config.bottleneck_capture_bytes = Some(BOTTLENECK_CAPTURE_LIMIT_BYTES);
    let lab = Lab::up(config)?;
    let server = lab.server_bind_addr();
    let offset = lab.unix_offset_nanos();
    let report = brisk_bulk::run(&lab, bulk)?;
    let (results, pcap) = lab.finish_with_pcap(None, None)?;
    let pcap =
        pcap.ok_or_else(|| RecipeError::failed("the bottleneck capture", "the router kept none"))?;
    let events = scratch.read("events.csv")?;
    let server_side = scratch.read("server.pcap")?;
    let measure = || -> Result<SteadyState, steady_state::SteadyStateError> {
        SteadyState::measure(
            &steady_state::read_capture(&pcap.bytes, offset)?,
            &steady_state::read_capture(&server_side, offset)?,
            &steady_state::read_events(&String::from_utf8_lossy(&events))?,
            server,
            rate_bps,
            bulk.duration,
            TRACE_INTERVAL,
        )
    };
    let steady = measure().map_err(|e| RecipeError::failed("the steady state", e))?;
    Ok(SteadyBulkRun {
        results,
        pcap,
        bulk: report,
        steady,
    })
}

/// The largest IP packet the lab's path carries, in bytes: the TUN
/// devices' MTU, or a link's `mtu` if smaller (a later `mtu_change` is
/// left to path MTU discovery, which follows a path down).
pub fn lab_path_mtu(network: &brisk_netmodel::Network) -> u32 {
    [network.link.down.mtu, network.link.up.mtu]
        .into_iter()
        .flatten()
        .fold(MTU_BYTES, u32::min)
}

/// A directory of its own under the system's temporary directory,
/// removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Scratch(std::env::temp_dir().join(format!("brisk-steady-bulk-{}-{n}", std::process::id())))
    }
}

impl Scratch {
    /// The whole of the file `name` the lab wrote here.
    fn read(&self, name: &str) -> Result<Vec<u8>, RecipeError> {
        let path = self.0.join(name);
        std::fs::read(&path).map_err(|e| RecipeError::failed(format!("read {}", path.display()), e))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
