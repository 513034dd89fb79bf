//! Flows the router saw, found by their 5-tuple, with what the network did
//! to each direction: the bottleneck's own [`FlowMetrics`] per direction
//! (charged from its link events through [`FlowLedger`]),
//! plus payload byte counts (unique bytes by sequence number for TCP) and
//! TCP round trips measured at the router.
//!
//! A TCP round trip is timed from a data segment leaving its sender (read
//! from the sender's TUN) to the first ACK covering it reaching the sender
//! (written to the sender's TUN); segments sent again are not timed
//! (Karn's rule). Both ends are in namespaces on this host, so the host
//! stacks add microseconds to what the router measures.

use brisk_netmodel::{Direction, FlowLedger, FlowMetrics, Packet};
use brisk_time::Instant;
use brisk_trace::stats::LatencySummary;
use brisk_wire::tcp::TcpPacket;
use brisk_wire::{Ecn, ip};
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// Flows tracked at most; packets of later flows are forwarded but not
/// counted per flow.
pub const FLOW_LIMIT: usize = 4096;
/// TCP segments awaiting an ACK that are timed at most per direction.
const RTT_PENDING_LIMIT: usize = 65_536;

/// A connection as seen from the client's side of the bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnKey {
    pub client: IpAddr,
    pub client_port: u16,
    pub server: IpAddr,
    pub server_port: u16,
    pub protocol: u8,
}

impl ConnKey {
    /// The connection a packet travelling in `dir` belongs to.
    pub fn of(dir: Direction, p: &Packet) -> ConnKey {
        let f = p.flow();
        match dir {
            Direction::Up => ConnKey {
                client: f.src,
                client_port: f.src_port,
                server: f.dst,
                server_port: f.dst_port,
                protocol: f.protocol,
            },
            Direction::Down => ConnKey {
                client: f.dst,
                client_port: f.dst_port,
                server: f.src,
                server_port: f.src_port,
                protocol: f.protocol,
            },
        }
    }
}

/// What a datagram carries above IP, read once.
#[derive(Debug, Clone, Copy, Default)]
struct Transport {
    payload_len: u64,
    /// TCP only: sequence number, ACK number (if ACK is set), SYN.
    tcp: Option<(u32, Option<u32>, bool)>,
}

fn transport(data: &[u8]) -> Transport {
    let Ok(s) = ip::summarize(data) else {
        return Transport::default();
    };
    let body = data.get(s.transport_offset..s.total_len).unwrap_or(&[]);
    match s.flow.protocol {
        6 => match TcpPacket::new_checked(body) {
            Ok(t) => Transport {
                payload_len: t.payload().len() as u64,
                tcp: Some((t.seq_number(), t.ack().then(|| t.ack_number()), t.syn())),
            },
            Err(_) => Transport::default(),
        },
        17 => Transport {
            payload_len: body.len().saturating_sub(8) as u64,
            tcp: None,
        },
        _ => Transport {
            payload_len: body.len() as u64,
            tcp: None,
        },
    }
}

/// A TCP byte stream's sequence space, unwrapped to 64 bits relative to
/// the first byte seen.
#[derive(Debug, Clone, Copy)]
struct SeqSpace {
    base: u32,
    sent_end: u64,
    delivered_end: u64,
}

impl SeqSpace {
    /// `seq` as an offset from `base`, taking the 32-bit value nearest to
    /// the highest offset seen so far.
    fn unwrap(&self, seq: u32) -> u64 {
        let near = self.sent_end;
        let near32 = self.base.wrapping_add(near as u32);
        let delta = seq.wrapping_sub(near32) as i32 as i64;
        (near as i64 + delta).max(0) as u64
    }
}

/// One direction of one flow.
#[derive(Debug, Clone, Default)]
pub struct DirState {
    /// Packets and IP bytes, delays, drops, marks and CE, as the simulator
    /// counts.
    pub metrics: FlowMetrics,
    /// Payload bytes offered and delivered (non-TCP).
    pub payload_sent: u64,
    pub payload_delivered: u64,
    pub first_sent: Option<Instant>,
    pub last_delivered: Option<Instant>,
    /// TCP round trips of this direction's data.
    pub rtt: LatencySummary,
    seq: Option<SeqSpace>,
    /// Timed segments: (end offset, when it left its sender).
    pending: VecDeque<(u64, Instant)>,
}

impl DirState {
    /// Unique payload bytes offered (TCP: by sequence number).
    pub fn sent_bytes(&self) -> u64 {
        self.seq.map_or(self.payload_sent, |s| s.sent_end)
    }

    /// Unique payload bytes delivered (TCP: by sequence number).
    pub fn delivered_bytes(&self) -> u64 {
        self.seq.map_or(self.payload_delivered, |s| s.delivered_end)
    }
}

