//! CoDel (RFC 8289): a FIFO whose dequeue drops or marks packets once their
//! sojourn time has stayed above `target` for a whole `interval`, at a rate
//! that grows with the square root of the number of drops. Mirrors Linux's
//! `sch_codel` (the control law lives in [`codel_law`](super::codel_law)).

use super::backlog::Backlog;
use super::codel_law::{CodelCounters, CodelParams, CodelSource, CodelVars, codel_duration};
use super::{DropReason, Limits, Queue, QueueEvent, QueueStats};
use crate::packet::Packet;
use brisk_time::Instant;
use std::time::Duration;

/// `[queue.codel]`: RFC 8289's defaults, `target = "5ms"` and
/// `interval = "100ms"`, with a 1000-packet limit as in Linux, and ECN on
/// (Linux's `sch_codel` leaves it off unless asked; `fq_codel` turns it on).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodelConfig {
    /// Acceptable standing queue delay.
    #[serde(with = "crate::units::duration")]
    pub target: Duration,
    /// How long the delay must stay above `target` before CoDel acts; on
    /// the order of a worst-case RTT.
    #[serde(with = "crate::units::duration")]
    pub interval: Duration,
    /// Mark ECN-capable packets CE instead of dropping them.
    pub ecn: bool,
    /// Also mark every ECN-capable packet whose sojourn exceeds this
    /// (Linux's `ce_threshold`), whatever the control law says.
    #[serde(deserialize_with = "crate::units::opt_duration::deserialize")]
    pub ce_threshold: Option<Duration>,
    /// Most packets queued before tail drop on arrival; `None` for no packet limit. Default 1000.
    pub limit_packets: Option<usize>,
    /// Most bytes (whole IP datagrams) queued before tail drop; `None` (default) for no byte limit.
    #[serde(deserialize_with = "crate::units::opt_bytes::deserialize")]
    pub limit_bytes: Option<u64>,
    /// CoDel never drops while at most this many bytes are queued (Linux's
    /// `mtu`, ns-3's `MinBytes`). 1500: our lengths are IP datagrams, while
    /// Linux's 1514 counts the Ethernet header too.
    #[serde(with = "crate::units::bytes")]
    pub mtu_bytes: u64,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            ecn: true,
            ce_threshold: None,
            limit_packets: Some(1000),
            limit_bytes: None,
            mtu_bytes: 1500,
        }
    }
}

impl CodelConfig {
    /// The two limit fields as one [`Limits`].
    pub fn limits(&self) -> Limits {
        Limits::new(self.limit_packets, self.limit_bytes)
    }

    pub(crate) fn params(&self) -> CodelParams {
        let mut p = CodelParams::new(self.target, self.interval, self.ecn, self.mtu_bytes);
        p.ce_threshold = self.ce_threshold.map(codel_duration);
        p
    }
}

/// CoDel over a single FIFO. Tail-drops at the limits on enqueue
/// ([`DropReason::Overflow`]); drops or marks at dequeue per the control law
/// ([`DropReason::Aqm`]).
#[derive(Debug)]
pub struct Codel {
    params: CodelParams,
    vars: CodelVars,
    backlog: Backlog,
    /// Scratch for the packets one dequeue drops.
    dropped: Vec<Packet>,
}

impl Codel {
    /// An empty queue in CoDel's non-dropping state.
    pub fn new(config: CodelConfig) -> Codel {
        Codel {
            params: config.params(),
            vars: CodelVars::default(),
            backlog: Backlog::new(config.limits()),
            dropped: Vec::new(),
        }
    }

    /// What the control law has done so far.
    pub fn codel_counters(&self) -> CodelCounters {
        self.vars.counters
    }

    /// Whether CoDel is in its dropping state (sojourn above target for
    /// over an interval, and not yet back below).
    pub fn is_dropping(&self) -> bool {
        self.vars.is_dropping()
    }
}

/// The FIFO as CoDel sees it: the backlog it checks is the whole queue's.
impl CodelSource for Backlog {
    fn pop(&mut self) -> Option<Packet> {
        Backlog::pop(self)
    }

