//! A phone that connects while its Wi-Fi is stalled (associated, passing
//! nothing), racing its two access paths as Happy Eyeballs races
//! addresses (RFC 8305's connection attempt delay): it starts its
//! handshake over Wi-Fi, the path it prefers; if that attempt has not
//! connected within the attempt delay (or failed sooner), it starts a
//! second, independent attempt over cellular. The first attempt to
//! connect wins and downloads; the other is abandoned at once, sending
//! nothing more, so all it can leave at the server is a half-open
//! handshake that the server's own timeouts remove.
//!
//! The two attempts are two connections, each a [`BriskFlow`] of its own
//! (its own client and server endpoints, the same keys): the race is the
//! client's business, above the transport, as in `brisk-io`. A datagram
//! takes the path of the attempt that sent it or that it answers. A run
//! is a pure function of its settings and seed.

use crate::engine::flow_addrs;
use crate::flows::brisk::{BriskFlow, BriskWorkload};
use crate::flows::{End, FlowApp};
use crate::scenario::IpFamily;
use crate::two_path::{full_size_round_trip, phone_config, second_address};
use brisk_netmodel::{Bottleneck, BottleneckOutput, Direction, Network, Packet};
use brisk_time::Instant;
use std::time::Duration;

/// The attempt delay Happy Eyeballs recommends (RFC 8305, section 5):
/// long enough for a healthy path's handshake (most round trips are well
/// under it), short enough that a user barely notices the wait.
pub const DEFAULT_ATTEMPT_DELAY: Duration = Duration::from_millis(250);

/// One run: the two paths and the download.
#[derive(Debug, Clone)]
pub struct RaceRun {
    /// The path the phone prefers (its Wi-Fi).
    pub first: Network,
    /// Its other path (cellular).
    pub second: Network,
    /// How long the first attempt has alone before the second starts.
    /// A client that does not race but falls back once its connect call
    /// times out is this with the call's timeout.
    pub attempt_delay: Duration,
    pub ip: IpFamily,
    pub seed: u64,
    /// Bytes the phone downloads, each checked.
    pub bytes: u64,
    /// Virtual time the run may take at most.
    pub duration: Duration,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct RaceOutcome {
    /// When each path's attempt started (`None`: never).
    pub started: [Option<Instant>; 2],
    /// The path whose attempt connected first, and when.
    pub winner: Option<(usize, Instant)>,
    /// When the first response byte reached the phone's application.
    pub first_byte_at: Option<Instant>,
    /// When the last byte did.
    pub completed_at: Option<Instant>,
    /// Bytes read in order, and how many of them differ from what the
    /// server wrote.
    pub delivered_bytes: u64,
    pub corrupt_bytes: u64,
    /// Datagrams of the abandoned attempt that reached the server at all
    /// (zero: the server never heard of it).
    pub loser_datagrams_at_server: u64,
    /// Each path's round trip of one full-size packet each way.
    pub full_size_rtts: [Duration; 2],
}

impl RaceOutcome {
    /// The phone's wait for its first response byte, from the moment it
    /// started to connect.
    pub fn time_to_first_byte(&self) -> Option<Duration> {
        Some(self.first_byte_at? - Instant::ZERO)
    }

