//! [`BridgeCore`]: the bridge without its sockets, driven by
//! `(now, frame, side) -> frames out`, so the same code runs in a test at
//! any instant and behind two real interfaces.
//!
//! A frame that is not IPv4 or IPv6, or that belongs to a client outside
//! the optimized subscribers, goes to the other interface byte for byte.
//! Every other frame's IP datagram goes to the optimizer, and whatever the
//! optimizer sends (the same datagram passed on, a held segment, a local
//! ACK) leaves in an Ethernet header learned from the frames that crossed
//! the bridge between the same two addresses in the same direction: a
//! local ACK toward the server leaves as if from the client's station, a
//! held segment as if from the server's. The bridge has no address of its
//! own on either side.

use super::counters::{Counters, OptimizerView};
use super::settings::BridgeSettings;
use brisk_optimizer::{Optimizer, Side};
use brisk_time::Instant;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// Ethernet: two station addresses, then the type.
const ETHERNET_HEADER_BYTES: usize = 14;
const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];
const ETHERTYPE_IPV6: [u8; 2] = [0x86, 0xdd];
/// How often Ethernet headers nobody used for the optimizer's idle
/// timeout are forgotten.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// The two station addresses a frame between two IP addresses carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stations {
    /// Destination then source, as on the wire.
    addresses: [u8; 12],
    last_used: Instant,
}

/// The bridge's state between the two interfaces.
#[derive(Debug)]
pub struct BridgeCore {
    optimizer: Option<Optimizer>,
    settings: BridgeSettings,
    /// By (the interface a frame leaves by, source IP, destination IP).
    stations: HashMap<(Side, IpAddr, IpAddr), Stations>,
    /// Most entries in `stations`: two per optimized connection's address
    /// pair is plenty; beyond it new pairs pass untouched.
    max_stations: usize,
    idle_timeout: Duration,
    next_sweep: Instant,
    out: VecDeque<(Side, Vec<u8>)>,
    counters: Counters,
}

impl BridgeCore {
    /// A bridge with nothing learned yet; `now` starts its clock.
    pub fn new(now: Instant, settings: &BridgeSettings) -> BridgeCore {
        let config = settings.optimizer.clone();
        BridgeCore {
            max_stations: config
                .as_ref()
                .map_or(0, |c| c.max_connections.saturating_mul(2)),
            idle_timeout: config.as_ref().map_or(SWEEP_EVERY, |c| c.idle_timeout),
            optimizer: config.map(Optimizer::new),
            settings: settings.clone(),
            stations: HashMap::new(),
            next_sweep: now + SWEEP_EVERY,
            out: VecDeque::new(),
            counters: Counters::default(),
        }
    }

