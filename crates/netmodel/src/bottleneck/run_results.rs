//! A whole run's results in the one shape `brisk sim --json` and
//! `brisk live` both print: the run's identity, both links and queues of
//! the bottleneck, every flow, then what the driver adds (the simulator's
//! engine counters, the live router's fidelity and its programs' reports).
//! One type, so a field added here reaches both drivers' output at once.

use super::flow_results::FlowResults;
use super::summary::{LinkResults, QueueResults};
use serde::Serialize;

/// One run's results. `T` is a transport flow's own report (the
/// simulator's brisk flows; the live router has none), `D` what the driver
/// adds, flattened into the same JSON object after the flows.
#[derive(Debug, Clone, Serialize)]
pub struct RunResults<T, D> {
    /// The scenario's name.
    pub scenario: String,
    /// The seed of every random draw of the models.
    pub seed: u64,
    /// The address family: "v4", "v6" or (live) "v6only".
    pub ip: &'static str,
    /// Virtual time simulated, or wall time the live router ran, in seconds.
    pub duration_s: f64,
    /// The down direction of the bottleneck (where downloads queue).
    pub link: LinkResults,
    /// The up direction.
    pub link_up: LinkResults,
    /// The down direction's queue.
    pub queue: QueueResults,
    /// The up direction's queue.
    pub queue_up: QueueResults,
    /// Every flow, in the order the run first saw them.
    pub flows: Vec<FlowResults<T>>,
    /// What the driver adds.
    #[serde(flatten)]
    pub driver: D,
}

impl<T, D> RunResults<T, D> {
    /// The same results with another driver part, and each flow's
    /// transport report mapped by `transport`.
    pub fn map<U, E>(
        self,
        transport: impl FnMut(T) -> U,
        driver: impl FnOnce(D) -> E,
    ) -> RunResults<U, E> {
        let mut transport = transport;
        RunResults {
            scenario: self.scenario,
            seed: self.seed,
            ip: self.ip,
            duration_s: self.duration_s,
            link: self.link,
            link_up: self.link_up,
            queue: self.queue,
            queue_up: self.queue_up,
            flows: self
                .flows
                .into_iter()
                .map(|f| f.map_transport(&mut transport))
                .collect(),
            driver: driver(self.driver),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bottleneck::flow_results::{FlowEnds, FlowLabel};
    use crate::network::Network;
    use crate::{Bottleneck, Direction, FlowMetrics};
    use std::time::Duration;

    #[derive(Debug, Clone, Serialize)]
    struct Driver {
        steps: u64,
    }

    fn results() -> RunResults<Driver, Driver> {
        let b = Bottleneck::new(&Network::default(), 1);
        let label = FlowLabel {
            id: 0,
            name: "f".into(),
            kind: "udp",
            src: "10.1.0.1:1".into(),
            dst: "10.2.0.1:2".into(),
        };
        let ends = FlowEnds {
            sent_bytes: 10,
            delivered_bytes: 10,
            active_s: 1.0,
            rtt_ms: None,
            return_delay: Duration::ZERO,
            unanswered: 0,
            brisk: Some(Driver { steps: 7 }),
        };
        RunResults {
            scenario: "s".into(),
            seed: 1,
            ip: "v4",
            duration_s: 1.0,
            link: b.link_results(Direction::Down, Duration::from_secs(1)),
            link_up: b.link_results(Direction::Up, Duration::from_secs(1)),
            queue: b.queue_results(Direction::Down),
            queue_up: b.queue_results(Direction::Up),
            flows: vec![FlowResults::new(label, ends, &FlowMetrics::default())],
            driver: Driver { steps: 5 },
        }
    }

    #[test]
    fn the_driver_part_follows_the_flows_in_the_same_object() {
        let json = serde_json::to_string(&results()).unwrap();
        let keys = ["\"scenario\"", "\"link_up\"", "\"flows\"", "\"steps\":5"];
        let at: Vec<usize> = keys.iter().map(|k| json.find(k).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{json}");
        assert!(json.ends_with("\"steps\":5}"), "{json}");
    }

    #[test]
    fn map_converts_transport_reports_and_the_driver_part_only() {
        let r = results().map(|t| t.steps * 2, |d| d.steps + 1);
        assert_eq!(r.flows[0].brisk, Some(14));
        assert_eq!(r.driver, 6);
        assert_eq!((r.scenario.as_str(), r.flows[0].sent_bytes), ("s", 10));
    }
}
