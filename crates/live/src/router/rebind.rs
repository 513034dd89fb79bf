//! NAT rebinding: from a set time on, the router rewrites the client's UDP
//! source port, as a home or carrier NAT does when its binding times out
//! or it restarts, and maps the replies back; optionally again and again
//! (`every`), as mobile carriers' NATs do every 15-30 s. The server sees the same
//! client arrive from a new address mid-connection; a transport that
//! follows its peer's new address survives, one that keeps answering the
//! old one does not.
//!
//! Only UDP is rewritten; after the `k`th rebinding the port is the old
//! one plus `k` times `port_offset` (wrapping, never 0), and replies to an
//! earlier mapping no longer reach the client. Packets the router cannot parse pass unchanged.

use brisk_time::Instant;
use brisk_wire::ip;
use std::net::SocketAddr;
use std::time::Duration;

/// When the client's binding changes, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rebind {
    /// Since the lab's start.
    pub at: Duration,
    /// Added to the client's UDP source port at each rebinding.
    pub port_offset: u16,
    /// Rebind again this often after `at`; `None`: once.
    pub every: Option<Duration>,
}

/// The rewriting state of a [`Rebind`].
#[derive(Debug, Clone)]
pub(crate) struct Rebinder {
    at: Instant,
    offset: u16,
    every: Option<Duration>,
    /// Datagrams whose port was rewritten, both ways.
    rewritten: u64,
}

impl Rebinder {
    pub(crate) fn new(r: Rebind) -> Rebinder {
        Rebinder {
            at: Instant::ZERO + r.at,
            offset: r.port_offset,
            every: r.every.filter(|e| !e.is_zero()),
            rewritten: 0,
        }
    }

    pub(crate) fn rewritten(&self) -> u64 {
        self.rewritten
    }

    /// The offset in force at `now` (the rebinding is due then).
    fn offset_at(&self, now: Instant) -> u16 {
        let k = match self.every {
            Some(e) => 1 + ((now - self.at).as_nanos() / e.as_nanos()) as u64,
            None => 1,
        };
        self.offset.wrapping_mul(k as u16)
    }

    fn mapped(&self, port: u16, offset: u16) -> u16 {
        match port.wrapping_add(offset) {
            0 => 1,
            p => p,
        }
    }

    /// A datagram from the client: after the rebinding, from its new port.
    pub(crate) fn client_to_server(&mut self, now: Instant, data: Vec<u8>) -> Vec<u8> {
        if now < self.at || self.offset == 0 {
            return data;
        }
        let offset = self.offset_at(now);
        self.rewrite(data, |me, src, dst| {
            (
                SocketAddr::new(src.ip(), me.mapped(src.port(), offset)),
                dst,
            )
        })
    }

    /// A datagram to the client: replies to the new port reach the old one.
    pub(crate) fn server_to_client(&mut self, now: Instant, data: Vec<u8>) -> Vec<u8> {
        if now < self.at || self.offset == 0 {
            return data;
        }
        let offset = self.offset_at(now);
        self.rewrite(data, |_, src, dst| {
            // Every port moves back by the offset, so a reply to an old
            // port lands on a port the client does not use: the old
            // binding is gone, as at a real NAT.
            (
                src,
                SocketAddr::new(dst.ip(), dst.port().wrapping_sub(offset)),
            )
        })
    }