    /// The bridge's own counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Counts a frame the sending edge had to drop.
    pub fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }

    /// The optimizer's totals and state, when it runs.
    pub fn optimizer_view(&self) -> Option<OptimizerView<'_>> {
        self.optimizer.as_ref().map(|o| OptimizerView {
            stats: o.stats(),
            tracked: o.connection_count(),
            held_bytes: o.held_bytes(),
        })
    }

    /// Bytes the optimizer holds undelivered (acknowledged to servers).
    pub fn held_bytes(&self) -> usize {
        self.optimizer.as_ref().map_or(0, Optimizer::held_bytes)
    }

    /// Stops optimizing every connection: what is held is still
    /// delivered, nothing new is acknowledged early.
    pub fn stop_all(&mut self) {
        if let Some(o) = &mut self.optimizer {
            o.stop_all();
        }
    }

    /// A frame arrived from the interface on `from`'s side.
    pub fn handle_frame(&mut self, now: Instant, from: Side, frame: Vec<u8>) {
        match from {
            Side::Client => self.counters.frames_from_radio += 1,
            Side::Server => self.counters.frames_from_internet += 1,
        }
        let Some((src, dst, ip_len)) = ip_of(&frame) else {
            self.counters.passed_not_ip += 1;
            self.out.push_back((from.other(), frame));
            return;
        };
        let client = if from == Side::Client { src } else { dst };
        let key = (from.other(), src, dst);
        let room = self.stations.len() < self.max_stations || self.stations.contains_key(&key);
        let optimizer = match self.optimizer.as_mut() {
            Some(o) if room && self.settings.optimizes(client) => o,
            _ => {
                self.counters.passed_other_subscribers += 1;
                self.out.push_back((from.other(), frame));
                return;
            }
        };
        let mut addresses = [0; 12];
        addresses.copy_from_slice(&frame[..12]);
        self.stations.insert(
            key,
            Stations {
                addresses,
                last_used: now,
            },
        );
        // Short frames are padded to 60 bytes on the wire: the datagram
        // is what its IP header says, without the padding.
        let datagram = frame[ETHERNET_HEADER_BYTES..ETHERNET_HEADER_BYTES + ip_len].to_vec();
        optimizer.handle_packet(now, from, datagram);
        self.collect(now);
    }

    /// When [`BridgeCore::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Instant {
        self.optimizer
            .as_ref()
            .and_then(Optimizer::poll_timeout)
            .map_or(self.next_sweep, |t| t.min(self.next_sweep))
    }

    /// Runs the optimizer's timers and forgets stale Ethernet headers.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(o) = &mut self.optimizer {
            o.handle_timeout(now);
        }
        self.collect(now);
        if now >= self.next_sweep {
            let idle = self.idle_timeout;
            self.stations
                .retain(|_, s| now.saturating_duration_since(s.last_used) < idle);
            self.next_sweep = now + SWEEP_EVERY;
        }
    }

    /// The next frame to send, and the side whose interface sends it.
    pub fn poll_frame(&mut self) -> Option<(Side, Vec<u8>)> {
        self.out.pop_front()
    }

    /// Frames the optimizer's datagrams, in the order it sent them.
    fn collect(&mut self, now: Instant) {
        let Some(o) = &mut self.optimizer else {
            return;
        };
        while let Some(t) = o.poll_transmit() {
            let Some((src, dst)) = addresses_of(&t.datagram) else {
                self.counters.dropped_no_ethernet_header += 1;
                continue;
            };
            let Some(s) = self.stations.get_mut(&(t.toward, src, dst)) else {
                self.counters.dropped_no_ethernet_header += 1;
                continue;
            };
            s.last_used = now;
            let ethertype = if src.is_ipv4() {
                ETHERTYPE_IPV4
            } else {
                ETHERTYPE_IPV6
            };
            let mut frame = Vec::with_capacity(ETHERNET_HEADER_BYTES + t.datagram.len());
            frame.extend_from_slice(&s.addresses);
            frame.extend_from_slice(&ethertype);
            frame.extend_from_slice(&t.datagram);
            self.out.push_back((t.toward, frame));
        }
    }
}

/// A frame's IP source, destination and datagram length (without
/// Ethernet padding), if it carries a whole IPv4 or IPv6 datagram.
fn ip_of(frame: &[u8]) -> Option<(IpAddr, IpAddr, usize)> {
    let ethertype = frame.get(12..ETHERNET_HEADER_BYTES)?;
    let ip = frame.get(ETHERNET_HEADER_BYTES..)?;
    let (src, dst) = addresses_of(ip)?;
    let len = match (ethertype, src) {
        (t, IpAddr::V4(_)) if t == ETHERTYPE_IPV4 => {
            usize::from(u16::from_be_bytes([ip[2], ip[3]]))
        }
        (t, IpAddr::V6(_)) if t == ETHERTYPE_IPV6 => {
            40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]))
        }
        _ => return None,
    };
    (len <= ip.len()).then_some((src, dst, len))
}

