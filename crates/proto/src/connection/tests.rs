//! ACK_FREQUENCY negotiation and what a receiver refuses, driven through
//! two real endpoints. A misbehaving peer is a real connection with its
//! sender-side state forced, so the frames go out through the real path.
//! The two-endpoint [`Pair`] also serves the packet builder's tests
//! (`builder_tests`).

use super::*;
use crate::error::code;
use crate::streams::Priority;
use brisk_wire::Ecn;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

pub(super) const MS: Duration = Duration::from_millis(1);

pub(super) struct Pair {
    pub(super) client: crate::Endpoint,
    pub(super) server: crate::Endpoint,
    client_conn: crate::ConnectionHandle,
    server_conn: Option<crate::ConnectionHandle>,
    pub(super) client_addr: SocketAddr,
    pub(super) server_addr: SocketAddr,
    pub(super) now: Instant,
    client_events: Vec<Event>,
}

fn addrs(v6: bool) -> (SocketAddr, SocketAddr) {
    if v6 {
        let ip = |n| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, n));
        (SocketAddr::new(ip(1), 4000), SocketAddr::new(ip(2), 443))
    } else {
        let ip = |n| IpAddr::V4(Ipv4Addr::new(192, 0, 2, n));
        (SocketAddr::new(ip(1), 4000), SocketAddr::new(ip(2), 443))
    }
}

impl Pair {
    /// A connected pair with the given `ack_frequency` settings.
    pub(super) fn connected(v6: bool, client_af: bool, server_af: bool) -> Pair {
        Pair::connected_with(v6, |client, server| {
            client.ack_frequency = client_af;
            server.ack_frequency = server_af;
        })
    }

    /// A connected pair whose client and server transport settings
    /// `configure` sets.
    pub(super) fn connected_with(
        v6: bool,
        configure: impl FnOnce(&mut TransportConfig, &mut TransportConfig),
    ) -> Pair {
        let keys = Keypair::generate(&mut ChaCha8Rng::seed_from_u64(7));
        let mut client_config = ClientConfig::new(Some(keys.public()));
        let mut server_config = ServerConfig::new(keys);
        configure(&mut client_config.transport, &mut server_config.transport);
        let (client_addr, server_addr) = addrs(v6);
        let mut client = crate::Endpoint::new(1, None);
        let client_conn = client
            .connect(Instant::ZERO, server_addr, client_config)
            .unwrap();
        let mut p = Pair {
            client,
            server: crate::Endpoint::new(2, Some(server_config)),
            client_conn,
            server_conn: None,
            client_addr,
            server_addr,
            now: Instant::ZERO,
            client_events: Vec::new(),
        };
        p.exchange(10);
        assert!(p.client().is_established());
        p
    }

    pub(super) fn client(&mut self) -> &mut Connection {
        self.client.connection_mut(self.client_conn).unwrap()
    }

    pub(super) fn server(&mut self) -> &mut Connection {
        let h = self.server_conn.unwrap();
        self.server.connection_mut(h).unwrap()
    }

    /// Delivers what both sides send, 5 ms per round, for `rounds` rounds.
    pub(super) fn exchange(&mut self, rounds: usize) {
        for _ in 0..rounds {
            let now = self.now;
            let mut d = Vec::new();
            while self.client.poll_transmit(now, 1, &mut d).is_some() {
                self.server
                    .handle_datagram(now, self.client_addr, Ecn::NotEct, &d);
                d.clear();
            }
            while self.server.poll_transmit(now, 1, &mut d).is_some() {
                self.client
                    .handle_datagram(now, self.server_addr, Ecn::NotEct, &d);
                d.clear();
            }
            while let Some((_, e)) = self.client.poll_event() {
                self.client_events.push(e);
            }
            while let Some(h) = self.server.accept() {
                self.server_conn = Some(h);
            }
            while self.server.poll_event().is_some() {}
            self.now += 5 * MS;
            self.client.handle_timeout(self.now);
            self.server.handle_timeout(self.now);
        }
    }

    /// Makes the client ask for a new ACK rate, announced or not, and
    /// sends it with some data.
    fn client_requests(&mut self, peer_min_ack_delay: Duration, srtt: Duration) {
        let now = self.now;
        let c = self.client();
        let mut a = AckFrequency::new(peer_min_ack_delay, 25 * MS);
        a.update(now, 1_000_000, 1_200, srtt, false);
        assert!(a.has_pending());
        c.ack_frequency = Some(a);
        let id = c.open_stream(true, Priority::default()).unwrap();
        c.write(id, &[1; 3_000]).unwrap();
        self.exchange(10);
    }

    pub(super) fn client_saw_protocol_violation(&self) -> bool {
        self.client_events.iter().any(|e| {
            matches!(
                e,
                Event::ConnectionLost(ConnectionError::PeerTransportError { code: c, .. })
                    if *c == code::PROTOCOL_VIOLATION
            )
        })
    }
}

#[test]
fn ack_frequency_is_used_only_when_both_sides_announce_it() {
    for v6 in [false, true] {
        let mut p = Pair::connected(v6, true, true);
        assert!(p.client().ack_frequency.is_some() && p.server().ack_frequency.is_some());
        assert_eq!(
            p.server().hs.local_params.min_ack_delay,
            Some(MIN_ACK_DELAY)
        );
        // The server neither announces it nor asks; the client, told
        // nothing, does not ask either.
        let mut p = Pair::connected(v6, true, false);
        assert!(p.client().ack_frequency.is_none() && p.server().ack_frequency.is_none());
        assert_eq!(p.server().hs.local_params.min_ack_delay, None);
    }
}

#[test]
fn a_request_the_receiver_did_not_invite_closes_the_connection() {
    for v6 in [false, true] {
        let mut p = Pair::connected(v6, true, false);
        p.client_requests(MS, 20 * MS);
        assert!(p.client_saw_protocol_violation(), "{:?}", p.client_events);
    }
}

#[test]
fn a_delay_below_the_announced_minimum_closes_the_connection() {
    for v6 in [false, true] {
        let mut p = Pair::connected(v6, true, true);
        // A quarter of 2 ms is under the server's 1 ms minimum, which a
        // peer that ignored it would ask for.
        p.client_requests(Duration::ZERO, 2 * MS);
        assert!(p.client_saw_protocol_violation(), "{:?}", p.client_events);
        // Within the minimum, the same request is taken.
        let mut p = Pair::connected(v6, true, true);
        p.client_requests(MS, 20 * MS);
        assert!(!p.client_saw_protocol_violation(), "{:?}", p.client_events);
        assert!(p.client().is_established());
        assert!(p.client().stats().ack_frequency_sent >= 1);
    }
}