    fn rewrite(
        &mut self,
        data: Vec<u8>,
        f: impl Fn(&Self, SocketAddr, SocketAddr) -> (SocketAddr, SocketAddr),
    ) -> Vec<u8> {
        let Ok((src, dst, ecn, payload)) = ip::parse_udp(&data) else {
            return data;
        };
        let (new_src, new_dst) = f(self, src, dst);
        if (new_src, new_dst) == (src, dst) {
            return data;
        }
        match ip::udp_datagram(new_src, new_dst, ecn, payload) {
            Ok(d) => {
                self.rewritten += 1;
                d
            }
            Err(_) => data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_wire::Ecn;

    fn addrs(v6: bool) -> (SocketAddr, SocketAddr) {
        if v6 {
            (
                "[2001:db8::1]:40000".parse().unwrap(),
                "[2001:db8::2]:443".parse().unwrap(),
            )
        } else {
            (
                "192.0.2.1:40000".parse().unwrap(),
                "192.0.2.2:443".parse().unwrap(),
            )
        }
    }

    #[test]
    fn the_client_moves_to_a_new_port_at_the_set_time_and_replies_follow() {
        for v6 in [false, true] {
            let (client, server) = addrs(v6);
            let mut r = Rebinder::new(Rebind {
                at: Duration::from_secs(2),
                port_offset: 1000,
                every: None,
            });
            let up = ip::udp_datagram(client, server, Ecn::Ect1, b"hello").unwrap();
            let before = r.client_to_server(Instant::from_millis(1999), up.clone());
            assert_eq!(before, up, "untouched before the rebinding");
            let after = r.client_to_server(Instant::from_millis(2000), up);
            let (src, dst, ecn, payload) = ip::parse_udp(&after).unwrap();
            assert_eq!(src, SocketAddr::new(client.ip(), 41000));
            assert_eq!((dst, ecn, payload), (server, Ecn::Ect1, &b"hello"[..]));
            // The server answers the new port; the client gets its own.
            let down = ip::udp_datagram(server, src, Ecn::NotEct, b"hi").unwrap();
            let back = r.server_to_client(Instant::from_millis(2001), down);
            assert_eq!(ip::parse_udp(&back).unwrap().1, client);
            // An answer to the old port no longer reaches the client.
            let stale = ip::udp_datagram(server, client, Ecn::NotEct, b"x").unwrap();
            let lost = r.server_to_client(Instant::from_millis(2002), stale);
            assert_ne!(ip::parse_udp(&lost).unwrap().1, client);
            assert_eq!(r.rewritten(), 3);
            // Not UDP: passed as it is.
            assert_eq!(
                r.client_to_server(Instant::from_millis(3000), vec![0x45, 0]),
                vec![0x45, 0]
            );
        }
    }

    #[test]
    fn ports_wrap_and_never_become_zero() {
        let r = Rebinder::new(Rebind {
            at: Duration::ZERO,
            port_offset: 1,
            every: None,
        });
        let offset = r.offset_at(Instant::from_millis(5));
        assert_eq!(r.mapped(65_535, offset), 1);
        assert_eq!(r.mapped(10, offset), 11);
    }

    #[test]
    fn rebinding_every_period_moves_the_port_again_and_drops_old_mappings() {
        for v6 in [false, true] {
            let (client, server) = addrs(v6);
            let mut r = Rebinder::new(Rebind {
                at: Duration::from_secs(15),
                port_offset: 1000,
                every: Some(Duration::from_secs(15)),
            });
            let up = ip::udp_datagram(client, server, Ecn::NotEct, b"x").unwrap();
            let port_at = |r: &mut Rebinder, ms| {
                let d = r.client_to_server(Instant::from_millis(ms), up.clone());
                ip::parse_udp(&d).unwrap().0.port()
            };
            assert_eq!(port_at(&mut r, 14_999), 40_000);
            assert_eq!(port_at(&mut r, 15_000), 41_000);
            assert_eq!(port_at(&mut r, 29_999), 41_000);
            assert_eq!(port_at(&mut r, 30_000), 42_000);
            assert_eq!(port_at(&mut r, 45_000), 43_000);
            // A reply to the mapping of 30-45 s is lost after 45 s.
            let old = SocketAddr::new(client.ip(), 42_000);
            let down = ip::udp_datagram(server, old, Ecn::NotEct, b"y").unwrap();
            let back = r.server_to_client(Instant::from_millis(44_000), down.clone());
            assert_eq!(ip::parse_udp(&back).unwrap().1, client);
            let lost = r.server_to_client(Instant::from_millis(45_000), down);
            assert_ne!(ip::parse_udp(&lost).unwrap().1, client);
        }
    }
}
