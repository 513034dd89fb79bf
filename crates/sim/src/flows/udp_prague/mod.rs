//! `kind = "udp_prague"`: the L4S team's reference UDP Prague controller
//! (the `udp_prague` crate's `PragueCC`, a Rust port of their C++ code) as
//! a peer beside Brisk, built only with the non-default `reference-prague`
//! feature, since the crate includes GPL-2.0-only code.
//!
//! The sender does what the reference's bulk sender loop does: while
//! fewer than the controller's packet window are in flight it sends
//! bursts of up to its packet burst, each packet of its packet size (UDP
//! payload), then waits until the burst's bytes have taken their time at
//! its pacing rate; every ACK goes to `PacketReceived` and `ACKReceived`
//! (and its classic-AQM detector), and a full window with no ACK for a
//! second resets the controller. The receiver keeps its own `PragueCC`
//! for the receiver's counters and answers every data packet at once with
//! an ACK carrying the timestamps and the cumulative received, CE and lost
//! counts, as the reference's classic ACK does. Packets are real IP/UDP
//! datagrams with the controller's ECN codepoint; the payload layout is
//! this module's own (a type byte and big-endian fields), not the
//! reference's bytes.
//!
//! The controller reads the process clock itself; [`clock`] gives it the
//! simulator's time.

mod clock;

use super::{AppReport, End, FlowAddrs, FlowApp};
use brisk_time::Instant;
use brisk_wire::{Ecn, ip};
use std::collections::VecDeque;
use std::time::Duration;
use udp_prague::congestion::ClassicAqmObservation;
use udp_prague::{PragueCC, count_tp, ecn_tp, time_tp};

/// The reference sender's wait for an ACK with a full window before it
/// resets the controller.
const ACK_TIMEOUT: Duration = Duration::from_secs(1);
const DATA: u8 = 1;
const ACK: u8 = 2;
/// Type, sequence number, timestamp, echoed timestamp.
const DATA_HEADER: usize = 13;
/// Type, timestamp, echoed timestamp, received, CE, lost, L4S error.
const ACK_LEN: usize = 22;

/// Why a `udp_prague` flow cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error(
        "the udp_prague controller reads the process clock, and this build cannot give it \
         the simulator's (clock_gettime is not interposed)"
    )]
    NoVirtualClock,
}

/// Both ends of a reference UDP Prague bulk transfer.
pub struct UdpPragueFlow {
    addrs: FlowAddrs,
    start: Instant,
    stop: Instant,
    sender: Option<PragueCC>,
    receiver: Option<PragueCC>,
    seq: count_tp,
    inflight: count_tp,
    pacing_rate: u64,
    window: count_tp,
    burst: count_tp,
    packet_size: u64,
    next_send: Instant,
    /// When the sender last heard an ACK or started its window.
    last_progress: Instant,
    min_rtt_us: time_tp,
    out: VecDeque<(End, Vec<u8>)>,
    report: AppReport,
    error: Option<ReferenceError>,
}

impl UdpPragueFlow {
    pub fn new(addrs: FlowAddrs, start: Instant, stop: Instant) -> Self {
        UdpPragueFlow {
            addrs,
            start,
            stop,
            sender: None,
            receiver: None,
            seq: 0,
            inflight: 0,
            pacing_rate: 0,
            window: 0,
            burst: 0,
            packet_size: 0,
            next_send: start,
            last_progress: start,
            min_rtt_us: 0,
            out: VecDeque::new(),
            report: AppReport::default(),
            error: (!clock::is_virtual()).then_some(ReferenceError::NoVirtualClock),
        }
    }

    /// Why the flow did not run, if it did not.
    pub fn error(&self) -> Option<&ReferenceError> {
        self.error.as_ref()
    }

    fn started(&self, now: Instant) -> bool {
        self.error.is_none() && now >= self.start
    }

    /// Creates both controllers at the flow's start, as the two programs
    /// start, and reads the sender's first advice.
    fn start_if_due(&mut self, now: Instant) {
        if self.sender.is_some() || !self.started(now) {
            return;
        }
        clock::at(now, || {
            let mut cc = PragueCC::default();
            self.receiver = Some(PragueCC::default());
            let advice = cc.bulk_advice();
            self.sender = Some(cc);
            self.take_advice(advice);
        });
        self.next_send = now;
        self.last_progress = now;
    }

