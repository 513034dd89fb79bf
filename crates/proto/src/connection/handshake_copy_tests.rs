//! The handshake copy between two real endpoints: with FEC asked for, a
//! lost client Initial or server reply costs nothing, because its copy
//! arrives; without FEC the client waits its handshake timeout (about a
//! second) and resends.

use super::*;
use crate::fec::FecPolicy;
use brisk_wire::Ecn;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

const STEP: Duration = Duration::from_millis(5);

/// One handshake with FEC `enabled` on both sides (with handshake copies
/// when `copies`), dropping the client's
/// first `drop_client` and the server's first `drop_server` datagrams: the
/// time the client took to connect, and both sides' handshake copies.
fn connect(
    v6: bool,
    enabled: bool,
    copies: bool,
    drop_client: usize,
    drop_server: usize,
) -> (Duration, u64, u64) {
    let keys = Keypair::generate(&mut ChaCha8Rng::seed_from_u64(7));
    let mut client_config = ClientConfig::new(Some(keys.public()));
    let mut server_config = ServerConfig::new(keys);
    for t in [&mut client_config.transport, &mut server_config.transport] {
        t.fec.enabled = enabled;
        t.fec.handshake_copies = copies;
        t.fec.default_policy = FecPolicy::On;
    }
    let ip = |n: u16| -> IpAddr {
        if v6 {
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, n))
        } else {
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, n as u8))
        }
    };
    let (client_addr, server_addr) = (SocketAddr::new(ip(1), 4000), SocketAddr::new(ip(2), 443));
    let mut client = crate::Endpoint::new(1, None);
    let mut server = crate::Endpoint::new(2, Some(server_config));
    let h = client
        .connect(Instant::ZERO, server_addr, client_config)
        .expect("a valid client configuration");
    let mut server_conn = None;
    let mut now = Instant::ZERO;
    let (mut client_dropped, mut dropped) = (0, 0);
    let mut d = Vec::new();
    while now < Instant::from_millis(5_000) {
        while client.poll_transmit(now, 1, &mut d).is_some() {
            if client_dropped < drop_client {
                client_dropped += 1;
            } else {
                server.handle_datagram(now, client_addr, Ecn::NotEct, &d);
            }
            d.clear();
        }
        while server.poll_transmit(now, 1, &mut d).is_some() {
            if dropped < drop_server {
                dropped += 1;
            } else {
                client.handle_datagram(now, server_addr, Ecn::NotEct, &d);
            }
            d.clear();
        }
        while let Some(s) = server.accept() {
            server_conn = Some(s);
        }
        while client.poll_event().is_some() {}
        while server.poll_event().is_some() {}
        let c = client.connection(h).expect("the client's connection");
        if c.is_established() {
            let s = server_conn
                .and_then(|s| server.connection(s))
                .expect("the server accepted");
            let copies = (
                c.stats().handshake_copies_sent,
                s.stats().handshake_copies_sent,
            );
            return (now - Instant::ZERO, copies.0, copies.1);
        }
        now += STEP;
        client.handle_timeout(now);
        server.handle_timeout(now);
    }
    panic!(
        "no handshake within 5 s (v6 {v6}, FEC {enabled}, {drop_client} and {drop_server} dropped)"
    );
}

#[test]
fn a_lost_reply_is_covered_by_its_copy_under_fec() {
    for v6 in [false, true] {
        let (at, client_copies, server_copies) = connect(v6, true, true, 0, 1);
        assert_eq!(at, Duration::ZERO, "v6 {v6}: connected at {at:?}");
        assert_eq!((client_copies, server_copies), (1, 1), "v6 {v6}");
    }
}

#[test]
fn a_lost_initial_is_covered_by_its_copy_under_fec() {
    for v6 in [false, true] {
        let (at, client_copies, _) = connect(v6, true, true, 1, 0);
        assert_eq!(at, Duration::ZERO, "v6 {v6}: connected at {at:?}");
        assert_eq!(client_copies, 1, "v6 {v6}");
        let (at, _, _) = connect(v6, false, true, 1, 0);
        assert!(
            at >= Duration::from_millis(900),
            "v6 {v6}: without FEC at {at:?}"
        );
    }
}

#[test]
fn without_fec_a_lost_reply_waits_the_handshake_timeout() {
    for v6 in [false, true] {
        let (at, client_copies, server_copies) = connect(v6, false, true, 0, 1);
        assert!(
            at >= Duration::from_millis(900),
            "v6 {v6}: connected at {at:?}"
        );
        assert_eq!((client_copies, server_copies), (0, 0), "v6 {v6}");
    }
}

#[test]
fn losing_both_copies_still_ends_in_a_resend() {
    for v6 in [false, true] {
        let (at, _, _) = connect(v6, true, true, 0, 2);
        assert!(
            at >= Duration::from_millis(900),
            "v6 {v6}: connected at {at:?}"
        );
    }
}

#[test]
fn fec_without_handshake_copies_sends_none() {
    for v6 in [false, true] {
        let (at, client_copies, server_copies) = connect(v6, true, false, 1, 0);
        assert_eq!((client_copies, server_copies), (0, 0), "v6 {v6}");
        assert!(
            at >= Duration::from_millis(900),
            "v6 {v6}: connected at {at:?}"
        );
    }
}
