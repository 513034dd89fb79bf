//! CoDel beside FIFO under a constant overload: 12 Mbit/s of 1500-byte
//! packets offered to a 10 Mbit/s output (one packet every 1 ms, one
//! dequeue every 1.2 ms), for 30 s of virtual time, measured over the last
//! 20 s. The excess is 1/6 of the offered packets.
//!
//! FIFO fills its 1000 packets after about 6 s, then holds a standing queue
//! of 1000 x 1.2 ms = 1.2 s while tail-dropping the excess. CoDel sheds the
//! excess by dropping at the head and never reaches the limit. Against
//! senders that do not slow down, CoDel's drop rate must climb to
//! 10/s x sqrt(count) = 167/s (count ~ 280), which takes seconds; it then
//! overshoots, drains the queue, and the re-entry rule restarts `count`
//! low, so the sojourn cycles between ~5 and ~135 ms (period ~4.5 s;
//! median ~86 ms here). CoDel holds the delay at its target only when
//! senders respond to its drops or marks.

use brisk_netmodel::queue::{Codel, CodelConfig, Fifo, FifoConfig};
use brisk_netmodel::{DropReason, Packet, Queue, QueueEvent};
use brisk_time::Instant;
use brisk_wire::{Ecn, ip};
use std::net::SocketAddr;

const ARRIVAL_NS: u64 = 1_000_000;
const SERVICE_NS: u64 = 1_200_000;
const RUN_NS: u64 = 30_000_000_000;
const WINDOW_NS: u64 = 10_000_000_000;
const LEN: usize = 1500;

fn packet(id: u64, v6: bool, ecn: Ecn) -> Packet {
    let (src, dst, overhead): (SocketAddr, SocketAddr, usize) = if v6 {
        (
            "[2001:db8::1]:4000".parse().unwrap(),
            "[2001:db8:1::1]:5000".parse().unwrap(),
            48,
        )
    } else {
        (
            "10.0.0.1:4000".parse().unwrap(),
            "10.0.1.1:5000".parse().unwrap(),
            28,
        )
    };
    let data = ip::udp_datagram(src, dst, ecn, &vec![0; LEN - overhead]).unwrap();
    Packet::new(id, Instant::ZERO, data).unwrap()
}

#[derive(Debug, Default)]
struct Window {
    arrivals: u64,
    sojourns_ms: Vec<f64>,
    aqm_drops: u64,
    overflow_drops: u64,
    marks: u64,
}

impl Window {
    fn percentile_ms(&mut self, p: usize) -> f64 {
        self.sojourns_ms.sort_by(f64::total_cmp);
        self.sojourns_ms[self.sojourns_ms.len() * p / 100]
    }

    fn loss(&self) -> f64 {
        (self.aqm_drops + self.overflow_drops) as f64 / self.arrivals as f64
    }
}

/// Runs the overload through `q`. Also returns the first time any packet
/// was dropped and the largest backlog reached before it.
fn run(q: &mut dyn Queue, v6: bool, ecn: Ecn) -> (Window, Option<Instant>, usize) {
    let mut w = Window::default();
    let mut first_drop = None;
    let mut peak_before_drop = 0;
    let (mut next_arrival, mut next_service, mut id) = (0, SERVICE_NS, 0);
    while next_arrival < RUN_NS || next_service < RUN_NS {
        let in_window;
        if next_arrival <= next_service {
            let now = Instant::from_nanos(next_arrival);
            in_window = next_arrival >= WINDOW_NS;
            q.enqueue(now, packet(id, v6, ecn));
            w.arrivals += u64::from(in_window);
            id += 1;
            next_arrival += ARRIVAL_NS;
        } else {
            let now = Instant::from_nanos(next_service);
            in_window = next_service >= WINDOW_NS;
            if let Some(p) = q.dequeue(now)
                && in_window
            {
                w.sojourns_ms
                    .push((now - p.enqueued_at).as_secs_f64() * 1e3);
            }
            next_service += SERVICE_NS;
        }
        while let Some(e) = q.poll_event() {
            match e {
                QueueEvent::Dropped { at, reason, .. } => {
                    first_drop.get_or_insert(at);
                    if in_window {
                        match reason {
                            DropReason::Aqm => w.aqm_drops += 1,
                            DropReason::Overflow => w.overflow_drops += 1,
                        }
                    }
                }
                QueueEvent::Marked { .. } => w.marks += u64::from(in_window),
            }
        }
        if first_drop.is_none() {
            peak_before_drop = peak_before_drop.max(q.len_packets());
        }
    }
    (w, first_drop, peak_before_drop)
}

fn fifo() -> Fifo {
    Fifo::new(FifoConfig {
        limit_packets: Some(1000),
        limit_bytes: None,
    })
}

#[test]
fn fifo_holds_a_standing_queue_codel_sheds_the_excess_at_the_head() {
    for v6 in [false, true] {
        let (mut f, ..) = run(&mut fifo(), v6, Ecn::NotEct);
        let fifo_median = f.percentile_ms(50);
        // Standing queue: the limit times the service time of a packet.
        assert!((fifo_median - 1200.0).abs() < 5.0, "fifo {fifo_median} ms");
        assert!(
            (f.loss() - 1.0 / 6.0).abs() < 0.005,
            "fifo loss {}",
            f.loss()
        );
        assert_eq!(f.aqm_drops, 0);

        let mut q = Codel::new(CodelConfig::default());
        let (mut c, first_drop, _) = run(&mut q, v6, Ecn::NotEct);
        let (median, p90) = (c.percentile_ms(50), c.percentile_ms(90));
        eprintln!(
            "v6={v6}: fifo median {fifo_median:.1} ms, loss {:.4}; \
             codel median {median:.1} ms, p90 {p90:.1} ms, loss {:.4}",
            f.loss(),
            c.loss()
        );
        assert!(median * 10.0 < fifo_median, "codel median {median} ms");
        // Even at the top of its cycle the delay stays within two intervals.
        assert!(p90 < 200.0, "codel p90 {p90} ms");
        // The excess goes by AQM drops alone, never reaching the limit.
        assert!(
            (c.loss() - 1.0 / 6.0).abs() < 0.01,
            "codel loss {}",
            c.loss()
        );
        assert_eq!((c.overflow_drops, q.stats().dropped_overflow), (0, 0));
        // Nothing is dropped before the delay has exceeded the target for
        // a whole interval: the first drop comes after 100 ms.
        assert!(first_drop.unwrap() > Instant::from_millis(100));
    }
}

#[test]
fn codel_marks_ect_traffic_instead_of_dropping_it() {
    for v6 in [false, true] {
        let mut q = Codel::new(CodelConfig::default());
        let (mut c, first_drop, peak) = run(&mut q, v6, Ecn::Ect0);
        // Unresponsive senders ignore the marks, so the queue fills as a
        // FIFO's would; but CoDel never drops an ECT packet itself: the
        // only losses are tail drops once the 1000-packet limit is hit.
        assert_eq!(q.stats().dropped_aqm, 0);
        assert!(c.marks > 0 && q.stats().marked > 0);
        assert_eq!(peak, 1000, "no drop at all before the queue was full");
        assert!(first_drop.unwrap() > Instant::from_secs_f64(5.9));
        assert!((c.loss() - 1.0 / 6.0).abs() < 0.005);
        assert!((c.percentile_ms(50) - 1200.0).abs() < 5.0);
    }
}