    fn backlog_bytes(&self) -> u64 {
        Backlog::backlog_bytes(self)
    }
}

impl Queue for Codel {
    fn name(&self) -> &'static str {
        "codel"
    }

    fn enqueue(&mut self, now: Instant, packet: Packet) {
        self.backlog.push_or_tail_drop(now, packet);
    }

    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        let mut marked = false;
        let released = self.vars.dequeue(
            now,
            &self.params,
            &mut self.backlog,
            &mut self.dropped,
            &mut marked,
        );
        for packet in self.dropped.drain(..) {
            self.backlog.drop(now, packet, DropReason::Aqm);
        }
        let released = released?;
        if marked {
            self.backlog.mark(now, released.id);
        }
        self.backlog.count_dequeued(&released);
        Some(released)
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
pub(crate) mod tests {
    use super::*;
    use crate::packet::tests::udp;
    use brisk_wire::{Ecn, ip};
    use std::net::SocketAddr;

    /// A UDP datagram of `len` bytes in total, IPv4 or IPv6, from host 1
    /// port `src_port` to host `dst_host` port 5000.
    pub(crate) fn datagram(
        id: u64,
        v6: bool,
        src_port: u16,
        dst_host: u8,
        len: usize,
        ecn: Ecn,
    ) -> Packet {
        let (src, dst, overhead): (SocketAddr, SocketAddr, usize) = if v6 {
            (
                format!("[2001:db8::1]:{src_port}").parse().unwrap(),
                format!("[2001:db8:1::{dst_host:x}]:5000").parse().unwrap(),
                48,
            )
        } else {
            (
                format!("10.0.0.1:{src_port}").parse().unwrap(),
                format!("10.0.1.{dst_host}:5000").parse().unwrap(),
                28,
            )
        };
        let payload = vec![0u8; len.saturating_sub(overhead)];
        let data = ip::udp_datagram(src, dst, ecn, &payload).unwrap();
        let p = Packet::new(id, Instant::ZERO, data).unwrap();
        assert_eq!(p.len(), len);
        p
    }

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    fn config(limit_packets: usize) -> CodelConfig {
        CodelConfig {
            limit_packets: Some(limit_packets),
            ..CodelConfig::default()
        }
    }

    /// Fills `q` at time zero with `n` packets of 1000 bytes.
    fn fill(q: &mut Codel, v6: bool, first_id: u64, n: u64, ecn: Ecn) {
        for id in first_id..first_id + n {
            q.enqueue(Instant::ZERO, datagram(id, v6, 1000, 1, 1000, ecn));
        }
    }

    /// (backlog, AQM drops, target marks, CE-threshold marks).
    fn state(q: &Codel) -> (u64, u64, u64, u64) {
        let c = q.codel_counters();
        assert_eq!(c.dropped, q.stats().dropped_aqm);
        assert_eq!(
            c.target_marked + c.ce_threshold_marked,
            q.stats().marked,
            "a packet is marked at most once"
        );
        (
            q.stats().backlog_packets,
            c.dropped,
            c.target_marked,
            c.ce_threshold_marked,
        )
    }

    // ns-3 src/traffic-control/test/codel-queue-disc-test-suite.cc, test 1
    // (CoDelQueueDiscBasicEnqueueDequeue), in packet and byte limit modes.
    #[test]
    fn basic_enqueue_dequeue_in_order_without_drops() {
        for v6 in [false, true] {
            for bytes_mode in [false, true] {
                let mut q = Codel::new(CodelConfig {
                    target: Duration::from_millis(4),
                    interval: Duration::from_millis(50),
                    mtu_bytes: 1000,
                    limit_packets: (!bytes_mode).then_some(1500),
                    limit_bytes: bytes_mode.then_some(1500 * 1000),
                    ..CodelConfig::default()
                });
                for i in 0..6 {
                    assert_eq!(q.len_packets(), i as usize);
                    assert_eq!(q.len_bytes(), i as usize * 1000);
                    q.enqueue(Instant::ZERO, datagram(i, v6, 1000, 1, 1000, Ecn::NotEct));
                }
                assert_eq!(q.stats().dropped_overflow, 0);
                for i in 0..6 {
                    assert_eq!(q.dequeue(Instant::ZERO).map(|p| p.id), Some(i));
                    assert_eq!(q.len_packets(), 5 - i as usize);
                }
                assert!(q.dequeue(Instant::ZERO).is_none());
                assert_eq!(q.stats().drops(), 0);
                assert!(q.poll_event().is_none());
            }
        }
    }

