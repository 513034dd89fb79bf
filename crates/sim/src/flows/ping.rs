//! A ping-like probe: small requests at a fixed interval, echoed at once by
//! the receiver. It measures the round trip a user's interactive traffic
//! would see while other flows load the bottleneck. Each probe leaves at a
//! random moment of its interval ([`SendJitter`]), so the probes sample
//! the queue at all phases of other traffic rather than one.

use super::send_clock::{SendClock, SendJitter};
use super::{AppReport, End, FlowAddrs, FlowApp, stamp};
use brisk_time::Instant;
use brisk_wire::{Ecn, ip};
use std::collections::VecDeque;
use std::time::Duration;

#[derive(Debug)]
pub struct Ping {
    addrs: FlowAddrs,
    ecn: Ecn,
    payload_len: usize,
    interval: Duration,
    stop: Instant,
    clock: SendClock,
    seq: u64,
    /// Echo replies waiting to leave the receiver.
    echoes: VecDeque<Vec<u8>>,
    answered: u64,
    report: AppReport,
}

impl Ping {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        addrs: FlowAddrs,
        interval: Duration,
        size: usize,
        header_len: usize,
        ecn: Ecn,
        start: Instant,
        stop: Instant,
        jitter: SendJitter,
    ) -> Self {
        let interval = interval.max(Duration::from_micros(1));
        Ping {
            addrs,
            ecn,
            payload_len: size.saturating_sub(header_len).max(stamp::LEN),
            interval,
            stop,
            clock: SendClock::new(start, interval, jitter),
            seq: 0,
            echoes: VecDeque::new(),
            answered: 0,
            report: AppReport::default(),
        }
    }
}

impl FlowApp for Ping {
    fn handle_datagram(&mut self, now: Instant, end: End, datagram: &[u8]) {
        let Ok((from, to, _, payload)) = ip::parse_udp(datagram) else {
            return;
        };
        match end {
            End::Receiver => {
                self.report.delivered_bytes += payload.len() as u64;
                if let Ok(echo) = ip::udp_datagram(to, from, self.ecn, payload) {
                    self.echoes.push_back(echo);
                }
            }
            End::Sender => {
                if let Some((_, sent)) = stamp::read(payload) {
                    self.answered += 1;
                    self.report.rtt_samples.push((now, now - sent));
                }
            }
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(End, Vec<u8>)> {
        if let Some(echo) = self.echoes.pop_front() {
            return Some((End::Receiver, echo));
        }
        if now < self.clock.next() || self.clock.next() >= self.stop {
            return None;
        }
        let mut payload = vec![0u8; self.payload_len];
        stamp::write(&mut payload, self.seq, now);
        self.seq += 1;
        let nominal = self.clock.nominal() + self.interval;
        self.clock.set_nominal(nominal);
        self.report.sent_bytes += payload.len() as u64;
        ip::udp_datagram(self.addrs.sender, self.addrs.receiver, self.ecn, &payload)
            .ok()
            .map(|d| (End::Sender, d))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (self.clock.next() < self.stop).then_some(self.clock.next())
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn report(&self) -> AppReport {
        AppReport {
            unanswered: self.seq - self.answered,
            ..self.report.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_measure_round_trip_on_both_families() {
        for (s, r) in [
            ("10.0.0.1:7", "10.0.1.1:7"),
            ("[2001:db8::1]:7", "[2001:db8:1::1]:7"),
        ] {
            let addrs = FlowAddrs {
                sender: s.parse().unwrap(),
                receiver: r.parse().unwrap(),
            };
            let header = if addrs.sender.is_ipv4() { 28 } else { 48 };
            let mut p = Ping::new(
                addrs,
                Duration::from_millis(10),
                84,
                header,
                Ecn::NotEct,
                Instant::ZERO,
                Instant::from_millis(15),
                SendJitter {
                    max: Some(Duration::ZERO),
                    rng: brisk_netmodel::rng(1, 1),
                },
            );
            let (end, req) = p.poll_transmit(Instant::ZERO).unwrap();
            assert_eq!((end, req.len()), (End::Sender, 84));
            p.handle_datagram(Instant::from_millis(5), End::Receiver, &req);
            let (end, echo) = p.poll_transmit(Instant::from_millis(5)).unwrap();
            assert_eq!(end, End::Receiver);
            p.handle_datagram(Instant::from_millis(9), End::Sender, &echo);
            assert_eq!(p.poll_timeout(), Some(Instant::from_millis(10)));
            let _ = p.poll_transmit(Instant::from_millis(10)).unwrap();
            let r = p.report();
            assert_eq!(
                r.rtt_samples,
                vec![(Instant::from_millis(9), Duration::from_millis(9))]
            );
            assert_eq!(r.unanswered, 1);
        }
    }
}
