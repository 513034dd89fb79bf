//! Hostile and broken input: malformed, truncated, replayed and bit-flipped
//! packets are dropped and counted; the amplification limit holds; idle
//! connections time out.

mod util;

use brisk_proto::streams::Priority;
use brisk_proto::{ConnectionError, Event};
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::time::Duration;
use util::*;

fn ms(x: u64) -> Instant {
    Instant::from_millis(x)
}

#[test]
fn replayed_packets_are_dropped_and_counted() {
    for family in FAMILIES {
        let (mut p, short) = connected_with_traffic(PairConfig::new(family, 20));
        let before = p.server_conn().unwrap().stats();
        for d in &short[..5] {
            p.inject(Dir::ToServer, Ecn::NotEct, d);
        }
        let after = p.server_conn().unwrap().stats();
        assert_eq!(
            after.dropped.duplicate - before.dropped.duplicate,
            5,
            "{family:?}"
        );
        assert_eq!(after.packets_received, before.packets_received);
        assert_eq!(after.stream_bytes_received, before.stream_bytes_received);
    }
}

#[test]
fn bit_flips_and_truncation_fail_authentication() {
    for family in FAMILIES {
        let (mut p, short) = connected_with_traffic(PairConfig::new(family, 21));
        let before = p.server_conn().unwrap().stats().dropped;
        let mut injected = 0;
        // Flip one bit at a time across header and payload of one packet.
        let orig = short[short.len() - 1].clone();
        for i in (0..orig.len()).step_by(37).skip(1) {
            let mut d = orig.clone();
            d[i] ^= 0x10;
            p.inject(Dir::ToServer, Ecn::NotEct, &d);
            injected += 1;
        }
        // Cut the packet short at a few places past the header.
        for cut in [20, 40, orig.len() - 1] {
            p.inject(Dir::ToServer, Ecn::NotEct, &orig[..cut]);
            injected += 1;
        }
        let after = p.server_conn().unwrap().stats().dropped;
        assert_eq!(
            after.unauthenticated - before.unauthenticated,
            injected,
            "{family:?}: {after:?}"
        );
        assert!(p.server_conn().unwrap().is_established());
    }
}

#[test]
fn garbage_and_headers_cut_short_never_create_state() {
    for family in FAMILIES {
        let (mut p, short) = connected_with_traffic(PairConfig::new(family, 22));
        let ep_before = p.server.stats();
        // Too short for a header, and pure noise.
        p.inject(Dir::ToServer, Ecn::NotEct, &short[0][..5]);
        p.inject(Dir::ToServer, Ecn::NotEct, &[]);
        for seed in 0..50 {
            let mut junk = payload(1 + (seed as usize * 97) % 1400, seed);
            p.inject(Dir::ToServer, Ecn::Ce, &junk);
            // Junk with a plausible Initial header must fail the handshake.
            junk.resize(1200, 0);
            junk[0] = 0xc0;
            junk[1..5].copy_from_slice(&0x4252_0001u32.to_be_bytes());
            junk[5] = 8;
            junk[14] = 8;
            p.inject(Dir::ToServer, Ecn::NotEct, &junk);
        }
        let ep = p.server.stats();
        assert_eq!(
            p.server.handles().count(),
            1,
            "{family:?}: only the real connection"
        );
        assert!(
            ep.malformed + ep.unknown_connection + ep.handshake_failed
                - ep_before.malformed
                - ep_before.unknown_connection
                - ep_before.handshake_failed
                >= 100,
            "{ep:?}"
        );
        // The real connection is unharmed.
        let mut bulk = Bulk::new(payload(10_000, 5));
        let id = p
            .client_conn()
            .open_stream(false, Priority::default())
            .unwrap();
        bulk.stream = Some(id);
        assert!(p.run_until(p.now + Duration::from_secs(5), |p| bulk.pump(p)));
    }
}

#[test]
fn idle_connections_time_out_unless_kept_alive() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 23));
        assert!(p.connect());
        p.run_until(ms(120_000), |p| p.client_events.contains(&Event::Closed));
        assert!(
            p.client_events
                .contains(&Event::ConnectionLost(ConnectionError::TimedOut))
        );
        assert!(
            p.server_events
                .contains(&Event::ConnectionLost(ConnectionError::TimedOut))
        );
        // 30 s of silence after the handshake.
        assert!(
            p.now >= ms(30_000) && p.now < ms(31_000),
            "{family:?}: {:?}",
            p.now
        );

        let mut cfg = PairConfig::new(family, 24);
        cfg.client.transport.keep_alive_interval = Some(Duration::from_secs(10));
        let mut p = Pair::new(cfg);
        assert!(p.connect());
        p.run_until(ms(100_000), |p| p.client_events.contains(&Event::Closed));
        assert!(!p.client_events.contains(&Event::Closed), "kept alive");
    }
}