    // ns-3 codel-queue-disc-test-suite.cc, test 2 (CoDelQueueDiscBasicOverflow):
    // 503 packets into a 500-packet (or 500-packet-sized byte) limit.
    #[test]
    fn overflow_tail_drops_the_three_extra() {
        for v6 in [false, true] {
            for bytes_mode in [false, true] {
                let mut q = Codel::new(CodelConfig {
                    mtu_bytes: 1000,
                    limit_packets: (!bytes_mode).then_some(500),
                    limit_bytes: bytes_mode.then_some(500 * 1000),
                    ..CodelConfig::default()
                });
                fill(&mut q, v6, 0, 503, Ecn::NotEct);
                assert_eq!(q.len_packets(), 500);
                assert_eq!(q.stats().dropped_overflow, 3);
                let dropped: Vec<(u64, DropReason)> = std::iter::from_fn(|| q.poll_event())
                    .map(|e| match e {
                        QueueEvent::Dropped { packet, reason, .. } => (packet.id, reason),
                        QueueEvent::Marked { .. } => panic!("no marks on enqueue"),
                    })
                    .collect();
                let want: Vec<_> = (500..503).map(|id| (id, DropReason::Overflow)).collect();
                assert_eq!(dropped, want);
            }
        }
    }

    // ns-3 codel-queue-disc-test-suite.cc, test 5 (CoDelQueueDiscBasicDrop):
    // 20 packets at t = 0, ECN off; dequeue at 2*target, twice at
    // 2*target + 2*interval, then at twice that. ns-3 checks the counts
    // through its DropNext trace; here they are spelled out: the drop times
    // come from the Newton-step approximations of 1/sqrt(2), 1/sqrt(3),
    // 1/sqrt(4): 0.5, 0.5625, 0.4877.
    #[test]
    fn basic_drop_follows_the_control_law() {
        for v6 in [false, true] {
            let mut q = Codel::new(CodelConfig {
                ecn: false,
                ..config(500)
            });
            fill(&mut q, v6, 0, 20, Ecn::NotEct);
            // Above target, but not yet for an interval: no drop.
            assert_eq!(q.dequeue(ms(10)).map(|p| p.id), Some(0));
            assert_eq!(state(&q), (19, 0, 0, 0));
            assert!(!q.is_dropping());
            // Above target for over an interval: drop one, send the next.
            assert_eq!(q.dequeue(ms(210)).map(|p| p.id), Some(2));
            assert_eq!(state(&q), (17, 1, 0, 0));
            assert!(q.is_dropping());
            // Dropping, but the next drop is due at 310 ms.
            assert_eq!(q.dequeue(ms(210)).map(|p| p.id), Some(3));
            assert_eq!(state(&q), (16, 1, 0, 0));
            // At 420 ms the drops due at 310, 360 and 416 ms all happen;
            // the next is due at 465 ms.
            assert_eq!(q.dequeue(ms(420)).map(|p| p.id), Some(7));
            assert_eq!(state(&q), (12, 4, 0, 0));
            assert_eq!(q.vars.count, 4);
            let aqm: Vec<u64> = std::iter::from_fn(|| q.poll_event())
                .map(|e| match e {
                    QueueEvent::Dropped {
                        packet,
                        reason: DropReason::Aqm,
                        ..
                    } => packet.id,
                    other => panic!("unexpected {other:?}"),
                })
                .collect();
            assert_eq!(aqm, vec![1, 4, 5, 6]);
        }
    }

