//! FIFO with tail drop: the bufferbloat baseline found in most home routers
//! and cellular base stations.

use super::backlog::Backlog;
use super::{Limits, Queue, QueueEvent, QueueStats};
use crate::packet::Packet;
use brisk_time::Instant;

/// `[queue.fifo]`: `limit_packets` (default 1000, like Linux's
/// txqueuelen) and/or `limit_bytes`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FifoConfig {
    /// Most packets queued before tail drop; `None` for no packet limit. Default 1000.
    pub limit_packets: Option<usize>,
    /// Most bytes (whole IP datagrams) queued before tail drop, e.g. `"150kB"`; `None` (default) for no byte limit.
    #[serde(deserialize_with = "crate::units::opt_bytes::deserialize")]
    pub limit_bytes: Option<u64>,
}

impl Default for FifoConfig {
    fn default() -> Self {
        FifoConfig {
            limit_packets: Some(1000),
            limit_bytes: None,
        }
    }
}

impl FifoConfig {
    /// The two limit fields as one [`Limits`].
    pub fn limits(&self) -> Limits {
        Limits::new(self.limit_packets, self.limit_bytes)
    }
}

/// Tail-drop FIFO: a packet that would exceed either limit is dropped on arrival; it never marks.
#[derive(Debug)]
pub struct Fifo {
    backlog: Backlog,
}

impl Fifo {
    /// An empty FIFO with the configured limits.
    pub fn new(config: FifoConfig) -> Fifo {
        Fifo {
            backlog: Backlog::new(config.limits()),
        }
    }
}

impl Queue for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }

    fn enqueue(&mut self, now: Instant, packet: Packet) {
        self.backlog.push_or_tail_drop(now, packet);
    }

    fn dequeue(&mut self, _now: Instant) -> Option<Packet> {
        let p = self.backlog.pop()?;
        self.backlog.count_dequeued(&p);
        Some(p)
    }

    fn stats(&self) -> QueueStats {
        self.backlog.stats()
    }

    fn len_packets(&self) -> usize {
        self.backlog.len_packets()
    }

    fn len_bytes(&self) -> usize {
        self.backlog.backlog_bytes() as usize
    }

    fn is_empty(&self) -> bool {
        self.backlog.len_packets() == 0
    }

    fn poll_event(&mut self) -> Option<QueueEvent> {
        self.backlog.poll_event()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::udp;
    use brisk_wire::Ecn;

    #[test]
    fn tail_drops_past_the_packet_limit_in_order() {
        let mut q = Fifo::new(FifoConfig {
            limit_packets: Some(3),
            limit_bytes: None,
        });
        for i in 0..5 {
            q.enqueue(Instant::ZERO, udp(i, 0, 100, Ecn::Ect0));
        }
        assert_eq!(q.stats().dropped_overflow, 2);
        let dropped: Vec<u64> = std::iter::from_fn(|| q.poll_event())
            .map(|e| match e {
                QueueEvent::Dropped { packet, .. } => packet.id,
                QueueEvent::Marked { .. } => panic!("fifo never marks"),
            })
            .collect();
        assert_eq!(dropped, vec![3, 4]);
        let out: Vec<u64> = std::iter::from_fn(|| q.dequeue(Instant::ZERO))
            .map(|p| p.id)
            .collect();
        assert_eq!(out, vec![0, 1, 2]);
        assert!(q.is_empty());
    }

    #[test]
    fn byte_limit_counts_whole_datagrams() {
        let mut q = Fifo::new(FifoConfig {
            limit_packets: None,
            limit_bytes: Some(250),
        });
        for i in 0..3 {
            q.enqueue(Instant::ZERO, udp(i, 0, 100, Ecn::NotEct));
        }
        assert_eq!((q.len_packets(), q.len_bytes()), (2, 200));
        assert_eq!(q.stats().drops(), 1);
    }

    #[test]
    fn config_from_toml_with_units_and_line_numbers() {
        use crate::queue::QueueConfig;
        #[derive(serde::Deserialize)]
        struct Scenario {
            queue: QueueConfig,
        }
        let s: Scenario = toml::from_str("[queue.fifo]\nlimit_bytes = \"150kB\"").unwrap();
        let want = FifoConfig {
            limit_packets: Some(1000),
            limit_bytes: Some(150_000),
        };
        assert_eq!(s.queue, QueueConfig::Fifo(want));
        let bad = "[queue.fifo]\n\nlimit_bytes = \"huge\"";
        let err = toml::from_str::<Scenario>(bad).err().unwrap().to_string();
        assert!(
            err.contains("line 3") && err.contains("limit_bytes") && err.contains("huge"),
            "{err}"
        );
        let err = toml::from_str::<Scenario>("[queue.fifo]\nlimit_pakets = 5")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("limit_pakets") && err.contains("line 2"),
            "{err}"
        );
        let err = toml::from_str::<Scenario>("[queue.lifo]")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("lifo") && err.contains("fifo"), "{err}");
    }
}
