//! Constant-rate UDP, optionally switched on and off: the simplest load, and
//! the one that shows a queue's standing delay and loss without a
//! congestion controller in the way.

use super::send_clock::{SendClock, SendJitter};
use super::template::StampedDatagram;
use super::{AppReport, End, FlowAddrs, FlowApp, stamp};
use brisk_netmodel::packet::HeaderMemo;
use brisk_time::Instant;
use brisk_wire::{Ecn, udp};
use std::time::Duration;

/// Buffers a source keeps for reuse: enough to cover the packets in
/// flight between recycling and sending in a saturated run.
const SPARE_BUFFERS: usize = 256;

/// Sends `size`-byte datagrams at `rate_bps` from `start` to `stop`; with
/// `on_off`, only during the on periods of a repeating (on, off) cycle.
/// Each datagram leaves within its slot of the rate's grid, as a host's
/// timer would ([`SendJitter`]).
#[derive(Debug)]
pub struct ConstantRate {
    /// Every datagram is this one, re-stamped; `None` if the addresses
    /// cannot make one (the flow then sends nothing).
    template: Option<StampedDatagram>,
    interval: Duration,
    start: Instant,
    stop: Instant,
    on_off: Option<(Duration, Duration)>,
    clock: SendClock,
    seq: u64,
    report: AppReport,
    /// Buffers of datagrams the network is done with, to send in again.
    spare: Vec<Vec<u8>>,
    /// The receiver's last header read: every datagram repeats it.
    received: HeaderMemo,
}

impl ConstantRate {
    /// `size` is the whole IP datagram; `header_len` the IP + UDP header.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        addrs: FlowAddrs,
        rate_bps: u64,
        size: usize,
        header_len: usize,
        ecn: Ecn,
        start: Instant,
        stop: Instant,
        on_off: Option<(Duration, Duration)>,
        jitter: SendJitter,
    ) -> Self {
        let interval = Duration::from_nanos((size as u64 * 8 * 1_000_000_000) / rate_bps.max(1))
            .max(Duration::from_nanos(1));
        let payload_len = size.saturating_sub(header_len).max(stamp::LEN);
        ConstantRate {
            template: StampedDatagram::new(addrs, ecn, payload_len),
            interval,
            start,
            stop,
            on_off,
            clock: SendClock::new(start, interval, jitter),
            seq: 0,
            report: AppReport::default(),
            spare: Vec::new(),
            received: HeaderMemo::default(),
        }
    }

    /// The first send time at or after `t` that falls in an on period.
    fn align_to_on(&self, t: Instant) -> Instant {
        let Some((on, off)) = self.on_off else {
            return t;
        };
        let cycle = (on + off).as_nanos() as u64;
        let into = (t - self.start).as_nanos() as u64 % cycle.max(1);
        if into < on.as_nanos() as u64 {
            t
        } else {
            t + Duration::from_nanos(cycle - into)
        }
    }
}

impl FlowApp for ConstantRate {
    fn handle_datagram(&mut self, _now: Instant, end: End, datagram: &[u8]) {
        if end == End::Receiver
            && let Some(len) = udp_payload_len(&mut self.received, datagram)
        {
            self.report.delivered_bytes += len as u64;
        }
    }