    /// Whether every byte arrived, none corrupt.
    pub fn intact(&self, bytes: u64) -> bool {
        self.completed_at.is_some() && self.delivered_bytes == bytes && self.corrupt_bytes == 0
    }
}

/// One attempt: its flow, and what its datagrams did.
struct Attempt {
    flow: BriskFlow,
    at_server: u64,
}

/// Runs the race and the download.
pub fn run_race(run: &RaceRun) -> RaceOutcome {
    let end = Instant::ZERO + run.duration;
    let mut links = [
        Bottleneck::new(&run.first, run.seed),
        Bottleneck::new(&run.second, run.seed ^ 0x2d5e_c0de),
    ];
    let mut attempts: [Option<Attempt>; 2] = [Some(attempt(run, 0, Instant::ZERO)), None];
    let mut out = RaceOutcome {
        started: [Some(Instant::ZERO), None],
        winner: None,
        first_byte_at: None,
        completed_at: None,
        delivered_bytes: 0,
        corrupt_bytes: 0,
        loser_datagrams_at_server: 0,
        full_size_rtts: [
            full_size_round_trip(&links[0]),
            full_size_round_trip(&links[1]),
        ],
    };
    let mut abandoned: Option<Attempt> = None;
    let mut next_id = 0;
    let mut now = Instant::ZERO;
    loop {
        // The second attempt starts when the first has had its delay, or
        // at once if the first failed.
        if out.winner.is_none() && attempts[1].is_none() {
            let failed = attempts[0].as_ref().is_some_and(|a| a.flow.failed());
            if failed || now >= Instant::ZERO + run.attempt_delay {
                attempts[1] = Some(attempt(run, 1, now));
                out.started[1] = Some(now);
            }
        }
        for a in attempts.iter_mut().flatten() {
            if a.flow.poll_timeout().is_some_and(|t| t <= now) {
                a.flow.handle_timeout(now);
            }
        }
        for link in &mut links {
            for dir in Direction::BOTH {
                if link.poll_timeout(dir).is_some_and(|t| t <= now) {
                    link.handle_timeout(now, dir);
                }
            }
        }
        drain(&mut links, &mut attempts, &mut next_id, now, &mut out);
        // The first attempt to connect wins; the other is dropped, sending
        // nothing more.
        if out.winner.is_none() {
            for path in 0..2 {
                let connected = attempts[path].as_ref().and_then(|a| a.flow.connected_at());
                if let Some(at) = connected {
                    out.winner = Some((path, at));
                    abandoned = attempts[1 - path].take();
                    break;
                }
            }
        }
        if let Some((path, _)) = out.winner {
            let flow = &attempts[path].as_ref().expect("the winner runs").flow;
            if flow.delivered_bytes() >= run.bytes {
                break;
            }
        }
        let links_next = links
            .iter()
            .flat_map(|l| Direction::BOTH.map(|d| l.poll_timeout(d)));
        let flows_next = attempts.iter().flatten().map(|a| a.flow.poll_timeout());
        let second_due = (out.winner.is_none() && attempts[1].is_none())
            .then_some(Instant::ZERO + run.attempt_delay);
        let Some(t) = links_next
            .chain(flows_next)
            .chain([second_due])
            .flatten()
            .min()
            .filter(|t| *t <= end)
        else {
            break;
        };
        now = t.max(now);
    }
    out.loser_datagrams_at_server = abandoned.as_ref().map_or(0, |a| a.at_server);
    if let Some((path, _)) = out.winner {
        let flow = &attempts[path].as_ref().expect("the winner runs").flow;
        let transport = flow.report().transport.unwrap_or_default();
        out.completed_at = transport.completed_at;
        out.delivered_bytes = flow.delivered_bytes();
        out.corrupt_bytes = transport.integrity.corrupt_bytes;
    }
    out
}

/// The attempt over `path`, starting at `start`.
fn attempt(run: &RaceRun, path: usize, start: Instant) -> Attempt {
    let mut addrs = flow_addrs(run.ip, 0);
    if path == 1 {
        addrs.sender = second_address(run.ip);
    }
    let config = phone_config(
        run.ip,
        run.seed,
        addrs,
        start,
        Instant::ZERO + run.duration,
        BriskWorkload::Download { bytes: run.bytes },
    );
    Attempt {
        flow: BriskFlow::new(config),
        at_server: 0,
    }
}

/// Hands each attempt's datagrams to its path and delivers what the
/// paths have, until neither has more.
fn drain(
    links: &mut [Bottleneck; 2],
    attempts: &mut [Option<Attempt>; 2],
    next_id: &mut u64,
    now: Instant,
    out: &mut RaceOutcome,
) {
    loop {
        for (path, slot) in attempts.iter_mut().enumerate() {
            let Some(a) = slot else { continue };
            while let Some((end, datagram)) = a.flow.poll_transmit(now) {
                *next_id += 1;
                // A malformed datagram is lost, as a NIC would drop it.
                let Ok(packet) = Packet::new(*next_id, now, datagram) else {
                    continue;
                };
                let dir = match end {
                    End::Sender => Direction::Down,
                    End::Receiver => Direction::Up,
                };
                links[path].handle_packet(now, dir, packet);
            }
        }
        let mut delivered = false;
        for (path, link) in links.iter_mut().enumerate() {
            for dir in Direction::BOTH {
                while let Some(o) = link.poll(dir, &mut ()) {
                    let BottleneckOutput::Delivered { at, packet } = o else {
                        continue;
                    };
                    // An abandoned attempt's datagrams still in flight
                    // arrive nowhere that answers.
                    let Some(a) = attempts[path].as_mut() else {
                        continue;
                    };
                    delivered = true;
                    let end = match dir {
                        Direction::Down => {
                            a.at_server += 1;
                            End::Receiver
                        }
                        Direction::Up => End::Sender,
                    };
                    let before = a.flow.delivered_bytes();
                    a.flow.handle_datagram(at, end, &packet.data);
                    if before == 0 && a.flow.delivered_bytes() > 0 {
                        out.first_byte_at.get_or_insert(at);
                    }
                    a.flow.recycle(packet.data);
                }
            }
        }
        if !delivered {
            return;
        }
    }
}