/// One flow: both directions.
#[derive(Debug, Clone)]
pub struct FlowEntry {
    pub key: ConnKey,
    /// The direction of the flow's first packet.
    pub initiator: Direction,
    /// Indexed by [`Direction::index`].
    pub dirs: [DirState; 2],
}

impl FlowEntry {
    /// The direction that delivered more bytes: the one data flowed in.
    pub fn data_direction(&self) -> Direction {
        let [down, up] = &self.dirs;
        match down
            .metrics
            .delivered_bytes
            .cmp(&up.metrics.delivered_bytes)
        {
            std::cmp::Ordering::Greater => Direction::Down,
            std::cmp::Ordering::Less => Direction::Up,
            std::cmp::Ordering::Equal => self.initiator,
        }
    }

    pub fn dir(&self, d: Direction) -> &DirState {
        &self.dirs[d.index()]
    }

    fn dir_mut(&mut self, d: Direction) -> &mut DirState {
        &mut self.dirs[d.index()]
    }
}

/// Every flow of a run, in order of first appearance.
#[derive(Debug, Default)]
pub struct FlowTable {
    index: HashMap<ConnKey, usize>,
    flows: Vec<FlowEntry>,
    /// Packets of flows beyond [`FLOW_LIMIT`].
    pub untracked_packets: u64,
}

impl FlowTable {
    pub fn flows(&self) -> &[FlowEntry] {
        &self.flows
    }

    /// A packet entered the link of `dir` at `now`; returns its flow's
    /// index, or `None` past [`FLOW_LIMIT`].
    pub fn on_sent(&mut self, now: Instant, dir: Direction, p: &Packet) -> Option<usize> {
        let key = ConnKey::of(dir, p);
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None if self.flows.len() < FLOW_LIMIT => {
                self.flows.push(FlowEntry {
                    key,
                    initiator: dir,
                    dirs: Default::default(),
                });
                self.index.insert(key, self.flows.len() - 1);
                self.flows.len() - 1
            }
            None => {
                self.untracked_packets += 1;
                return None;
            }
        };
        let t = transport(&p.data);
        let d = self.flows[i].dir_mut(dir);
        d.metrics.sent_packets += 1;
        d.metrics.sent_bytes += p.len() as u64;
        d.payload_sent += t.payload_len;
        d.first_sent.get_or_insert(now);
        if let Some((seq, _, syn)) = t.tcp {
            let start = if syn { seq.wrapping_add(1) } else { seq };
            let s = d.seq.get_or_insert(SeqSpace {
                base: start,
                sent_end: 0,
                delivered_end: 0,
            });
            let begin = s.unwrap(seq.wrapping_add(u32::from(syn)));
            let end = begin + t.payload_len;
            if t.payload_len > 0 {
                let prev_end = s.sent_end;
                if begin < prev_end {
                    // Bytes sent before: segments ending in them are no
                    // longer timed (Karn).
                    let hi = end.min(prev_end);
                    d.pending.retain(|(e, _)| !(*e > begin && *e <= hi));
                }
                if end > prev_end {
                    if begin >= prev_end && d.pending.len() < RTT_PENDING_LIMIT {
                        d.pending.push_back((end, now));
                    }
                    s.sent_end = end;
                }
            }
        }
        Some(i)
    }

    /// A packet of flow `flow` in `dir` reached its far end at `now`.
    pub fn on_delivered(&mut self, now: Instant, dir: Direction, flow: usize, p: &Packet) {
        let Some(f) = self.flows.get_mut(flow) else {
            return;
        };
        let t = transport(&p.data);
        let d = f.dir_mut(dir);
        let ce = p.ecn() == Ecn::Ce;
        d.metrics
            .on_delivered(now, p.len(), ce, now.saturating_duration_since(p.sent_at));
        d.payload_delivered += t.payload_len;
        d.last_delivered = Some(now);
        if let (Some((seq, _, syn)), Some(s)) = (t.tcp, d.seq.as_mut()) {
            let end = s.unwrap(seq.wrapping_add(u32::from(syn))) + t.payload_len;
            s.delivered_end = s.delivered_end.max(end.min(s.sent_end));
        }
        // An ACK reaching the data sender ends the round trips it covers.
        if let Some((_, Some(ack), _)) = t.tcp {
            let back = f.dir_mut(dir.opposite());
            if let Some(s) = back.seq {
                let acked = s.unwrap(ack);
                let mut newest = None;
                while back.pending.front().is_some_and(|(e, _)| *e <= acked) {
                    newest = back.pending.pop_front();
                }
                if let Some((_, sent)) = newest {
                    back.rtt.record(now.saturating_duration_since(sent));
                }
            }
        }
    }
}

/// The bottleneck charges both directions of every tracked flow.
impl FlowLedger for FlowTable {
    fn metrics(&mut self, dir: Direction, flow: usize) -> Option<&mut FlowMetrics> {
        self.flows
            .get_mut(flow)
            .map(|f| &mut f.dir_mut(dir).metrics)
    }
}
