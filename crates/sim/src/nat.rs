//! A NAT in front of a flow's sender: the address the rest of the network
//! sees changes on a schedule, as phones' do.
//!
//! The sender keeps its own address; on the way out its datagrams get the
//! NAT's current outside address, and replies to that address are handed
//! back to it. A *rebinding* (the NAT forgot the mapping and made a new
//! one, every 15-30 s on mobile carriers) gives a new outside port on the
//! same address; a *move* (the phone went from Wi-Fi to cellular) gives a
//! new outside address on another network, and the sender is told, as a
//! host learns its interface changed. Replies to an outside address that is
//! no longer current are dropped, as the forgotten mapping's would be.

use brisk_time::Instant;
use brisk_wire::ip;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// When a flow's sender changes address, from the flow's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Moves {
    /// A new network (another address and port) this often.
    pub migrate_every: Option<Duration>,
    /// A NAT rebinding (another port) this often; when it falls on a move
    /// to a new network, that move is the one that happens.
    pub nat_rebind_every: Option<Duration>,
}

impl Moves {
    pub fn is_empty(&self) -> bool {
        self.migrate_every.is_none() && self.nat_rebind_every.is_none()
    }
}

/// What changed at a scheduled instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Another outside port on the same address.
    Rebinding,
    /// Another network: the sender must be told.
    NewNetwork,
}

/// The NAT of one flow's sender.
#[derive(Debug, Clone)]
pub struct ClientNat {
    inside: SocketAddr,
    outside: SocketAddr,
    moves: Moves,
    start: Instant,
    /// Scheduled changes made so far: (rebindings, moves to a new network).
    done: (u32, u32),
    /// Every change so far, for the run's results.
    pub log: Vec<(Instant, Change)>,
}

/// The first outside port; each change takes the next.
const FIRST_PORT: u16 = 50_000;

impl ClientNat {
    pub fn new(inside: SocketAddr, moves: Moves, start: Instant) -> Self {
        ClientNat {
            inside,
            outside: SocketAddr::new(outside_ip(inside.ip(), 0), FIRST_PORT),
            moves,
            start,
            done: (0, 0),
            log: Vec::new(),
        }
    }

    /// The next scheduled change at or before `now`, applied; call until
    /// `None`.
    pub fn advance(&mut self, now: Instant) -> Option<Change> {
        let at = |every: Option<Duration>, n: u32| every.map(|e| self.start + e * (n + 1));
        let rebind = at(self.moves.nat_rebind_every, self.done.0).filter(|t| *t <= now);
        let migrate = at(self.moves.migrate_every, self.done.1).filter(|t| *t <= now);
        let change = match (rebind, migrate) {
            (None, None) => return None,
            (Some(r), Some(m)) if r == m => {
                self.done.0 += 1;
                self.done.1 += 1;
                (m, Change::NewNetwork)
            }
            (Some(r), Some(m)) if r < m => {
                self.done.0 += 1;
                (r, Change::Rebinding)
            }
            (Some(r), None) => {
                self.done.0 += 1;
                (r, Change::Rebinding)
            }
            (_, Some(m)) => {
                self.done.1 += 1;
                (m, Change::NewNetwork)
            }
        };
        let changes = self.log.len() as u16 + 1;
        let port = FIRST_PORT.wrapping_add(changes);
        let ip = match change.1 {
            Change::Rebinding => self.outside.ip(),
            Change::NewNetwork => outside_ip(self.inside.ip(), self.done.1),
        };
        self.outside = SocketAddr::new(ip, port);
        self.log.push(change);
        Some(change.1)
    }

    /// When the next scheduled change is due.
    pub fn next_change(&self) -> Option<Instant> {
        let at = |every: Option<Duration>, n: u32| every.map(|e| self.start + e * (n + 1));
        brisk_time::earliest(
            at(self.moves.nat_rebind_every, self.done.0),
            at(self.moves.migrate_every, self.done.1),
        )
    }

    /// The address the network sees now.
    pub fn outside(&self) -> SocketAddr {
        self.outside
    }

