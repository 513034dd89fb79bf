//! Brisk against ns-3, from two measurements taken in the same run: every
//! ratio the bench prints comes from here, and there is none without an
//! ns-3 measurement.

use brisk_sim::bench::GOAL_SPEEDUP_VS_NS3;
use serde::Serialize;
use std::time::Duration;

/// What one simulator took for one load.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub simulated: Duration,
    pub packet_hops: u64,
    pub wall: Duration,
    /// Time on a CPU, when the platform tells it.
    pub cpu: Option<Duration>,
}

/// Which clock a comparison used: CPU time when both sides have it (other
/// work on a shared machine then counts against neither), else wall time
/// for both, never one of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    Cpu,
    Wall,
}

/// How many times faster Brisk was than ns-3, and whether that meets the goal.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Versus {
    pub clock: Clock,
    /// ns-3's seconds per simulated second over Brisk's.
    pub speedup_time: f64,
    /// Brisk's bottleneck packet-hops per second over ns-3's.
    pub speedup_packet_hops: f64,
    pub goal_speedup: f64,
    pub meets_time_goal: bool,
    pub meets_hop_goal: bool,
}

impl Timing {
    fn seconds(&self, clock: Clock) -> f64 {
        let t = match clock {
            Clock::Cpu => self.cpu.unwrap_or(self.wall),
            Clock::Wall => self.wall,
        };
        t.as_secs_f64().max(1e-9)
    }

    /// Seconds on `clock` per simulated second.
    fn per_simulated_s(&self, clock: Clock) -> f64 {
        self.seconds(clock) / self.simulated.as_secs_f64().max(1e-9)
    }
}

/// Brisk against ns-3; `None` when there is no ns-3 measurement.
pub fn versus(brisk: &Timing, ns3: Option<&Timing>) -> Option<Versus> {
    let ns3 = ns3?;
    let clock = if brisk.cpu.is_some() && ns3.cpu.is_some() {
        Clock::Cpu
    } else {
        Clock::Wall
    };
    let speedup_time = ns3.per_simulated_s(clock) / brisk.per_simulated_s(clock);
    let hop_rate = |t: &Timing| t.packet_hops as f64 / t.seconds(clock);
    let speedup_packet_hops = hop_rate(brisk) / hop_rate(ns3).max(1e-9);
    Some(Versus {
        clock,
        speedup_time,
        speedup_packet_hops,
        goal_speedup: GOAL_SPEEDUP_VS_NS3,
        meets_time_goal: speedup_time >= GOAL_SPEEDUP_VS_NS3,
        meets_hop_goal: speedup_packet_hops >= GOAL_SPEEDUP_VS_NS3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(simulated_s: u64, hops: u64, wall_ms: u64, cpu_ms: Option<u64>) -> Timing {
        Timing {
            simulated: Duration::from_secs(simulated_s),
            packet_hops: hops,
            wall: Duration::from_millis(wall_ms),
            cpu: cpu_ms.map(Duration::from_millis),
        }
    }

    #[test]
    fn no_ns3_measurement_gives_no_ratio() {
        assert!(versus(&timing(60, 1_000, 1_000, Some(900)), None).is_none());
    }

    #[test]
    fn ratios_come_from_the_two_cpu_times() {
        // ns-3: 19 CPU s for 1.9 M hops; Brisk: 1 CPU s for 2 M hops.
        let ns3 = timing(60, 1_900_000, 25_000, Some(19_000));
        let brisk = timing(60, 2_000_000, 1_200, Some(1_000));
        let v = versus(&brisk, Some(&ns3)).unwrap();
        assert_eq!(v.clock, Clock::Cpu);
        assert!((v.speedup_time - 19.0).abs() < 1e-9, "{v:?}");
        assert!((v.speedup_packet_hops - 20.0).abs() < 1e-9, "{v:?}");
        assert!(!v.meets_time_goal && !v.meets_hop_goal);
    }

    #[test]
    fn goal_met_at_fifty_times() {
        let ns3 = timing(60, 1_000_000, 60_000, Some(50_000));
        let brisk = timing(60, 1_000_000, 1_000, Some(1_000));
        let v = versus(&brisk, Some(&ns3)).unwrap();
        assert!(v.meets_time_goal && v.meets_hop_goal, "{v:?}");
        let slower = timing(60, 1_000_000, 1_000, Some(1_001));
        assert!(!versus(&slower, Some(&ns3)).unwrap().meets_time_goal);
    }

    #[test]
    fn a_missing_cpu_clock_compares_wall_with_wall() {
        let ns3 = timing(60, 1_000, 30_000, Some(20_000));
        let brisk = timing(60, 1_000, 2_000, None);
        let v = versus(&brisk, Some(&ns3)).unwrap();
        assert_eq!(v.clock, Clock::Wall);
        assert!((v.speedup_time - 15.0).abs() < 1e-9, "{v:?}");
    }

    #[test]
    fn time_is_compared_per_simulated_second() {
        // Different simulated spans still compare like for like.
        let ns3 = timing(2, 1_000, 2_000, Some(2_000));
        let brisk = timing(4, 1_000, 400, Some(400));
        let v = versus(&brisk, Some(&ns3)).unwrap();
        assert!((v.speedup_time - 10.0).abs() < 1e-9, "{v:?}");
    }
}
