//! DualPI2 in virtual time: the PI2 probability trajectory against RFC
//! 9332's update equation, the L queue's step marking, and whole-queue
//! behaviour behind a 10 Mbit/s bottleneck (L4S kept shallow, classic
//! traffic held near target, classic protection, no reordering). Packets
//! alternate between IPv4 and IPv6 throughout.

use brisk_netmodel::queue::{DualPi2, DualPi2Config, DualPi2Stats};
use brisk_netmodel::{Packet, Queue, QueueEvent, rng};
use brisk_time::Instant;
use brisk_wire::{Ecn, ip};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

const LINK_BPS: u64 = 10_000_000;

/// A UDP datagram of `len` bytes: ids 0 and 1 (mod 4) are IPv4, 2 and 3
/// IPv6, so consecutive and odd/even id sequences both mix families.
fn packet(id: u64, len: usize, ecn: Ecn) -> Packet {
    let (src, dst, headers) = if id % 4 >= 2 {
        ("[2001:db8::1]:1000", "[2001:db8::2]:5000", 48)
    } else {
        ("10.0.0.1:1000", "10.0.1.1:5000", 28)
    };
    let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
    let data = ip::udp_datagram(src, dst, ecn, &vec![0; len - headers]).unwrap();
    Packet::new(id, Instant::ZERO, data).unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// DualPI2 drained at a fixed rate, as a link's transmitter drains it.
struct Bottleneck {
    q: DualPi2,
    rate_bps: u64,
    /// When the transmitter finishes its current packet.
    free_at: Instant,
    /// Packets sent, with the time their transmission started.
    sent: Vec<(Instant, Packet)>,
}

impl Bottleneck {
    fn new(config: DualPi2Config, rate_bps: u64) -> Bottleneck {
        Bottleneck {
            q: DualPi2::new(config, rng(11, 0)),
            rate_bps,
            free_at: Instant::ZERO,
            sent: Vec::new(),
        }
    }

    /// Starts every transmission due at or before `now`.
    fn run_until(&mut self, now: Instant) {
        while !self.q.is_empty() && self.free_at <= now {
            let t = self.free_at;
            let Some(p) = self.q.dequeue(t) else { break };
            let bits = p.len() as u64 * 8;
            self.free_at = t + Duration::from_nanos((bits * 1_000_000_000).div_ceil(self.rate_bps));
            self.sent.push((t, p));
        }
    }

    fn arrive(&mut self, now: Instant, p: Packet) {
        self.run_until(now);
        self.free_at = self.free_at.max(now);
        self.q.enqueue(now, p);
        self.run_until(now);
    }

    fn stats(&mut self, now: Instant) -> DualPi2Stats {
        self.q.dualpi2_stats(now)
    }
}

fn sojourn(at: Instant, p: &Packet) -> Duration {
    at - p.enqueued_at
}

fn percentile(mut v: Vec<Duration>, q: f64) -> Duration {
    v.sort();
    v[((v.len() - 1) as f64 * q) as usize]
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Keeps `mirror` in step with what the bottleneck sent; nothing may have
/// been dropped.
fn sync(b: &mut Bottleneck, mirror: &mut VecDeque<(u64, Instant)>) {
    for (_, p) in b.sent.drain(..) {
        let (id, _) = mirror.pop_front().unwrap();
        assert_eq!(p.id, id);
    }
    while let Some(e) = b.q.poll_event() {
        assert!(matches!(e, QueueEvent::Marked { .. }), "unexpected {e:?}");
    }
}

/// Drives a standing classic queue above target, then drains it, and checks
/// p' at every update against RFC 9332's equation computed here from the
/// head-of-line delay this test tracks itself:
/// p' <- clamp(p' + alpha (qdelay - target) + beta (qdelay - qdelay_prev), 0, 1).
#[test]
fn pi2_probability_follows_the_rfc_update_equation() {
    let config = DualPi2Config::default();
    let (target, tupdate) = (config.target, config.tupdate);
    let mut b = Bottleneck::new(config, LINK_BPS);
    let (alpha, beta) = b.q.gains().effective_hz();
    // What is queued, oldest first, as (id, enqueue time): our own mirror.
    let mut mirror: VecDeque<(u64, Instant)> = VecDeque::new();
    let mut checked = 0;
    // 1500-byte ECT(0) packets every 1 ms (12 Mbit/s) for 400 ms, then
    // every 2 ms (6 Mbit/s): the queue builds, then drains. ECT(0) is
    // marked, never dropped, while p' < 1/k, so the mirror stays exact.
    let arrival = |i: u64| {
        if i < 400 {
            Instant::from_millis(i)
        } else {
            Instant::from_millis(400 + 2 * (i - 400))
        }
    };
    let (mut p_ref, mut q_prev) = (0.0f64, 0.0f64);
    let (mut rises, mut falls) = (0, 0);
    let mut next_update = Instant::ZERO + tupdate;
    let mut i = 0;
    while next_update <= Instant::from_millis(2_000) {
        // Whatever happens before the update time happens first; at equal
        // times the queue runs its update before handling the packet.
        if arrival(i) < next_update {
            b.arrive(arrival(i), packet(i, 1500, Ecn::Ect0));
            mirror.push_back((i, arrival(i)));
            i += 1;
            sync(&mut b, &mut mirror);
        } else {
            b.run_until(next_update - Duration::from_nanos(1));
            sync(&mut b, &mut mirror);
            b.q.handle_timeout(next_update);
            let now = next_update;
            next_update += tupdate;
            let q = mirror.front().map_or(0.0, |(_, t)| secs(now - *t));
            let p_prev = p_ref;
            p_ref = (p_ref + alpha * (q - secs(target)) + beta * (q - q_prev)).clamp(0.0, 1.0);
            let p = b.stats(now).prob_base;
            assert!(
                (p - p_ref).abs() < 1e-6,
                "update at {now:?}: p' {p} vs RFC {p_ref}"
            );
            assert!((0.0..=1.0).contains(&p));
            if q > secs(target) && q >= q_prev {
                assert!(p > p_prev || p == 1.0, "delay {q} above target, p' fell");
                rises += 1;
            }
            if q < secs(target) && q <= q_prev && p_prev > 0.0 {
                assert!(p < p_prev, "delay {q} below target, p' rose");
                falls += 1;
            }
            q_prev = q;
            checked += 1;
        }
    }
    assert!(
        checked > 100 && rises >= 5 && falls >= 5,
        "{checked} {rises} {falls}"
    );
    let s = b.stats(Instant::from_millis(2_000));
    assert!(s.c.marked > 0 && s.c.dropped_aqm == 0);
    assert_eq!(s.prob_base, 0.0, "the queue drained, p' decayed to zero");
}

/// With p' held at zero (the queue is always empty when an update runs),
/// only the step AQM marks: every ECT(1) packet that waited longer than
/// 1 ms, and none that waited 1 ms or less.
#[test]
fn step_marks_exactly_the_packets_above_one_millisecond() {
    let mut b = Bottleneck::new(DualPi2Config::default(), LINK_BPS);
    let mut id = 0;
    // The first arrival at 0 puts updates at multiples of 16 ms. A burst of
    // n packets starts 2 ms after each and is gone 10 ms later at most.
    // 1250-byte packets take exactly 1 ms at 10 Mbit/s, so some sojourns
    // sit exactly on the threshold; 1000-byte ones take 0.8 ms.
    b.arrive(Instant::ZERO, packet(id, 1250, Ecn::Ect1));
    for round in 0..200u64 {
        let start = Instant::from_millis(16 * round + 2);
        let n = 1 + round % 8;
        let len = if round % 3 == 0 { 1000 } else { 1250 };
        for _ in 0..n {
            id += 1;
            b.arrive(start, packet(id, len, Ecn::Ect1));
        }
        b.run_until(start + ms(12));
    }
    let (mut above, mut at_or_below, mut exactly_one) = (0, 0, 0);
    for (at, p) in &b.sent {
        let s = sojourn(*at, p);
        if s > ms(1) {
            assert_eq!(p.ecn(), Ecn::Ce, "packet {} waited {s:?}", p.id);
            above += 1;
        } else {
            assert_eq!(p.ecn(), Ecn::Ect1, "packet {} waited {s:?}", p.id);
            at_or_below += 1;
            exactly_one += usize::from(s == ms(1));
        }
    }
    assert!(above > 100 && at_or_below > 100 && exactly_one > 50);
    let s = b.stats(Instant::from_millis(3_300));
    assert_eq!(s.prob_base, 0.0);
    assert_eq!(s.step_marks, above as u64);
    assert_eq!((s.c.enqueued_packets, s.l.dropped_aqm), (0, 0));
}

/// A scalable sender in the spirit of DCTCP and TCP Prague: at most `cwnd`
/// packets in flight, paced at cwnd per smoothed RTT; once per round trip
/// it cuts the window by half the smoothed fraction of CE marks echoed
/// (DCTCP's alpha, gain 1/16), and otherwise grows it by one packet per
/// round trip.
struct ScalableSender {
    cwnd: f64,
    alpha: f64,
    srtt: Duration,
    in_flight: usize,
    next_send: Instant,
    /// ACKs and marks in the current round trip, which ends with the ACK
    /// of packet `round_end`.
    acked: usize,
    marked: usize,
    round_end: u64,
}

impl ScalableSender {
    fn new(cwnd: f64, base_rtt: Duration) -> ScalableSender {
        ScalableSender {
            cwnd,
            alpha: 1.0,
            srtt: base_rtt,
            in_flight: 0,
            next_send: Instant::ZERO,
            acked: 0,
            marked: 0,
            round_end: 0,
        }
    }

    fn can_send(&self) -> bool {
        (self.in_flight as f64) < self.cwnd
    }

    fn on_send(&mut self, now: Instant) {
        self.in_flight += 1;
        self.next_send = now + self.srtt.div_f64(self.cwnd);
    }

    /// The ACK of packet `id`, echoing `ce`; `next_id` is the id the next
    /// packet sent will carry.
    fn on_ack(&mut self, id: u64, ce: bool, rtt: Duration, next_id: u64) {
        self.in_flight -= 1;
        self.srtt = (self.srtt * 7 + rtt) / 8;
        self.acked += 1;
        self.marked += usize::from(ce);
        if !ce {
            self.cwnd += 1.0 / self.cwnd;
        }
        if id >= self.round_end {
            let frac = self.marked as f64 / self.acked as f64;
            self.alpha += (frac - self.alpha) / 16.0;
            if self.marked > 0 {
                self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(2.0);
            }
            (self.acked, self.marked, self.round_end) = (0, 0, next_id);
        }
    }
}

#[test]
fn responsive_l4s_traffic_stays_in_the_l_queue_around_the_step() {
    let mut b = Bottleneck::new(DualPi2Config::default(), LINK_BPS);
    // 20 ms of base RTT (all of it on the return path): the path holds
    // about 17 packets; the window starts at 40, far above, so the link is
    // overloaded until the marks take hold.
    let base_rtt = ms(20);
    let mut s = ScalableSender::new(40.0, base_rtt);
    // (ACK arrival, packet id, CE echoed, send time), in arrival order.
    let mut acks: VecDeque<(Instant, u64, bool, Instant)> = VecDeque::new();
    let mut send_times: VecDeque<Instant> = VecDeque::new();
    let (mut next_id, mut seen) = (0u64, 0);
    let mut sojourns = Vec::new();
    let end = Instant::from_millis(10_000);
    loop {
        // The next event: an ACK, a paced send, or a transmission start.
        let t_ack = acks.front().map(|a| a.0);
        let t_send = s.can_send().then_some(s.next_send);
        let t_tx = (!b.q.is_empty()).then_some(b.free_at);
        let Some(t) = [t_ack, t_send, t_tx].into_iter().flatten().min() else {
            break;
        };
        if t >= end {
            break;
        }
        b.run_until(t);
        for (at, p) in &b.sent[seen..] {
            let tx = Duration::from_nanos(p.len() as u64 * 8 * 1_000_000_000 / LINK_BPS);
            let sent_at = send_times.pop_front().unwrap();
            acks.push_back((*at + tx + base_rtt, p.id, p.ecn() == Ecn::Ce, sent_at));
            if *at >= Instant::from_millis(2_000) {
                sojourns.push(sojourn(*at, p));
            }
        }
        seen = b.sent.len();
        if t_ack == Some(t) {
            let (at, id, ce, sent_at) = acks.pop_front().unwrap();
            s.on_ack(id, ce, at - sent_at, next_id);
        } else if t_send == Some(t) {
            b.arrive(t, packet(next_id, 1500, Ecn::Ect1));
            send_times.push_back(t);
            next_id += 1;
            s.on_send(t);
        }
    }
    let stats = b.stats(end);
    // Judged after a 2 s start-up, from the sojourns of the packets sent.
    let mean = sojourns.iter().sum::<Duration>() / sojourns.len() as u32;
    let p99 = percentile(sojourns.clone(), 0.99);
    let utilization = (sojourns.len() * 1500 * 8) as f64 / (LINK_BPS as f64 * 8.0);
    assert_eq!(
        stats.c.enqueued_packets, 0,
        "everything went to the L queue"
    );
    assert_eq!(stats.l.dropped_aqm + stats.l.dropped_overflow, 0, "no loss");
    assert!(stats.step_marks > 0 && stats.prob_base == 0.0);
    assert!(
        mean >= Duration::from_micros(500) && mean <= ms(2),
        "mean sojourn {mean:?}"
    );
    assert!(p99 <= ms(5), "p99 sojourn {p99:?}");
    assert!(utilization > 0.85, "utilization {utilization}");
    println!("L4S: mean sojourn {mean:?}, p99 {p99:?}, utilization {utilization:.3}");
}

/// Unresponsive traffic at a constant 12 Mbit/s into the 10 Mbit/s link;
/// returns the bottleneck after 10 s and the sojourns of the last 5 s.
fn constant_overload(ecn: Ecn) -> (Bottleneck, Vec<Duration>) {
    let mut b = Bottleneck::new(DualPi2Config::default(), LINK_BPS);
    let every = Duration::from_micros(1_000);
    for i in 0..10_000u64 {
        b.arrive(Instant::ZERO + every * i as u32, packet(i, 1500, ecn));
    }
    let tail = b
        .sent
        .iter()
        .filter(|(at, _)| *at >= Instant::from_millis(5_000))
        .map(|(at, p)| sojourn(*at, p))
        .collect();
    (b, tail)
}

#[test]
fn classic_overload_converges_to_the_target_delay() {
    let (mut b, tail) = constant_overload(Ecn::NotEct);
    let mean = tail.iter().sum::<Duration>() / tail.len() as u32;
    let s = b.stats(Instant::from_millis(10_000));
    assert_eq!(s.l.enqueued_packets, 0);
    assert!(
        mean >= ms(12) && mean <= ms(18),
        "mean classic sojourn {mean:?}"
    );
    // An unresponsive 12 Mbit/s flow through 10 Mbit/s needs p_C = 1/6,
    // hence p' = sqrt(1/6) = 0.41, short of overload (0.5 at k = 2).
    let dropped = s.c.dropped_aqm as f64 / s.c.enqueued_packets as f64;
    assert!(
        (dropped - 1.0 / 6.0).abs() < 0.03,
        "drop fraction {dropped}"
    );
    assert!(
        (s.prob_base - (1.0f64 / 6.0).sqrt()).abs() < 0.1,
        "p' {}",
        s.prob_base
    );
    assert_eq!(s.c.dropped_overflow, 0);
    println!(
        "classic: mean sojourn {mean:?}, drop fraction {dropped:.3}, p' {:.3}",
        s.prob_base
    );
}

#[test]
fn unresponsive_l4s_overload_falls_back_to_classic_drops() {
    let (mut b, tail) = constant_overload(Ecn::Ect1);
    let mean = tail.iter().sum::<Duration>() / tail.len() as u32;
    let s = b.stats(Instant::from_millis(10_000));
    assert_eq!(s.c.enqueued_packets, 0);
    // Marks cannot slow this sender: p' climbs to 1/k, where the L queue
    // starts to be dropped like a classic one (RFC 9332 §4.2.3), and hovers
    // there, dropping the 1/6 of the traffic the link cannot carry; the
    // delay is held near target instead of growing to the buffer limit.
    assert!((s.prob_base - 0.5).abs() < 0.05, "p' {}", s.prob_base);
    let dropped = s.l.dropped_aqm as f64 / s.l.enqueued_packets as f64;
    assert!(
        (dropped - 1.0 / 6.0).abs() < 0.03,
        "drop fraction {dropped}"
    );
    assert_eq!(s.l.dropped_overflow, 0);
    assert!(mean >= ms(10) && mean <= ms(20), "mean sojourn {mean:?}");
    println!(
        "L4S overload: mean sojourn {mean:?}, drop fraction {dropped:.3}, p' {:.3}",
        s.prob_base
    );
    let late = b
        .sent
        .iter()
        .filter(|(at, _)| *at >= Instant::from_millis(5_000));
    assert!(late.clone().count() > 4_000);
    assert!(
        late.into_iter().all(|(_, p)| p.ecn() == Ecn::Ce),
        "overload marks or drops all"
    );
}

#[test]
fn mixed_traffic_both_served_and_never_reordered() {
    let mut b = Bottleneck::new(DualPi2Config::default(), LINK_BPS);
    // Unresponsive ECT(1) at the full link rate plus Not-ECT at 5 Mbit/s:
    // both queues stay backlogged.
    let mut arrivals: Vec<(Instant, u64, Ecn)> = Vec::new();
    for i in 0..8_333u64 {
        arrivals.push((Instant::from_micros(1_200 * i), 2 * i, Ecn::Ect1));
    }
    for i in 0..4_166u64 {
        arrivals.push((
            Instant::from_micros(2_400 * i + 600),
            2 * i + 1,
            Ecn::NotEct,
        ));
    }
    arrivals.sort_by_key(|(t, id, _)| (*t, *id));
    for (t, id, ecn) in arrivals {
        b.arrive(t, packet(id, 1500, ecn));
    }
    let end = Instant::from_millis(10_000);
    b.run_until(end);
    let s = b.stats(end);
    let (l_bytes, c_bytes) = (s.l.dequeued_bytes as f64, s.c.dequeued_bytes as f64);
    let c_share = c_bytes / (l_bytes + c_bytes);
    assert!(c_share >= 0.09, "classic share {c_share}");
    assert!(
        l_bytes > 0.5 * (l_bytes + c_bytes),
        "L share {}",
        1.0 - c_share
    );
    // Within each kind, departures keep arrival order.
    for parity in [0, 1] {
        let ids: Vec<u64> = b
            .sent
            .iter()
            .map(|(_, p)| p.id)
            .filter(|id| id % 2 == parity)
            .collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "reordered (parity {parity})"
        );
    }
    println!("mixed: classic share {c_share:.3}, p' {:.3}", s.prob_base);
}