    // ns-3 codel-queue-disc-test-suite.cc, test 6 (CoDelQueueDiscBasicMark),
    // sub-cases 1 and 2: with ECN on, ECT packets are marked exactly where
    // Not-ECT packets are dropped, and stay in the queue.
    #[test]
    fn ecn_marks_where_it_would_drop() {
        for v6 in [false, true] {
            let mut q = Codel::new(config(500));
            fill(&mut q, v6, 0, 20, Ecn::NotEct);
            q.dequeue(ms(10));
            let before_first_drop = q.len_packets();
            q.dequeue(ms(210));
            assert_eq!(state(&q), (17, 1, 0, 0));

            let mut q = Codel::new(config(500));
            fill(&mut q, v6, 0, 20, Ecn::Ect0);
            assert_eq!(q.dequeue(ms(10)).unwrap().ecn(), Ecn::Ect0);
            assert_eq!(state(&q), (19, 0, 0, 0));
            let before_first_mark = q.len_packets();
            let p = q.dequeue(ms(210)).unwrap();
            assert_eq!((p.id, p.ecn()), (1, Ecn::Ce));
            assert_eq!(state(&q), (18, 0, 1, 0));
            assert_eq!(before_first_drop, before_first_mark);
            // Not yet time for the next signal.
            assert_eq!(q.dequeue(ms(210)).unwrap().ecn(), Ecn::Ect0);
            assert_eq!(state(&q), (17, 0, 1, 0));
            // Time for it: one mark, and only one packet leaves.
            assert_eq!(q.dequeue(ms(420)).unwrap().ecn(), Ecn::Ce);
            assert_eq!(state(&q), (16, 0, 2, 0));
            let events: Vec<QueueEvent> = std::iter::from_fn(|| q.poll_event()).collect();
            assert_eq!(
                events,
                vec![
                    QueueEvent::Marked {
                        at: ms(210),
                        packet_id: 1
                    },
                    QueueEvent::Marked {
                        at: ms(420),
                        packet_id: 3
                    },
                ]
            );
        }
    }

    // ns-3 codel-queue-disc-test-suite.cc, test 6 sub-case 3: ce_threshold
    // 2 ms, the first 3 packets ECT and the other 17 Not-ECT.
    #[test]
    fn ce_threshold_marks_ect_and_the_law_drops_not_ect() {
        for v6 in [false, true] {
            let mut q = Codel::new(CodelConfig {
                ce_threshold: Some(Duration::from_millis(2)),
                ..config(500)
            });
            fill(&mut q, v6, 0, 3, Ecn::Ect0);
            fill(&mut q, v6, 3, 17, Ecn::NotEct);
            q.dequeue(ms(10));
            assert_eq!(state(&q), (19, 0, 0, 1));
            // The control law marks packet 1; it is not counted twice.
            q.dequeue(ms(210));
            assert_eq!(state(&q), (18, 0, 1, 1));
            q.dequeue(ms(210));
            assert_eq!(state(&q), (17, 0, 1, 2));
            // Three drops are due by 420 ms (see basic_drop): Not-ECT
            // packets are dropped and the one sent is not markable.
            assert_eq!(q.dequeue(ms(420)).unwrap().ecn(), Ecn::NotEct);
            assert_eq!(state(&q), (13, 3, 1, 2));
        }
    }

    // ns-3 codel-queue-disc-test-suite.cc, test 6 sub-case 4: all ECT,
    // ce_threshold 2 ms; sojourn 1 ms, 3 ms, 10 ms, then 210 ms.
    #[test]
    fn ce_threshold_marks_above_the_step_only() {
        for v6 in [false, true] {
            let mut q = Codel::new(CodelConfig {
                ce_threshold: Some(Duration::from_millis(2)),
                ..config(500)
            });
            fill(&mut q, v6, 0, 20, Ecn::Ect0);
            assert_eq!(q.dequeue(ms(1)).unwrap().ecn(), Ecn::Ect0);
            assert_eq!(state(&q), (19, 0, 0, 0));
            assert_eq!(q.dequeue(ms(3)).unwrap().ecn(), Ecn::Ce);
            assert_eq!(state(&q), (18, 0, 0, 1));
            q.dequeue(ms(10));
            assert_eq!(state(&q), (17, 0, 0, 2));
            assert_eq!(q.dequeue(ms(210)).unwrap().ecn(), Ecn::Ce);
            assert_eq!(state(&q), (16, 0, 1, 2));
        }
    }

