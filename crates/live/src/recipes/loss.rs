//! Goodput under random loss (OK.ru, "TCP is dead"): one download at a
//! time through the lab's link, kernel TCP or Brisk, each with the
//! congestion controller named. The slide measured TCP at 99% of a link
//! without loss, 74% with 5% loss at 20 ms and 45% with 5% loss at
//! 220 ms; a controller that does not read random loss as congestion
//! (BBR-style) keeps most of the link.
//!
//! Utilization is the receiving application's goodput from its first byte
//! to the end of the transfer divided by the link's rate, the same
//! yardstick for both transports (headers included in neither: kernel TCP
//! carries at most 1448 payload bytes per 1500-byte packet, Brisk about
//! 1400 per 1480). Start-up counts against it; a shorter window (the
//! second half alone) would not be steadier: with a 600 ms FIFO in front,
//! a loss repaired across the window's edge releases up to a queue's worth
//! of data into it, which reads as more than the link's rate.

use super::RecipeError;
use super::brisk_bulk::{self, BriskBulkConfig};
use crate::bulk::{self, BULK_PORT, BulkConfig};
use crate::lab::Lab;
use serde::Serialize;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// The pause between two transfers, so the next starts on an empty queue.
const GAP: Duration = Duration::from_millis(300);

/// A sender: the kernel's TCP or Brisk, with a congestion controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Transport {
    /// Kernel TCP with this `TCP_CONGESTION`.
    Kernel(String),
    /// Brisk with this controller.
    Brisk(String),
    /// Brisk with this controller and forward error correction at the
    /// measured loss rate.
    BriskFec(String),
}

impl Transport {
    pub fn kernel(cc: &str) -> Transport {
        Transport::Kernel(cc.into())
    }

    pub fn brisk(cc: &str) -> Transport {
        Transport::Brisk(cc.into())
    }

    pub fn brisk_fec(cc: &str) -> Transport {
        Transport::BriskFec(cc.into())
    }

    /// Whether this machine and build can run it: the kernel lists the
    /// controller (or can load it), or `brisk-proto` has it.
    pub fn available(&self) -> bool {
        match self {
            Transport::Kernel(cc) => kernel_controller_available(cc),
            Transport::Brisk(cc) | Transport::BriskFec(cc) => brisk_bulk::controller_available(cc),
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Kernel(cc) => write!(f, "tcp {cc}"),
            Transport::Brisk(cc) => write!(f, "brisk {cc}"),
            Transport::BriskFec(cc) => write!(f, "brisk {cc} fec"),
        }
    }
}

/// Whether the kernel lists `cc` as available, or has it as a module
/// (which `TCP_CONGESTION` loads on first use, as root).
pub fn kernel_controller_available(cc: &str) -> bool {
    let listed = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .is_ok_and(|s| s.split_whitespace().any(|c| c == cc));
    listed || module_exists(&format!("tcp_{cc}"))
}

fn module_exists(name: &str) -> bool {
    let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    let dir = format!("/lib/modules/{}/kernel/net/ipv4", release.trim());
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{name}.ko"))
        })
    })
}

/// The transfers to run, one after another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LossExperiment {
    pub transports: Vec<Transport>,
    pub duration: Duration,
}

impl LossExperiment {
    /// Kernel CUBIC and BBR, Brisk CUBIC and BBR (those this machine and
    /// build have run; the rest are reported as skipped).
    pub fn okru(duration: Duration) -> LossExperiment {
        LossExperiment {
            transports: vec![
                Transport::kernel("cubic"),
                Transport::kernel("bbr"),
                Transport::brisk("cubic"),
                Transport::brisk("bbr"),
            ],
            duration,
        }
    }
}

/// One transfer's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LossRun {
    pub transport: Transport,
    pub goodput_mbps: f64,
    pub steady_goodput_mbps: f64,
    /// Goodput (first byte to end) over the link rate.
    pub utilization: f64,
    /// Retransmitted segments (TCP) or packets declared lost (Brisk).
    pub retransmitted_or_lost: u64,
    /// The sender's smoothed RTT at the end.
    pub srtt_ms: f64,
}