#[test]
fn server_sends_at_most_three_times_what_it_received_before_validation() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 25));
        // Only the client's first datagram ever reaches the server.
        let mut first = true;
        p.tap = Some(Box::new(move |dir, _| {
            dir == Dir::ToClient || std::mem::take(&mut first)
        }));
        p.run_until(ms(1_000), |p| p.server_conn.is_some());
        // The server has 100 KB of 0.5-RTT data to push.
        let s = p.server_conn().unwrap();
        let id = s.open_stream(false, Priority::default()).unwrap();
        assert_eq!(s.write(id, &payload(100_000, 1)).unwrap(), 100_000);
        p.run_until(ms(20_000), |_| false);
        let s = p
            .server_conn
            .and_then(|h| p.server.connection(h))
            .map(|c| c.stats());
        let Some(s) = s else {
            // The server may already have given up; its counts went with it.
            continue;
        };
        assert!(s.bytes_received >= 1200);
        assert!(
            s.bytes_sent <= 3 * s.bytes_received,
            "{family:?}: sent {} for {}",
            s.bytes_sent,
            s.bytes_received
        );
        assert!(
            s.bytes_sent >= 3 * s.bytes_received - 1300,
            "used its allowance: {}",
            s.bytes_sent
        );
        assert!(s.amplification_blocked > 0);
    }
}

#[test]
fn validated_server_is_not_limited() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 26));
        assert!(p.connect());
        let s = p.server_conn().unwrap();
        let id = s.open_stream(false, Priority::default()).unwrap();
        s.write(id, &payload(100_000, 1)).unwrap();
        s.finish(id).unwrap();
        let mut got = 0;
        let mut buf = vec![0; 65_536];
        assert!(p.run_until(ms(5_000), |p| {
            let c = p.client_conn();
            while let Ok(r) = c.read(id, &mut buf) {
                got += r.bytes;
                if r.bytes == 0 || r.fin {
                    break;
                }
            }
            got == 100_000
        }));
        let s = p.server_conn().unwrap().stats();
        assert!(s.bytes_sent > 100_000 && s.amplification_blocked == 0);
    }
}

#[test]
fn server_refuses_connections_beyond_its_limit() {
    use brisk_proto::{ClientConfig, Endpoint};
    for family in FAMILIES {
        let mut cfg = PairConfig::new(family, 27);
        cfg.server.max_connections = 1;
        let server_key = cfg.client.server_static_key;
        let mut p = Pair::new(cfg);
        assert!(p.connect());
        // The client's first 1-RTT packet proves its address: the
        // connection leaves the half-open budget for the established one.
        let settled = p.now + 100 * MS;
        p.run_until(settled, |p| p.server.half_open() == 0);
        assert_eq!(p.server.half_open(), 0, "{family:?}");
        // A second client's first flight is refused without state.
        let mut other = Endpoint::new(99, None);
        other
            .connect(p.now, p.server_addr, ClientConfig::new(server_key))
            .unwrap();
        let mut first = Vec::new();
        other.poll_transmit(p.now, 1, &mut first).unwrap();
        p.inject(Dir::ToServer, Ecn::NotEct, &first);
        assert_eq!(p.server.stats().refused, 1, "{family:?}");
        assert_eq!(p.server.handles().count(), 1);
    }
}

#[test]
fn datagrams_for_a_forgotten_connection_are_unknown() {
    for family in FAMILIES {
        let (mut p, short) = connected_with_traffic(PairConfig::new(family, 28));
        // Routed while the connection lives (and remembered as the last
        // route): a replay is the connection's duplicate.
        p.inject(Dir::ToServer, Ecn::NotEct, &short[0]);
        assert_eq!(p.server.stats().unknown_connection, 0);
        let now = p.now;
        p.client_conn().close(now, 0, b"bye");
        p.run_until(ms(60_000), |p| p.server_events.contains(&Event::Closed));
        assert!(p.server_events.contains(&Event::Closed), "{family:?}");
        assert_eq!(p.server.handles().count(), 0);
        p.inject(Dir::ToServer, Ecn::NotEct, &short[1]);
        assert_eq!(p.server.stats().unknown_connection, 1, "{family:?}");
    }
}
