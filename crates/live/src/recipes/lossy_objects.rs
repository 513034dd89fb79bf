//! Objects and bulk over a lossy mobile path (OK.ru's profiles), kernel
//! TCP beside Brisk with and without forward error correction, one
//! transfer at a time through the same lab: the live counterpart of the
//! simulator's "Lossy mobile links" section.
//!
//! Objects: each transport fetches the sizes in turn, `repeats` times,
//! each on a fresh connection timed from the connect call to the last
//! byte: kernel TCP through [`super::sized_tcp`] (its handshake included,
//! no TLS), Brisk through [`super::brisk_fetch`] (its handshake included;
//! FEC on protects every stream from the first packet). Bulk: one
//! download per transport through [`super::loss`] (Brisk's FEC there
//! follows the measured loss rate, bulk data's policy).

use super::RecipeError;
use super::brisk_fetch::{self, BriskFetchConfig};
use super::loss::{self, LossExperiment, LossOutcome, Transport};
use super::sized_tcp::{self, SizedConfig};
use crate::lab::Lab;
use serde::Serialize;
use std::time::Duration;

/// The pause between two transports' series, so each starts on an empty
/// queue.
const GAP: Duration = Duration::from_millis(300);
/// The longest one object may take: kernel TCP's retransmission timeouts
/// back off to seconds on a 5% lossy long path.
const OBJECT_LIMIT: Duration = Duration::from_secs(60);

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LossyExperiment {
    pub transports: Vec<Transport>,
    /// Object sizes in bytes, fetched in this order, `repeats` times.
    pub sizes: Vec<u64>,
    pub repeats: usize,
    /// Each transport's bulk download; zero runs none.
    pub bulk: Duration,
}

impl LossyExperiment {
    /// Kernel CUBIC and BBR, Brisk BBR with and without FEC; 10, 50 and
    /// 200 KB objects.
    pub fn okru(repeats: usize, bulk: Duration) -> LossyExperiment {
        LossyExperiment {
            transports: vec![
                Transport::kernel("cubic"),
                Transport::kernel("bbr"),
                Transport::brisk_fec("bbr"),
                Transport::brisk("bbr"),
            ],
            sizes: vec![10_000, 50_000, 200_000],
            repeats,
            bulk,
        }
    }

    /// The fetches of one transport, in order.
    fn series(&self) -> Vec<u64> {
        (0..self.repeats).flat_map(|_| self.sizes.clone()).collect()
    }
}

/// One transport's fetches of one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectTimes {
    pub transport: Transport,
    pub bytes: u64,
    /// Each fetch's completion, in ms, in the order run.
    pub completion_ms: Vec<f64>,
    /// Brisk: packets the client rebuilt from repair over these fetches.
    pub packets_rebuilt: u64,
}

/// What one lab measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LossyOutcome {
    pub objects: Vec<ObjectTimes>,
    pub bulk: LossOutcome,
    /// Transports whose objects were not fetched here, and why.
    pub skipped: Vec<(Transport, String)>,
}

impl LossyOutcome {
    /// `transport`'s completion times for objects of `bytes`, if it ran.
    pub fn times(&self, transport: &Transport, bytes: u64) -> Option<&[f64]> {
        self.objects
            .iter()
            .find(|o| &o.transport == transport && o.bytes == bytes)
            .map(|o| o.completion_ms.as_slice())
    }
}

/// Runs every transport's objects, then their bulk downloads, in `lab`
/// whose down link runs at `link_rate_bps`.
pub fn run(
    lab: &Lab,
    exp: &LossyExperiment,
    link_rate_bps: u64,
) -> Result<LossyOutcome, RecipeError> {
    let series = exp.series();
    let mut objects = Vec::new();
    let mut skipped = Vec::new();
    for transport in &exp.transports {
        if !transport.available() {
            skipped.push((
                transport.clone(),
                format!("{transport} is not available on this machine or in this build"),
            ));
            continue;
        }
        // (bytes, completion in ms, packets rebuilt) per fetch.
        let fetched: Vec<(u64, f64, u64)> = match transport {
            Transport::Kernel(cc) => {
                lab.set_tcp_ecn(false)?;
                let config = SizedConfig {
                    cc: cc.clone(),
                    sizes: series.clone(),
                    limit: OBJECT_LIMIT,
                };
                sized_tcp::run(lab, &config)?
                    .into_iter()
                    .map(|d| (d.bytes, d.completion_s * 1e3, 0))
                    .collect()
            }
            Transport::Brisk(cc) | Transport::BriskFec(cc) => {
                let config = BriskFetchConfig {
                    cc: cc.clone(),
                    fec: matches!(transport, Transport::BriskFec(_)),
                    sizes: series.clone(),
                    limit: OBJECT_LIMIT,
                    key_seed: 9,
                };
                brisk_fetch::run(lab, &config)?
                    .into_iter()
                    .map(|f| (f.bytes, f.completion_s * 1e3, f.packets_rebuilt))
                    .collect()
            }
        };
        for &bytes in &exp.sizes {
            let of_size = fetched.iter().filter(|f| f.0 == bytes);
            objects.push(ObjectTimes {
                transport: transport.clone(),
                bytes,
                completion_ms: of_size.clone().map(|f| f.1).collect(),
                packets_rebuilt: of_size.map(|f| f.2).sum(),
            });
        }
        std::thread::sleep(GAP);
    }
    let bulk = if exp.bulk.is_zero() {
        LossOutcome {
            runs: Vec::new(),
            skipped: Vec::new(),
        }
    } else {
        let bulk = LossExperiment {
            transports: exp.transports.clone(),
            duration: exp.bulk,
        };
        loss::run(lab, &bulk, link_rate_bps)?
    };
    Ok(LossyOutcome {
        objects,
        bulk,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_transport_fetches_every_size_in_turn_and_times_are_found_by_both() {
        let exp = LossyExperiment::okru(2, Duration::ZERO);
        assert_eq!(
            exp.series(),
            [10_000, 50_000, 200_000, 10_000, 50_000, 200_000]
        );
        let names: Vec<String> = exp.transports.iter().map(|t| t.to_string()).collect();
        assert_eq!(
            names,
            ["tcp cubic", "tcp bbr", "brisk bbr fec", "brisk bbr"]
        );
        let o = LossyOutcome {
            objects: vec![ObjectTimes {
                transport: Transport::brisk_fec("bbr"),
                bytes: 50_000,
                completion_ms: vec![300.0, 310.0],
                packets_rebuilt: 1,
            }],
            bulk: LossOutcome {
                runs: Vec::new(),
                skipped: Vec::new(),
            },
            skipped: Vec::new(),
        };
        assert_eq!(
            o.times(&Transport::brisk_fec("bbr"), 50_000),
            Some(&[300.0, 310.0][..])
        );
        assert_eq!(o.times(&Transport::brisk("bbr"), 50_000), None);
        assert_eq!(o.times(&Transport::brisk_fec("bbr"), 10_000), None);
    }
}