    #[test]
    fn no_drop_while_at_most_one_mtu_is_queued() {
        // Two 1000-byte packets that wait 1 s each: after the first leaves,
        // 1000 bytes <= 1500 remain, so CoDel never starts dropping.
        let mut q = Codel::new(CodelConfig::default());
        for i in 0..2 {
            q.enqueue(Instant::ZERO, udp(i, 0, 1000, Ecn::NotEct));
        }
        assert!(q.dequeue(ms(1000)).is_some());
        assert!(q.dequeue(ms(1200)).is_some());
        assert_eq!(q.stats().drops(), 0);
        assert!(q.dequeue(ms(1300)).is_none());
        assert!(!q.is_dropping());
    }

    #[test]
    fn exactly_one_mtu_queued_counts_as_under() {
        // Linux's rule is `backlog <= mtu` (ns-3's is `< MinBytes`): with
        // exactly 1500 bytes left behind each packet, CoDel never drops.
        let mut q = Codel::new(CodelConfig::default());
        for i in 0..3 {
            q.enqueue(Instant::ZERO, udp(i, 0, 750, Ecn::NotEct));
        }
        q.dequeue(ms(1000));
        q.enqueue(ms(1000), udp(3, 0, 750, Ecn::NotEct));
        q.dequeue(ms(1200));
        assert_eq!((q.len_packets(), q.stats().drops()), (2, 0));
    }

    #[test]
    fn late_marks_catch_up_on_the_schedule() {
        // As in Linux, a mark moves the next signal time on from the last
        // scheduled one, not from now: after a long gap, back-to-back
        // dequeues are each marked until the schedule catches up.
        let mut q = Codel::new(config(500));
        fill(&mut q, false, 0, 20, Ecn::Ect0);
        q.dequeue(ms(10));
        q.dequeue(ms(210)); // enters the dropping state; next at 310 ms
        assert_eq!(state(&q), (18, 0, 1, 0));
        q.dequeue(ms(1000)); // due since 310 ms; next at 360 ms
        q.dequeue(ms(1001)); // due since 360 ms; next at 416 ms
        q.dequeue(ms(1002)); // due since 416 ms
        assert_eq!(state(&q), (15, 0, 4, 0));
        assert_eq!(q.vars.count, 4);
    }

    #[test]
    fn already_ce_packets_are_signalled_not_dropped() {
        // As in Linux (INET_ECN_set_ce succeeds on CE): a CE packet carries
        // the signal already, so the law never drops it.
        let mut q = Codel::new(config(500));
        fill(&mut q, false, 0, 20, Ecn::Ce);
        q.dequeue(ms(10));
        q.dequeue(ms(210));
        q.dequeue(ms(420));
        assert_eq!(state(&q), (17, 0, 2, 0));
    }

    #[test]
    fn config_from_toml() {
        use crate::queue::QueueConfig;
        #[derive(serde::Deserialize)]
        struct Scenario {
            queue: QueueConfig,
        }
        let s: Scenario = toml::from_str(
            "[queue.codel]\ntarget = \"2ms\"\nce_threshold = \"1ms\"\necn = false\nmtu_bytes = \"9000B\"",
        )
        .unwrap();
        let want = CodelConfig {
            target: Duration::from_millis(2),
            ce_threshold: Some(Duration::from_millis(1)),
            ecn: false,
            mtu_bytes: 9000,
            ..CodelConfig::default()
        };
        assert_eq!(s.queue, QueueConfig::Codel(want));
        assert_eq!(s.queue.build(crate::rng(1, 0)).name(), "codel");
        let err = toml::from_str::<Scenario>("[queue.codel]\n\ninterval = \"soon\"")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("line 3") && err.contains("soon"), "{err}");
        let err = toml::from_str::<Scenario>("[queue.codel]\ntargett = \"5ms\"")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("targett") && err.contains("line 2"), "{err}");
    }
}
