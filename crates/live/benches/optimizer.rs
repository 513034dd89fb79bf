//! The live router core carrying bulk TCP on one core with 10,000 tracked
//! connections, alone and with the TCP optimizer at the server's end, in
//! the same run: Gbit/s of TCP payload and packets/s per CPU second spent
//! inside the core, their ratio (the optimizer's cost), and the memory the
//! optimizer takes per tracked connection, idle and with a full buffer,
//! from a counting allocator.
//!
//! The peers are scripted here, in virtual time: 10,000 connections, in
//! groups of 10, open 500 SYNs per 50 µs step (offering SACK, which the
//! optimizer requires); one connection of each of the first 100 groups
//! then moves bulk data (a 256 KB window, less if the window offered to
//! the server is smaller, the client acknowledging
//! every second segment), the other 9,900 stay idle. Only the time inside
//! the router core's calls is counted, so the scripted peers cost nothing
//! in the figures. The router core serves the lab's one client address,
//! so to the optimizer all connections are one subscriber's, told apart
//! by port. The heap per tracked connection is the difference between
//! the runs with and without the optimizer, divided by the connections the
//! optimizer really tracks; the heap per opened connection that the
//! lines of each run print is mostly the router's own per-flow accounting
//! (it counts the first 4,096 flows). Run: `cargo bench -p brisk-live --bench optimizer`
//! (`OPTBENCH_MB=20` for a shorter run).

use brisk_live::router::core::{RouterCore, Side, Transmit};
use brisk_live::router::resolver::Resolver;
use brisk_live::topology::{Addressing, CLIENT_V4, CLIENT_V6, IpMode, SERVER_V4, SERVER_V6};
use brisk_nat64::Nat64Prefix;
use brisk_netmodel::Network;
use brisk_time::Instant;
use brisk_wire::Ecn;
use brisk_wire::ip::{parse_tcp, tcp_datagram};
use brisk_wire::tcp::{TcpFlags, TcpOption, TcpRepr};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

/// Bytes currently allocated by the whole process.
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, keeping [`LIVE_BYTES`] up to date.
struct Counting;

// SAFETY: every call is passed to the system allocator unchanged; only a
// counter is updated beside it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Groups of connections; one of each group moves bulk data.
const SUBSCRIBERS: usize = 1_000;
const CONNECTIONS_PER_SUBSCRIBER: usize = 10;
const ACTIVE: usize = 100;
const MSS: usize = 1_400;
const WINDOW_BYTES: u32 = 256 * 1024;
/// Payload the active connections deliver to their clients per run.
const TARGET_BYTES: u64 = 150_000_000;
/// Payload delivered before the measured part of a bulk run.
const WARM_UP_BYTES: u64 = 20_000_000;
/// The scripted peers act every 50 µs of virtual time.
const STEP: Duration = Duration::from_micros(50);
const CLIENT_ISN: u32 = 100;
const SERVER_ISN: u32 = 5_000;

/// One scripted connection: the server's send state, the client's receive
/// state.
struct Conn {
    client: SocketAddr,
    server: SocketAddr,
    snd_nxt: u32,
    snd_una: u32,
    rcv_nxt: u32,
    unacked_segments: u32,
    /// Repeated acknowledgments of `snd_una` and steps without progress:
    /// the scripted server goes back to `snd_una` after three or 40.
    dup_acks: u32,
    stalled_steps: u32,
    /// The window the client's side last offered the server, bytes (the
    /// optimizer offers no more than its buffers have room for).
    offered: u32,
}

/// The router core and the scripted peers around it.
struct Run {
    core: RouterCore,
    conns: Vec<Conn>,
    by_client: HashMap<SocketAddr, usize>,
    /// Transmits not yet due.
    pending: Vec<Transmit>,
    /// Datagrams the peers send at the next step.
    to_core: Vec<(Side, Vec<u8>)>,
    now: Instant,
    in_core: Duration,
    delivered_bytes: u64,
    core_packets: u64,
}

fn segment(
    from: SocketAddr,
    to: SocketAddr,
    seq: u32,
    ack: u32,
    flags: TcpFlags,
    payload: &[u8],
) -> Vec<u8> {
    let options = if flags.contains(TcpFlags::SYN) {
        // SACK is offered: the optimizer leaves connections without it alone.
        vec![
            TcpOption::Mss(MSS as u16),
            TcpOption::WindowScale(7),
            TcpOption::SackPermitted,
        ]
    } else {
        Vec::new()
    };
    let repr = TcpRepr {
        src_port: from.port(),
        dst_port: to.port(),
        seq_number: seq,
        ack_number: ack,
        flags,
        window: u16::MAX,
        urgent_pointer: 0,
        options,
    };
    tcp_datagram(from.ip(), to.ip(), Ecn::NotEct, &repr, payload).expect("a valid segment")
}