/// A datagram's source and destination addresses, if its header is whole.
fn addresses_of(ip: &[u8]) -> Option<(IpAddr, IpAddr)> {
    match ip.first()? >> 4 {
        4 if ip.len() >= 20 => {
            let a = |at: usize| Ipv4Addr::new(ip[at], ip[at + 1], ip[at + 2], ip[at + 3]);
            Some((a(12).into(), a(16).into()))
        }
        6 if ip.len() >= 40 => {
            let a = |at: usize| {
                let mut b = [0u8; 16];
                b.copy_from_slice(&ip[at..at + 16]);
                Ipv6Addr::from(b)
            };
            Some((a(8).into(), a(24).into()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::Ecn;
    use brisk_wire::tcp::{TcpFlags, TcpOption, TcpRepr};

    const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xc1];
    const SERVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x5e];

    struct Ends {
        client: IpAddr,
        server: IpAddr,
    }

    fn families() -> [Ends; 2] {
        [
            Ends {
                client: "10.88.0.2".parse().unwrap(),
                server: "10.88.0.1".parse().unwrap(),
            },
            Ends {
                client: "fd88::2".parse().unwrap(),
                server: "fd88::1".parse().unwrap(),
            },
        ]
    }

    fn frame(dst_mac: [u8; 6], src_mac: [u8; 6], datagram: &[u8], pad_to: usize) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&dst_mac);
        f.extend_from_slice(&src_mac);
        let v6 = datagram[0] >> 4 == 6;
        f.extend_from_slice(if v6 { &ETHERTYPE_IPV6 } else { &ETHERTYPE_IPV4 });
        f.extend_from_slice(datagram);
        f.resize(f.len().max(pad_to), 0);
        f
    }

    fn segment(
        src: IpAddr,
        dst: IpAddr,
        ports: (u16, u16),
        seq_ack: (u32, u32),
        flags: TcpFlags,
        options: Vec<TcpOption>,
        payload: &[u8],
    ) -> Vec<u8> {
        let repr = TcpRepr {
            src_port: ports.0,
            dst_port: ports.1,
            seq_number: seq_ack.0,
            ack_number: seq_ack.1,
            flags,
            window: 1000,
            urgent_pointer: 0,
            options,
        };
        brisk_wire::ip::tcp_datagram(src, dst, Ecn::NotEct, &repr, payload).unwrap()
    }

    fn drain(core: &mut BridgeCore) -> Vec<(Side, Vec<u8>)> {
        std::iter::from_fn(|| core.poll_frame()).collect()
    }

    fn syn_options() -> Vec<TcpOption> {
        vec![
            TcpOption::Mss(1460),
            TcpOption::SackPermitted,
            TcpOption::WindowScale(7),
        ]
    }

    /// A handshake through the bridge, then one server segment: every
    /// handshake frame (padded ACKs included) leaves byte for byte, the
    /// segment is held and sent toward the radio in the server's
    /// station header, and a local ACK leaves toward the internet in the
    /// client's. An ARP frame passes untouched.
    #[test]
    fn frames_pass_whole_and_the_optimizer_speaks_in_the_endpoints_stations() {
        for ends in families() {
            let t0 = Instant::from_millis(5);
            let mut core = BridgeCore::new(t0, &BridgeSettings::new("r", "i"));
            let arp = {
                let mut f = vec![0xff; 6];
                f.extend_from_slice(&CLIENT_MAC);
                f.extend_from_slice(&[0x08, 0x06]);
                f.resize(60, 0x11);
                f
            };
            core.handle_frame(t0, Side::Client, arp.clone());
            assert_eq!(drain(&mut core), vec![(Side::Server, arp)]);

            let (c, s) = (ends.client, ends.server);
            let ports = (40_000, 80);
            let back = (80, 40_000);
            let syn = segment(c, s, ports, (100, 0), TcpFlags::SYN, syn_options(), &[]);
            let syn_ack = segment(
                s,
                c,
                back,
                (5_000, 101),
                TcpFlags::SYN | TcpFlags::ACK,
                syn_options(),
                &[],
            );
            let ack = segment(c, s, ports, (101, 5_001), TcpFlags::ACK, vec![], &[]);
            let steps = [
                (Side::Client, frame(SERVER_MAC, CLIENT_MAC, &syn, 60)),
                (Side::Server, frame(CLIENT_MAC, SERVER_MAC, &syn_ack, 60)),
                (Side::Client, frame(SERVER_MAC, CLIENT_MAC, &ack, 60)),
            ];
            for (i, (from, f)) in steps.into_iter().enumerate() {
                let now = t0 + Duration::from_millis(10 * (i as u64 + 1));
                core.handle_frame(now, from, f.clone());
                let want = f[..ETHERNET_HEADER_BYTES + ip_of(&f).unwrap().2].to_vec();
                assert_eq!(drain(&mut core), vec![(from.other(), want)], "step {i}");
            }
            let view = core.optimizer_view().unwrap();
            assert_eq!(view.stats.optimized_connections, 1);

            let payload = [7u8; 1000];
            let data = segment(
                s,
                c,
                back,
                (5_001, 101),
                TcpFlags::ACK | TcpFlags::PSH,
                vec![],
                &payload,
            );
            let now = t0 + Duration::from_millis(50);
            core.handle_frame(now, Side::Server, frame(CLIENT_MAC, SERVER_MAC, &data, 0));
            let out = drain(&mut core);
            let toward_radio: Vec<_> = out.iter().filter(|(s, _)| *s == Side::Client).collect();
            let toward_internet: Vec<_> = out.iter().filter(|(s, _)| *s == Side::Server).collect();
            assert_eq!(toward_radio.len(), 1, "{out:?}");
            assert_eq!(toward_radio[0].1, frame(CLIENT_MAC, SERVER_MAC, &data, 0));
            assert_eq!(toward_internet.len(), 1, "{out:?}");
            let local_ack = &toward_internet[0].1;
            assert_eq!(&local_ack[..6], &SERVER_MAC);
            assert_eq!(&local_ack[6..12], &CLIENT_MAC);
            let seg = brisk_wire::ip::parse_tcp(&local_ack[ETHERNET_HEADER_BYTES..]).unwrap();
            assert_eq!((seg.src, seg.dst), (c, s));
            assert_eq!(seg.tcp.ack_number, 5_001 + 1000);
            assert_eq!(core.optimizer_view().unwrap().stats.local_acks, 1);
            assert_eq!(core.held_bytes(), data.len());
            assert_eq!(core.counters().passed_not_ip, 1);
            assert_eq!(core.counters().frames_from_radio, 3);
            assert_eq!(core.counters().frames_from_internet, 2);
        }
    }

    /// Clients outside the optimized prefixes, and every client with the
    /// optimizer off, pass byte for byte and are never tracked.
    #[test]
    fn other_subscribers_and_an_optimizer_that_is_off_pass_untouched() {
        for ends in families() {
            let mut only_others = BridgeSettings::new("r", "i");
            only_others.subscribers = vec!["192.0.2.0/24".parse().unwrap()];
            let mut off = BridgeSettings::new("r", "i");
            off.optimizer = None;
            for settings in [only_others, off] {
                let now = Instant::from_millis(1);
                let mut core = BridgeCore::new(now, &settings);
                let syn = segment(
                    ends.client,
                    ends.server,
                    (1, 2),
                    (9, 0),
                    TcpFlags::SYN,
                    syn_options(),
                    &[],
                );
                let f = frame(SERVER_MAC, CLIENT_MAC, &syn, 0);
                core.handle_frame(now, Side::Client, f.clone());
                assert_eq!(drain(&mut core), vec![(Side::Server, f)]);
                assert_eq!(core.counters().passed_other_subscribers, 1);
                assert!(core.optimizer_view().is_none_or(|v| v.tracked == 0));
            }
        }
    }

    /// Frames too short for their headers, or whose IP header claims more
    /// than the frame holds, pass untouched rather than reach the
    /// optimizer; nothing panics on any prefix of a real frame.
    #[test]
    fn broken_frames_pass_untouched() {
        for ends in families() {
            let now = Instant::from_millis(1);
            let mut core = BridgeCore::new(now, &BridgeSettings::new("r", "i"));
            let syn = segment(
                ends.client,
                ends.server,
                (1, 2),
                (9, 0),
                TcpFlags::SYN,
                syn_options(),
                &[],
            );
            let whole = frame(SERVER_MAC, CLIENT_MAC, &syn, 0);
            for cut in 0..whole.len() {
                core.handle_frame(now, Side::Client, whole[..cut].to_vec());
                assert_eq!(
                    drain(&mut core),
                    vec![(Side::Server, whole[..cut].to_vec())]
                );
            }
            assert_eq!(core.counters().passed_not_ip, whole.len() as u64);
            assert_eq!(core.optimizer_view().unwrap().tracked, 0);
        }
    }
}