    fn take_advice(&mut self, a: udp_prague::PragueRateAdvice) {
        self.pacing_rate = a.pacing_rate_bytes_per_sec.max(1);
        self.window = a.packet_window;
        self.burst = a.packet_burst;
        self.packet_size = a.packet_size_bytes;
    }

    /// Sends what the window, the burst and the pacing allow at `now`.
    fn send_due(&mut self, now: Instant) {
        if now >= self.stop || now < self.next_send {
            return;
        }
        let Some(cc) = self.sender.as_mut() else {
            return;
        };
        let mut in_burst: count_tp = 0;
        while self.inflight < self.window && in_burst < self.burst {
            let (mut ts, mut ets, mut ecn) = (0, 0, ecn_tp::ecn_not_ect);
            clock::at(now, || cc.GetTimeInfo(&mut ts, &mut ets, &mut ecn));
            self.seq = self.seq.wrapping_add(1);
            let len = (self.packet_size as usize).max(DATA_HEADER);
            let mut payload = vec![0u8; len];
            payload[0] = DATA;
            payload[1..5].copy_from_slice(&self.seq.to_be_bytes());
            payload[5..9].copy_from_slice(&ts.to_be_bytes());
            payload[9..13].copy_from_slice(&ets.to_be_bytes());
            if let Ok(d) = ip::udp_datagram(
                self.addrs.sender,
                self.addrs.receiver,
                to_ecn(ecn),
                &payload,
            ) {
                self.report.sent_bytes += len as u64;
                self.out.push_back((End::Sender, d));
            }
            in_burst += 1;
            self.inflight = self.inflight.wrapping_add(1);
        }
        if in_burst > 0 {
            let bytes = self.packet_size * in_burst as u64;
            let gap_ns = (u128::from(bytes) * 1_000_000_000 / u128::from(self.pacing_rate)).max(1);
            self.next_send = now + Duration::from_nanos(u64::try_from(gap_ns).unwrap_or(u64::MAX));
        }
    }

    /// A full window with no ACK for [`ACK_TIMEOUT`]: reset, as the
    /// reference sender does.
    fn time_out_if_due(&mut self, now: Instant) {
        if self.inflight < self.window || now < self.last_progress + ACK_TIMEOUT {
            return;
        }
        let Some(cc) = self.sender.as_mut() else {
            return;
        };
        let advice = clock::at(now, || {
            cc.ResetCCInfo();
            cc.bulk_advice()
        });
        self.take_advice(advice);
        self.inflight = 0;
        self.next_send = now;
        self.last_progress = now;
    }

    fn on_data(&mut self, now: Instant, ecn: Ecn, payload: &[u8]) {
        let (Some(seq), Some(ts), Some(ets)) =
            (field(payload, 1), field(payload, 5), field(payload, 9))
        else {
            return;
        };
        let Some(cc) = self.receiver.as_mut() else {
            return;
        };
        self.report.delivered_bytes += payload.len() as u64;
        let mut ack = [0u8; ACK_LEN];
        let ack_ecn = clock::at(now, || {
            cc.PacketReceived(ts, ets);
            cc.DataReceivedSequence(from_ecn(ecn), seq);
            let (mut ts, mut ets, mut ecn) = (0, 0, ecn_tp::ecn_not_ect);
            cc.GetTimeInfo(&mut ts, &mut ets, &mut ecn);
            let (mut received, mut ce, mut lost, mut error) = (0, 0, 0, false);
            cc.GetACKInfo(&mut received, &mut ce, &mut lost, &mut error);
            ack[0] = ACK;
            for (i, v) in [ts, ets, received, ce, lost].into_iter().enumerate() {
                ack[1 + 4 * i..5 + 4 * i].copy_from_slice(&v.to_be_bytes());
            }
            ack[21] = u8::from(error);
            ecn
        });
        if let Ok(d) = ip::udp_datagram(
            self.addrs.receiver,
            self.addrs.sender,
            to_ecn(ack_ecn),
            &ack,
        ) {
            self.out.push_back((End::Receiver, d));
        }
    }