impl Run {
    fn new(v6: bool, optimized: bool) -> Run {
        let text = "duration = \"10s\"\n[link.down]\nrate = \"10Gbit\"\ndelay = \"1ms\"\n\
                    [link.up]\nrate = \"10Gbit\"\ndelay = \"1ms\"\n\
                    [queue.fifo]\nlimit_packets = 100000\n";
        let network = Network::parse(text).expect("the bench network parses");
        let resolver =
            Resolver::new(Nat64Prefix::WELL_KNOWN, Vec::new(), Vec::new()).expect("a resolver");
        let mode = if v6 { IpMode::V6 } else { IpMode::V4 };
        let mut core = RouterCore::new(&network, 1, Addressing::new(mode), None, resolver);
        if optimized {
            // One core serves a whole cell here: the per-subscriber pacing
            // cap is lifted so the link, not the cap, sets the pace.
            core.optimize(brisk_optimizer::Config {
                max_pacing_rate_bps: 10_000_000_000,
                // Room for every active connection's full 4 MB buffer: each
                // connection is offered the whole shared room, so a smaller
                // total overflows and the connections fall back.
                max_total_buffer_bytes: 1 << 30,
                ..brisk_optimizer::Config::default()
            });
        }
        let server_ip = if v6 {
            IpAddr::V6(SERVER_V6)
        } else {
            IpAddr::V4(SERVER_V4)
        };
        let mut conns = Vec::new();
        let mut by_client = HashMap::new();
        // The router serves the lab's one client address: every
        // connection is one subscriber's, told apart by its port.
        let ip = if v6 {
            IpAddr::V6(CLIENT_V6)
        } else {
            IpAddr::V4(CLIENT_V4)
        };
        for s in 0..SUBSCRIBERS {
            for c in 0..CONNECTIONS_PER_SUBSCRIBER {
                let client =
                    SocketAddr::new(ip, (20_000 + s * CONNECTIONS_PER_SUBSCRIBER + c) as u16);
                by_client.insert(client, conns.len());
                conns.push(Conn {
                    client,
                    server: SocketAddr::new(server_ip, 443),
                    snd_nxt: SERVER_ISN + 1,
                    snd_una: SERVER_ISN + 1,
                    rcv_nxt: SERVER_ISN + 1,
                    unacked_segments: 0,
                    dup_acks: 0,
                    stalled_steps: 0,
                    offered: WINDOW_BYTES,
                });
            }
        }
        Run {
            core,
            conns,
            by_client,
            pending: Vec::new(),
            to_core: Vec::new(),
            now: Instant::ZERO,
            in_core: Duration::ZERO,
            delivered_bytes: 0,
            core_packets: 0,
        }
    }

    /// The connection a datagram belongs to, and whether the client sent it.
    fn lookup(&self, src: SocketAddr, dst: SocketAddr) -> Option<usize> {
        self.by_client
            .get(&src)
            .or_else(|| self.by_client.get(&dst))
            .copied()
    }

    /// A peer receives a datagram the core wrote.
    fn receive(&mut self, t: Transmit) {
        let Ok(s) = parse_tcp(&t.packet.data) else {
            return;
        };
        let (src, dst) = (
            SocketAddr::new(s.src, s.tcp.src_port),
            SocketAddr::new(s.dst, s.tcp.dst_port),
        );
        let Some(i) = self.lookup(src, dst) else {
            return;
        };
        let flags = s.tcp.flags;
        let c = &mut self.conns[i];
        match t.to {
            Side::Server if flags.contains(TcpFlags::SYN) => {
                let d = segment(
                    c.server,
                    c.client,
                    SERVER_ISN,
                    CLIENT_ISN + 1,
                    TcpFlags::SYN | TcpFlags::ACK,
                    &[],
                );
                self.to_core.push((Side::Server, d));
            }
            Side::Server => {
                // Both SYNs offer window scale 7.
                c.offered = u32::from(s.tcp.window) << 7;
                if s.tcp.ack_number.wrapping_sub(c.snd_una) as i32 > 0 {
                    c.snd_una = s.tcp.ack_number;
                    c.dup_acks = 0;
                    c.stalled_steps = 0;
                } else if s.tcp.ack_number == c.snd_una && c.snd_nxt != c.snd_una {
                    c.dup_acks += 1;
                    if c.dup_acks == 3 {
                        c.snd_nxt = c.snd_una;
                    }
                }
            }
            Side::Client if flags.contains(TcpFlags::SYN) => {
                let d = segment(
                    c.client,
                    c.server,
                    CLIENT_ISN + 1,
                    SERVER_ISN + 1,
                    TcpFlags::ACK,
                    &[],
                );
                self.to_core.push((Side::Client, d));
            }
            Side::Client => {
                if s.payload.is_empty() {
                    return;
                }
                let in_order = s.tcp.seq_number == c.rcv_nxt;
                if in_order {
                    c.rcv_nxt = c.rcv_nxt.wrapping_add(s.payload.len() as u32);
                    self.delivered_bytes += s.payload.len() as u64;
                    c.unacked_segments += 1;
                }
                if !in_order || c.unacked_segments >= 2 {
                    c.unacked_segments = 0;
                    let d = segment(
                        c.client,
                        c.server,
                        CLIENT_ISN + 1,
                        c.rcv_nxt,
                        TcpFlags::ACK,
                        &[],
                    );
                    self.to_core.push((Side::Client, d));
                }
            }
        }
    }