    /// The sender's datagram with the outside source address; `None` if it
    /// is not the sender's IP/UDP datagram (left alone).
    pub fn outbound(&self, datagram: &[u8]) -> Option<Vec<u8>> {
        let (src, dst, ecn, payload) = ip::parse_udp_trusted(datagram).ok()?;
        if src != self.inside {
            return None;
        }
        ip::udp_datagram(self.outside, dst, ecn, payload).ok()
    }

    /// A reply for the sender with its inside address, or `None` when it
    /// is for an outside address that is not current (dropped).
    pub fn inbound(&self, datagram: &[u8]) -> Option<Vec<u8>> {
        let (src, dst, ecn, payload) = ip::parse_udp_trusted(datagram).ok()?;
        if dst != self.outside {
            return None;
        }
        ip::udp_datagram(src, self.inside, ecn, payload).ok()
    }
}

/// The outside address on network `n`: in the sender's family, on a prefix
/// of its own per network (100.64.n.x, the carrier-grade NAT range, or
/// 2001:db8:ffNN::).
fn outside_ip(inside: IpAddr, n: u32) -> IpAddr {
    match inside {
        IpAddr::V4(a) => {
            let lo = a.octets()[3];
            let net = ((n / 256) % 64) as u8;
            IpAddr::V4(Ipv4Addr::new(100, 64 + net, (n % 256) as u8, lo))
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            IpAddr::V6(Ipv6Addr::new(
                0x2001,
                0xdb8,
                0xff00 | (n as u16 & 0xff),
                (n >> 8) as u16,
                0,
                0,
                0,
                s[7],
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::Ecn;

    fn inside(v6: bool) -> SocketAddr {
        if v6 {
            "[2001:db8:1::1]:40000".parse().unwrap()
        } else {
            "10.1.0.1:40000".parse().unwrap()
        }
    }

    #[test]
    fn schedule_rebinds_and_moves_and_a_move_wins_a_tie() {
        let moves = Moves {
            migrate_every: Some(Duration::from_secs(30)),
            nat_rebind_every: Some(Duration::from_secs(15)),
        };
        let mut nat = ClientNat::new(inside(false), moves, Instant::ZERO);
        let first = nat.outside();
        assert_eq!(nat.advance(Instant::from_millis(14_999)), None);
        assert_eq!(
            nat.advance(Instant::from_millis(15_000)),
            Some(Change::Rebinding)
        );
        assert_eq!(nat.outside().ip(), first.ip());
        assert_ne!(nat.outside().port(), first.port());
        assert_eq!(
            nat.advance(Instant::from_millis(30_000)),
            Some(Change::NewNetwork)
        );
        assert_ne!(nat.outside().ip(), first.ip());
        assert_eq!(nat.advance(Instant::from_millis(30_000)), None);
        // Late: every change due is made, in order.
        let got: Vec<Change> =
            std::iter::from_fn(|| nat.advance(Instant::from_millis(61_000))).collect();
        assert_eq!(got, [Change::Rebinding, Change::NewNetwork]);
    }

    #[test]
    fn rewrites_both_ways_and_drops_replies_to_an_old_mapping() {
        for v6 in [false, true] {
            let server: SocketAddr = if v6 {
                "[2001:db8:2::1]:42000".parse().unwrap()
            } else {
                "10.2.0.1:42000".parse().unwrap()
            };
            let moves = Moves {
                migrate_every: None,
                nat_rebind_every: Some(Duration::from_secs(1)),
            };
            let mut nat = ClientNat::new(inside(v6), moves, Instant::ZERO);
            let out = ip::udp_datagram(inside(v6), server, Ecn::Ect1, b"hello").unwrap();
            let rewritten = nat.outbound(&out).unwrap();
            let (src, dst, ecn, payload) = ip::parse_udp(&rewritten).unwrap();
            assert_eq!(
                (src, dst, ecn, payload),
                (nat.outside(), server, Ecn::Ect1, &b"hello"[..])
            );
            let reply = ip::udp_datagram(server, nat.outside(), Ecn::NotEct, b"hi").unwrap();
            let back = nat.inbound(&reply).unwrap();
            assert_eq!(ip::parse_udp(&back).unwrap().1, inside(v6));
            nat.advance(Instant::from_millis(1_000));
            assert_eq!(nat.inbound(&reply), None, "the old mapping is gone");
            assert_eq!(nat.outbound(b"not ip"), None);
        }
    }
}