    /// What it sends and when depend on the clock alone.
    fn answers_datagrams(&self, _end: End) -> bool {
        false
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(End, Vec<u8>)> {
        if now < self.clock.next() || self.clock.next() >= self.stop {
            return None;
        }
        let seq = self.seq;
        self.seq += 1;
        let nominal = self.align_to_on(self.clock.nominal() + self.interval);
        self.clock.set_nominal(nominal);
        let template = self.template.as_ref()?;
        let d = template.stamped_in(self.spare.pop().unwrap_or_default(), seq, now);
        self.report.sent_bytes += template.payload_len() as u64;
        Some((End::Sender, d))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (self.clock.next() < self.stop).then_some(self.clock.next())
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn report(&self) -> AppReport {
        self.report.clone()
    }

    fn recycle(&mut self, datagram: Vec<u8>) {
        // Only this flow's own datagrams come back: the template rewrites
        // their headers and stamp and keeps their payload.
        let own = self
            .template
            .as_ref()
            .is_some_and(|t| datagram.len() == t.len());
        if own && self.spare.len() < SPARE_BUFFERS {
            self.spare.push(datagram);
        }
    }
}

/// The UDP payload length of a datagram with well-formed IP and UDP
/// headers. The checksum is not summed again: the simulated network never
/// corrupts bytes (a hop that rewrites ECN keeps the checksums valid), and
/// reading a payload that went cold in a deep queue took a fifth of the
/// time of a saturated run.
fn udp_payload_len(memo: &mut HeaderMemo, datagram: &[u8]) -> Option<usize> {
    let s = memo.summarize(datagram).ok()?;
    if s.flow.protocol != udp::PROTOCOL {
        return None;
    }
    let u = udp::UdpPacket::new_checked(datagram.get(s.transport_offset..s.total_len)?).ok()?;
    Some(u.len() - udp::HEADER_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::ip;

    /// Sends on the exact grid, so tests can name every send time.
    fn exact() -> SendJitter {
        SendJitter {
            max: Some(Duration::ZERO),
            rng: brisk_netmodel::rng(1, 1),
        }
    }

    fn addrs() -> FlowAddrs {
        FlowAddrs {
            sender: "10.0.0.1:1000".parse().unwrap(),
            receiver: "10.0.1.1:2000".parse().unwrap(),
        }
    }

    fn run(mut f: ConstantRate, until: Instant) -> Vec<Instant> {
        let mut times = Vec::new();
        while let Some(t) = f.poll_timeout().filter(|t| *t < until) {
            while let Some((_, d)) = f.poll_transmit(t) {
                assert_eq!(d.len(), 1000);
                times.push(t);
            }
        }
        times
    }

    #[test]
    fn sends_at_the_configured_rate() {
        // 1000-byte datagrams at 8 Mbit/s: one per millisecond.
        let f = ConstantRate::new(
            addrs(),
            8_000_000,
            1000,
            28,
            Ecn::Ect0,
            Instant::ZERO,
            Instant::from_millis(100),
            None,
            exact(),
        );
        let times = run(f, Instant::from_secs_f64(1.0));
        assert_eq!(times.len(), 100);
        assert_eq!(times[1] - times[0], Duration::from_millis(1));
    }

    #[test]
    fn the_receiver_counts_payload_bytes_of_well_formed_datagrams_only() {
        for (s, r) in [
            ("10.0.0.1:1", "10.0.1.1:2"),
            ("[2001:db8::1]:1", "[2001:db8::2]:2"),
        ] {
            let addrs = FlowAddrs {
                sender: s.parse().unwrap(),
                receiver: r.parse().unwrap(),
            };
            let mut f = ConstantRate::new(
                addrs,
                8_000_000,
                1000,
                if addrs.sender.is_ipv4() { 28 } else { 48 },
                Ecn::Ect1,
                Instant::ZERO,
                Instant::from_millis(10),
                None,
                exact(),
            );
            let (_, d) = f.poll_transmit(Instant::ZERO).unwrap();
            let payload = ip::parse_udp(&d).unwrap().3.len() as u64;
            f.handle_datagram(Instant::ZERO, End::Receiver, &d);
            // Echoed to the sender: not delivered data.
            f.handle_datagram(Instant::ZERO, End::Sender, &d);
            // Cut short, not IP, or not UDP: nothing counted.
            f.handle_datagram(Instant::ZERO, End::Receiver, &d[..d.len() - 1]);
            f.handle_datagram(Instant::ZERO, End::Receiver, &[0x45, 0, 0]);
            let mut tcp = d.clone();
            tcp[if addrs.sender.is_ipv4() { 9 } else { 6 }] = 6;
            f.handle_datagram(Instant::ZERO, End::Receiver, &tcp);
            assert_eq!(f.report().delivered_bytes, payload);
            assert_eq!(f.report().sent_bytes, payload);
        }
    }

    #[test]
    fn jittered_sends_keep_the_rate_and_leave_the_grid() {
        // 8 Mbit/s of 1000-byte datagrams: one per millisecond slot, each
        // anywhere in its slot.
        let f = ConstantRate::new(
            addrs(),
            8_000_000,
            1000,
            28,
            Ecn::NotEct,
            Instant::ZERO,
            Instant::from_millis(1000),
            None,
            SendJitter {
                max: None,
                rng: brisk_netmodel::rng(3, 9),
            },
        );
        let times = run(f, Instant::from_secs_f64(2.0));
        assert!((999..=1000).contains(&times.len()), "{}", times.len());
        let off_grid = times
            .iter()
            .filter(|t| t.as_nanos() % 1_000_000 != 0)
            .count();
        assert!(off_grid > 990, "{off_grid} of {} off the grid", times.len());
        for (k, t) in times.iter().enumerate() {
            assert_eq!(t.as_millis(), k as u64, "send {k} left its slot");
        }
    }

    #[test]
    fn on_off_sends_only_in_on_periods() {
        let period = Some((Duration::from_millis(10), Duration::from_millis(30)));
        let f = ConstantRate::new(
            addrs(),
            8_000_000,
            1000,
            28,
            Ecn::NotEct,
            Instant::ZERO,
            Instant::from_millis(400),
            period,
            exact(),
        );
        let times = run(f, Instant::from_secs_f64(1.0));
        assert_eq!(times.len(), 100);
        assert!(times.iter().all(|t| t.as_millis() % 40 < 10));
    }
}