    /// Advances one step: the peers send, the core runs its timers, and
    /// whatever is due reaches the peers.
    fn step(&mut self, active: usize) {
        self.now += STEP;
        let now = self.now;
        let payload = [0x5a_u8; MSS];
        for c in self
            .conns
            .iter_mut()
            .take(active * CONNECTIONS_PER_SUBSCRIBER)
            .step_by(CONNECTIONS_PER_SUBSCRIBER)
        {
            c.stalled_steps += 1;
            if c.stalled_steps >= 40 {
                c.stalled_steps = 0;
                c.snd_nxt = c.snd_una;
            }
            while c.snd_nxt.wrapping_sub(c.snd_una) + MSS as u32 <= WINDOW_BYTES.min(c.offered) {
                let d = segment(
                    c.server,
                    c.client,
                    c.snd_nxt,
                    CLIENT_ISN + 1,
                    TcpFlags::ACK,
                    &payload,
                );
                c.snd_nxt = c.snd_nxt.wrapping_add(MSS as u32);
                self.to_core.push((Side::Server, d));
            }
        }
        loop {
            let inputs = std::mem::take(&mut self.to_core);
            let started = std::time::Instant::now();
            for (side, d) in inputs {
                self.core.handle_datagram(now, side, d);
                self.core_packets += 1;
            }
            while let Some(t) = self.core.poll_timeout().filter(|&t| t <= now) {
                self.core.handle_timeout(t);
            }
            while let Some(t) = self.core.poll_transmit() {
                self.pending.push(t);
            }
            // Written in the order the core delivered them.
            let (due, later): (Vec<Transmit>, Vec<Transmit>) = std::mem::take(&mut self.pending)
                .into_iter()
                .partition(|t| t.due <= now);
            self.pending = later;
            for t in &due {
                self.core.on_written(now, t);
            }
            self.in_core += started.elapsed();
            if due.is_empty() && self.to_core.is_empty() {
                break;
            }
            for t in due {
                self.receive(t);
            }
        }
    }

    /// Every connection opens, 500 SYNs per step (all 10,000 at once would
    /// overflow the up link's 1,000-packet queue); returns when all
    /// handshakes are through.
    fn open_all(&mut self) {
        let mut syns: Vec<(Side, Vec<u8>)> = self
            .conns
            .iter()
            .map(|c| {
                let d = segment(c.client, c.server, CLIENT_ISN, 0, TcpFlags::SYN, &[]);
                (Side::Client, d)
            })
            .collect();
        while !syns.is_empty() {
            let rest = syns.split_off(syns.len().min(500));
            self.to_core.append(&mut syns);
            syns = rest;
            self.step(0);
        }
        for _ in 0..200 {
            self.step(0);
        }
    }
}

fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// Runs bulk transfer to the target; returns (Gbit/s of payload, packets/s)
/// per second inside the core. The clock starts after [`WARM_UP_BYTES`]
/// are delivered: by then the optimizer's buffers are full, a one-off per
/// connection (the servers fill them in well under a millisecond of
/// virtual time, some 400 MB in all) that would otherwise dominate a short
/// run's figure.
fn bulk(run: &mut Run) -> (f64, f64) {
    run.delivered_bytes = 0;
    while run.delivered_bytes < WARM_UP_BYTES {
        run.step(ACTIVE);
    }
    run.in_core = Duration::ZERO;
    run.core_packets = 0;
    run.delivered_bytes = 0;
    let target = std::env::var("OPTBENCH_MB")
        .ok()
        .and_then(|m| m.parse::<u64>().ok())
        .map_or(TARGET_BYTES, |m| m * 1_000_000);
    while run.delivered_bytes < target {
        run.step(ACTIVE);
    }
    let secs = run.in_core.as_secs_f64();
    (
        run.delivered_bytes as f64 * 8.0 / secs / 1e9,
        run.core_packets as f64 / secs,
    )
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        // `cargo test --benches` only checks that this builds.
        return;
    }
    let opened = SUBSCRIBERS * CONNECTIONS_PER_SUBSCRIBER;
    let mb = std::env::var("OPTBENCH_MB")
        .ok()
        .and_then(|m| m.parse::<u64>().ok())
        .unwrap_or(TARGET_BYTES / 1_000_000);
    println!(
        "router core, one CPU core: {opened} connections opened from the lab's one client \
         address (one subscriber to the optimizer), {ACTIVE} in bulk transfer, \
         {mb} MB of TCP payload per run"
    );
    for v6 in [false, true] {
        let family = if v6 { "IPv6" } else { "IPv4" };
        let mut alone: Option<(f64, isize)> = None;
        for optimized in [false, true] {
            let name = if optimized {
                "router + optimizer"
            } else {
                "router alone"
            };
            let mut run = Run::new(v6, optimized);
            let base = live_bytes();
            run.open_all();
            let idle = live_bytes() - base;
            let tracked = run.core.optimizer().map_or(0, |o| o.connection_count());
            println!(
                "{family} {name:>18}: {:5.1} kB heap per opened connection after the handshakes, \
                 {tracked} connections tracked by the optimizer",
                idle as f64 / opened as f64 / 1e3
            );
            if let Some((_, alone_idle)) = alone
                && optimized
            {
                println!(
                    "{family} optimizer's heap: {:.0} bytes per idle tracked connection \
                     (heap with it minus without, over the {tracked} it tracks)",
                    (idle - alone_idle) as f64 / tracked.max(1) as f64
                );
                // Before the bulk transfer, on connections that stay idle.
                full_buffers(&mut run, family);
            }
            let (gbps, pps) = bulk(&mut run);
            println!(
                "{family} {name:>18}: {gbps:6.2} Gbit/s of payload, {:6.0} kpackets/s through the core",
                pps / 1e3
            );
            if let Some(o) = run.core.optimizer() {
                optimizer_state(&run, o, family);
            }
            match alone {
                Some((alone_gbps, _)) => println!(
                    "{family} optimizer's cost: {:.2}x the router's CPU time per payload byte",
                    alone_gbps / gbps
                ),
                None => alone = Some((gbps, idle)),
            }
        }
    }
}

/// Whether the optimizer really optimized the bulk transfer: the active
/// connections still optimizing at its end, and every fall-back by reason
/// (a figure measured on connections passed through would say nothing
/// about the optimizer's cost).
fn optimizer_state(run: &Run, o: &brisk_optimizer::Optimizer, family: &str) {
    let optimizing = run
        .conns
        .iter()
        .take(ACTIVE * CONNECTIONS_PER_SUBSCRIBER)
        .step_by(CONNECTIONS_PER_SUBSCRIBER)
        .filter(|c| {
            o.connection(&brisk_optimizer::ConnectionKey::new(c.client, c.server))
                .is_some_and(|i| i.phase == brisk_optimizer::Phase::Optimizing)
        })
        .count();
    let s = o.stats();
    println!(
        "{family} optimizer: {optimizing} of {ACTIVE} bulk connections still optimized at the end, \
         fall-backs by reason {:?}, {} segments sent toward clients, {} sent again, \
         {} local ACKs, {} server copies dropped, {} handshake windows lowered to the buffer",
        s.stopped,
        s.segments_sent,
        s.retransmissions,
        s.local_acks,
        s.duplicates_dropped,
        s.handshake_windows_lowered
    );
}

/// Fills the buffers of 20 idle connections (the server sends, the client
/// stays silent) and prints the heap each takes per held byte.
fn full_buffers(run: &mut Run, family: &str) {
    let limit = brisk_optimizer::Config::default().max_connection_buffer_bytes;
    let held_before = run.core.optimizer().map_or(0, |o| o.held_bytes());
    let heap_before = live_bytes();
    let payload = [0x33_u8; MSS];
    let now = run.now;
    let filled = 20;
    for s in ACTIVE..ACTIVE + filled {
        let i = s * CONNECTIONS_PER_SUBSCRIBER + 1;
        let c = &mut run.conns[i];
        let (client, server) = (c.client, c.server);
        let mut seq = c.snd_nxt;
        // Stay under the limit by one segment so the flow stays optimized.
        for _ in 0..limit / (MSS + 60) - 1 {
            let d = segment(server, client, seq, CLIENT_ISN + 1, TcpFlags::ACK, &payload);
            seq = seq.wrapping_add(MSS as u32);
            run.core.handle_datagram(now, Side::Server, d);
        }
        c.snd_nxt = seq;
        while run.core.poll_transmit().is_some() {}
    }
    let held = run.core.optimizer().map_or(0, |o| o.held_bytes()) - held_before;
    let heap = live_bytes() - heap_before;
    println!(
        "{family} full buffers: {} connections hold {:.1} MB each, {:.0} kB of heap each \
         ({:.2} heap bytes per held byte)",
        filled,
        held as f64 / filled as f64 / 1e6,
        heap as f64 / filled as f64 / 1e3,
        heap as f64 / held.max(1) as f64
    );
}