    fn on_ack(&mut self, now: Instant, payload: &[u8]) {
        let fields: Option<Vec<i32>> = (0..5).map(|i| field(payload, 1 + 4 * i)).collect();
        let (Some(f), Some(&error)) = (fields, payload.get(21)) else {
            return;
        };
        let [ts, ets, received, ce, lost] = [f[0], f[1], f[2], f[3], f[4]];
        let Some(cc) = self.sender.as_mut() else {
            return;
        };
        let (seq, min_rtt) = (self.seq, &mut self.min_rtt_us);
        let mut inflight = self.inflight;
        let (advice, rtt_us) = clock::at(now, || {
            let before = *cc.GetStatePtr();
            cc.PacketReceived(ts, ets);
            observe_classic_aqm(cc, before, received, ce, lost, min_rtt);
            cc.ACKReceived(received, ce, lost, seq, error != 0, &mut inflight);
            (cc.bulk_advice(), cc.GetStatePtr().m_rtt)
        });
        self.inflight = inflight;
        self.take_advice(advice);
        self.last_progress = now;
        if rtt_us > 0 {
            self.report
                .rtt_samples
                .push((now, Duration::from_micros(rtt_us as u64)));
        }
    }
}

/// Hands one ACK's feedback to the controller's classic-AQM detector, as
/// the reference sender does before `ACKReceived`: the latest and minimum
/// RTT and what the ACK newly acknowledged and marked.
fn observe_classic_aqm(
    cc: &mut PragueCC,
    before: udp_prague::PragueState,
    received: count_tp,
    ce: count_tp,
    lost: count_tp,
    min_rtt_us: &mut time_tp,
) {
    let rtt = cc.GetStatePtr().m_rtt;
    let acked = received.wrapping_sub(before.m_packets_received);
    let marked = ce.wrapping_sub(before.m_packets_CE);
    let newly_lost = lost.wrapping_sub(before.m_packets_lost);
    if rtt <= 0 || acked < 0 || marked < 0 || newly_lost < 0 {
        return;
    }
    if *min_rtt_us <= 0 || rtt < *min_rtt_us {
        *min_rtt_us = rtt;
    }
    cc.observe_classic_aqm_ack(ClassicAqmObservation {
        latest_rtt: Duration::from_micros(rtt as u64),
        min_rtt: Duration::from_micros((*min_rtt_us).max(1) as u64),
        ce_seen: marked > 0,
        ce_delta: marked as u64,
        acked_delta: acked as u64,
        app_limited: false,
        congestion_avoidance_stable: before.m_cc_state
            == udp_prague::congestion::cs_tp::cs_cong_avoid,
        ..ClassicAqmObservation::default()
    });
}

/// The big-endian `i32` at `at`, if the payload holds it.
fn field(payload: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(
        payload.get(at..at + 4)?.try_into().ok()?,
    ))
}

fn to_ecn(e: ecn_tp) -> Ecn {
    match e {
        ecn_tp::ecn_not_ect => Ecn::NotEct,
        ecn_tp::ecn_l4s_id => Ecn::Ect1,
        ecn_tp::ecn_ect0 => Ecn::Ect0,
        ecn_tp::ecn_ce => Ecn::Ce,
    }
}

fn from_ecn(e: Ecn) -> ecn_tp {
    match e {
        Ecn::NotEct => ecn_tp::ecn_not_ect,
        Ecn::Ect1 => ecn_tp::ecn_l4s_id,
        Ecn::Ect0 => ecn_tp::ecn_ect0,
        Ecn::Ce => ecn_tp::ecn_ce,
    }
}

impl FlowApp for UdpPragueFlow {
    fn handle_datagram(&mut self, now: Instant, end: End, datagram: &[u8]) {
        let Ok((_, _, ecn, payload)) = ip::parse_udp_trusted(datagram) else {
            return;
        };
        match (end, payload.first()) {
            (End::Receiver, Some(&DATA)) => self.on_data(now, ecn, payload),
            (End::Sender, Some(&ACK)) => {
                self.on_ack(now, payload);
                self.send_due(now);
            }
            _ => {}
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(End, Vec<u8>)> {
        if self.out.is_empty() {
            self.start_if_due(now);
            self.send_due(now);
        }
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.error.is_some() {
            return None;
        }
        if self.sender.is_none() {
            return Some(self.start);
        }
        let due = if self.inflight < self.window {
            self.next_send
        } else {
            self.last_progress + ACK_TIMEOUT
        };
        (due < self.stop).then_some(due)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.start_if_due(now);
        self.time_out_if_due(now);
        self.send_due(now);
    }

    fn report(&self) -> AppReport {
        self.report.clone()
    }
}