/// What one lab measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LossOutcome {
    pub runs: Vec<LossRun>,
    /// Transports not run here, and why.
    pub skipped: Vec<(Transport, String)>,
}

impl LossOutcome {
    /// The utilization `transport` reached, if it ran.
    pub fn utilization(&self, transport: &Transport) -> Option<f64> {
        self.runs
            .iter()
            .find(|r| &r.transport == transport)
            .map(|r| r.utilization)
    }
}

/// Runs each transport's download in turn in `lab`, whose down link runs
/// at `link_rate_bps`.
pub fn run(
    lab: &Lab,
    exp: &LossExperiment,
    link_rate_bps: u64,
) -> Result<LossOutcome, RecipeError> {
    let mut outcome = LossOutcome {
        runs: Vec::new(),
        skipped: Vec::new(),
    };
    let rate = link_rate_bps.max(1) as f64;
    for transport in &exp.transports {
        if !transport.available() {
            outcome.skipped.push((
                transport.clone(),
                format!("{transport} is not available on this machine or in this build"),
            ));
            continue;
        }
        let run = match transport {
            Transport::Kernel(cc) => {
                lab.set_tcp_ecn(false)?;
                let r = bulk::run(
                    lab.server_ns(),
                    SocketAddr::new(lab.server_bind_addr(), BULK_PORT),
                    lab.client_ns(),
                    SocketAddr::new(lab.server_addr(), BULK_PORT),
                    &BulkConfig {
                        cc: cc.clone(),
                        ecn: false,
                        duration: exp.duration,
                    },
                )?;
                LossRun {
                    transport: transport.clone(),
                    goodput_mbps: r.goodput_mbps,
                    steady_goodput_mbps: r.steady_goodput_mbps,
                    utilization: r.goodput_mbps * 1e6 / rate,
                    retransmitted_or_lost: u64::from(r.sender.retransmitted_segments),
                    srtt_ms: r.sender.rtt_ms,
                }
            }
            Transport::Brisk(cc) | Transport::BriskFec(cc) => {
                let config = BriskBulkConfig {
                    fec: matches!(transport, Transport::BriskFec(_)),
                    ..BriskBulkConfig::new(cc, exp.duration)
                };
                let r = brisk_bulk::run(lab, &config)?;
                LossRun {
                    transport: transport.clone(),
                    goodput_mbps: r.goodput_mbps,
                    steady_goodput_mbps: r.steady_goodput_mbps,
                    utilization: r.goodput_mbps * 1e6 / rate,
                    retransmitted_or_lost: r.sender.packets_lost,
                    srtt_ms: r.sender.smoothed_rtt_ms,
                }
            }
        };
        outcome.runs.push(run);
        std::thread::sleep(GAP);
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_name_themselves_and_know_what_exists() {
        assert_eq!(Transport::kernel("cubic").to_string(), "tcp cubic");
        assert_eq!(Transport::brisk("prague").to_string(), "brisk prague");
        assert_eq!(Transport::brisk_fec("bbr").to_string(), "brisk bbr fec");
        assert!(Transport::brisk("prague").available());
        assert!(!Transport::brisk("no-such-cc").available());
        assert!(!Transport::kernel("no-such-cc").available());
        // Linux always has reno built in.
        assert!(Transport::kernel("reno").available());
    }

    #[test]
    fn utilization_is_looked_up_per_transport() {
        let run = |t: Transport, u: f64| LossRun {
            transport: t,
            goodput_mbps: u,
            steady_goodput_mbps: u,
            utilization: u,
            retransmitted_or_lost: 0,
            srtt_ms: 20.0,
        };
        let o = LossOutcome {
            runs: vec![
                run(Transport::kernel("cubic"), 0.4),
                run(Transport::brisk("cubic"), 0.6),
            ],
            skipped: vec![],
        };
        assert_eq!(o.utilization(&Transport::kernel("cubic")), Some(0.4));
        assert_eq!(o.utilization(&Transport::brisk("cubic")), Some(0.6));
        assert_eq!(o.utilization(&Transport::brisk("bbr")), None);
    }
}
