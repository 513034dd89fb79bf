//! Replayed first flights: a server hands a first flight's early data to
//! the application at most once, refuses it outside its time window, and
//! keeps its memory of used flights bounded under a flood
//! (docs/PROTOCOL.md §3.3).

mod util;

use brisk_proto::{AntiReplayConfig, ClientConfig, Endpoint, Event, Idempotent, RetryPolicy};
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::net::SocketAddr;
use std::time::Duration;
use util::*;

/// Early data events the server reported so far.
fn early_events(p: &Pair) -> usize {
    p.server_events
        .iter()
        .filter(|e| matches!(e, Event::EarlyData { .. }))
        .count()
}

/// Another address in the client's family, as an attacker replaying from
/// elsewhere would use.
fn other_addr(p: &Pair, i: u16) -> SocketAddr {
    let mut a = p.client_addr;
    a.set_port(20_000 + i);
    a
}

/// Runs a connection whose first flight carries `request` as early data,
/// closes it, waits until the server forgot it, and returns the first
/// flight's datagram as the wire carried it.
fn first_flight_of_a_closed_connection(p: &mut Pair, request: &[u8]) -> Vec<u8> {
    p.record = true;
    let id = p
        .client_conn()
        .send_early(Idempotent::declare(request))
        .expect("IK before the first flight");
    p.client_conn().finish(id).expect("stream open");
    assert!(p.connect());
    let now = p.now;
    p.client_conn().close(now, 0, b"done");
    // It drains for three probe timeouts first.
    p.run_until(Instant::from_millis(6_000), |p| {
        p.server.handles().count() == 0
    });
    assert_eq!(p.server.handles().count(), 0, "the server forgot it");
    p.record = false;
    p.history
        .iter()
        .find(|(dir, _, _)| *dir == Dir::ToServer)
        .map(|(_, _, d)| d.clone())
        .expect("a first flight")
}

/// Replays `flight` 22 times, every 200 ms, alternately from the client's
/// own address and from others, while a second, genuine connection with
/// early data runs; returns the server's early data events in all. While
/// the handshake a copy started is half-open, a further copy (same
/// connection IDs) is taken for a resent Initial and never reaches the
/// register; so before each copy the attacker sends a fresh first flight
/// of its own (no early data) that evicts it, with the server keeping one
/// half-open handshake here (by default 1,024, and a flood does the same).
fn replay_22_times_beside_a_live_connection(mut cfg: PairConfig) -> (usize, Pair) {
    cfg.server.admission.max_half_open = 1;
    let client_cfg = cfg.client.clone();
    let mut p = Pair::new(cfg);
    let flight = first_flight_of_a_closed_connection(&mut p, b"GET /first");
    let now = p.now;
    let mut forger = Endpoint::new(99, None);
    let live = p
        .client
        .connect(now, p.server_addr, client_cfg.clone())
        .expect("connect");
    p.client_conn = live;
    p.server_conn = None;
    let id = p
        .client_conn()
        .send_early(Idempotent::declare(b"GET /live"))
        .expect("IK before the first flight");
    p.client_conn().finish(id).expect("stream open");
    for i in 0..22u16 {
        let at = p.now + Duration::from_millis(200);
        p.run_until(at, |_| false);
        let from = if i % 2 == 0 {
            p.client_addr
        } else {
            other_addr(&p, i)
        };
        let now = p.now;
        let evictor = forged_first_flight(&mut forger, &client_cfg, p.server_addr, now, false);
        p.server
            .handle_datagram(now, other_addr(&p, 100 + i), Ecn::NotEct, &evictor);
        // The evicted handshake is forgotten once its end is reported.
        let at = p.now + Duration::from_millis(5);
        p.run_until(at, |_| false);
        let now = p.now;
        p.server.handle_datagram(now, from, Ecn::NotEct, &flight);
    }
    let deadline = p.now + Duration::from_secs(1);
    p.run_until(deadline, |_| false);
    assert!(
        p.client_events
            .iter()
            .filter(|e| **e == Event::Connected)
            .count()
            >= 2,
        "the live connection completed beside the replays"
    );
    (early_events(&p), p)
}

#[test]
fn a_replayed_first_flight_delivers_its_early_data_once() {
    for family in FAMILIES {
        let (events, p) = replay_22_times_beside_a_live_connection(PairConfig::new(family, 11));
        let s = p.server.stats();
        println!(
            "{family:?}: 22 replays beside a live connection: {events} early data events, \
             {} replays refused, {} flights remembered",
            s.early_data_replayed, s.anti_replay_entries
        );
        // The original and the live connection, nothing from the replays.
        assert_eq!(events, 2, "{family:?}");
        assert_eq!(s.early_data_replayed, 22, "{family:?}");
        assert_eq!(s.anti_replay_entries, 2, "{family:?}");
    }
}

#[test]
fn without_the_register_every_replay_reaches_the_application() {
    // The baseline the register is measured against.
    for family in FAMILIES {
        let mut cfg = PairConfig::new(family, 11);
        cfg.server.anti_replay = None;
        let (events, _) = replay_22_times_beside_a_live_connection(cfg);
        println!("{family:?}: without the register: {events} early data events");
        assert_eq!(events, 24, "{family:?}");
    }
}

#[test]
fn a_replay_after_the_window_is_refused_by_its_time() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 12));
        let flight = first_flight_of_a_closed_connection(&mut p, b"GET /old");
        assert_eq!(p.server.stats().anti_replay_entries, 1);
        // 10 s window: 11 s after it was sent the flight is too old.
        let now = Instant::from_millis(11_000);
        p.server
            .handle_datagram(now, other_addr(&p, 1), Ecn::NotEct, &flight);
        let s = p.server.stats();
        while let Some((_, e)) = p.server.poll_event() {
            p.server_events.push(e);
        }
        assert_eq!(early_events(&p), 1, "{family:?}");
        assert_eq!(s.early_data_outside_window, 1, "{family:?}");
        assert_eq!(
            s.anti_replay_entries, 0,
            "{family:?}: forgotten once too old"
        );
    }
}

/// The round trip after which the server first reads the request.
fn request_read_at(cfg: PairConfig) -> (Instant, Pair) {
    let mut p = Pair::new(cfg);
    let id = p
        .client_conn()
        .send_early(Idempotent::declare(b"GET /skewed"))
        .expect("IK before the first flight");
    p.client_conn().finish(id).expect("stream open");
    let mut got = Vec::new();
    let mut at = None;
    p.run_until(Instant::from_millis(2_000), |p| {
        let now = p.now;
        if let Some(s) = p.server_conn() {
            let mut buf = [0u8; 64];
            while let Ok(r) = s.read(id, &mut buf) {
                if r.bytes > 0 {
                    at.get_or_insert(now);
                }
                got.extend_from_slice(&buf[..r.bytes]);
                if r.bytes == 0 || r.fin {
                    break;
                }
            }
        }
        got == b"GET /skewed"
    });
    assert_eq!(got, b"GET /skewed", "the request arrives either way");
    (at.expect("read"), p)
}

#[test]
fn a_client_clock_outside_the_window_costs_one_round_trip_not_the_connection() {
    for family in FAMILIES {
        let (in_window, _) = request_read_at(PairConfig::new(family, 13));
        let mut cfg = PairConfig::new(family, 13);
        cfg.client.wall_clock_at_zero = Duration::from_secs(60);
        let (skewed, p) = request_read_at(cfg);
        println!(
            "{family:?}: request read at {:.1} ms (clock in window), {:.1} ms (client 60 s ahead)",
            in_window.as_secs_f64() * 1e3,
            skewed.as_secs_f64() * 1e3
        );
        // 10 ms each way: with the first flight, or after one more round
        // trip with the client's first 1-RTT packet.
        assert_at(in_window, Instant::from_millis(10), &format!("{family:?}"));
        assert_at(skewed, Instant::from_millis(30), &format!("{family:?}"));
        assert_eq!(p.server.stats().early_data_outside_window, 1);
        assert!(
            !p.server_events
                .iter()
                .any(|e| matches!(e, Event::EarlyData { .. }))
        );
    }
}

/// A server that lets every Initial in at once, so a flood reaches the
/// register instead of stopping at admission.
fn open_server(cfg: &mut PairConfig, capacity: usize) {
    cfg.server.anti_replay = Some(AntiReplayConfig {
        window: Duration::from_secs(10),
        capacity,
    });
    cfg.server.admission.retry = RetryPolicy::Never;
    // The first flight's handshake is evicted long before it is replayed
    // (see above).
    cfg.server.admission.max_half_open = 1_000;
    cfg.server.admission.handshakes_per_s = 1_000_000;
    cfg.server.admission.handshake_burst = 1_000_000;
}

/// The datagram of a fresh client's first flight, with early data or not.
fn forged_first_flight(
    client: &mut Endpoint,
    cfg: &ClientConfig,
    to: SocketAddr,
    now: Instant,
    early: bool,
) -> Vec<u8> {
    let h = client.connect(now, to, cfg.clone()).expect("connect");
    let conn = client.connection_mut(h).expect("just made");
    if early {
        conn.send_early(Idempotent::declare(b"GET /flood"))
            .expect("IK before the first flight");
    }
    let mut buf = Vec::new();
    client
        .poll_transmit(now, 1, &mut buf)
        .expect("first flight");
    client
        .connection_mut(h)
        .expect("still there")
        .close(now, 0, b"");
    buf
}

#[test]
fn a_flood_of_distinct_first_flights_stays_within_the_bound() {
    const CAPACITY: usize = 500;
    const FLOOD: u64 = 2_000;
    for family in FAMILIES {
        let mut cfg = PairConfig::new(family, 14);
        open_server(&mut cfg, CAPACITY);
        let client_cfg = cfg.client.clone();
        let mut p = Pair::new(cfg);
        let mut forger = Endpoint::new(99, None);
        let mut first = None;
        let mut most = 0;
        for i in 0..FLOOD {
            // One flight a millisecond, each from its own port.
            let now = Instant::from_millis(1_000 + i);
            let flight = forged_first_flight(&mut forger, &client_cfg, p.server_addr, now, true);
            p.server.handle_datagram(
                now,
                other_addr(&p, (i % 40_000) as u16),
                Ecn::NotEct,
                &flight,
            );
            first.get_or_insert(flight);
            most = most.max(p.server.stats().anti_replay_entries);
        }
        while let Some((_, e)) = p.server.poll_event() {
            p.server_events.push(e);
        }
        let flooded = early_events(&p);
        // The first flight again: forgotten, so refused as undecidable.
        let now = Instant::from_millis(1_000 + FLOOD);
        let first = first.expect("flood sent");
        p.server
            .handle_datagram(now, other_addr(&p, 1), Ecn::NotEct, &first);
        while let Some((_, e)) = p.server.poll_event() {
            p.server_events.push(e);
        }
        let s = p.server.stats();
        println!(
            "{family:?}: {FLOOD} distinct first flights: at most {most} remembered (bound \
             {CAPACITY}), {flooded} used; the first replayed after: {} undecidable",
            s.early_data_undecidable
        );
        assert!(most <= CAPACITY as u64, "{family:?}: {most}");
        assert_eq!(
            flooded as u64, FLOOD,
            "{family:?}: each distinct flight used once"
        );
        assert_eq!(
            early_events(&p) as u64,
            FLOOD,
            "{family:?}: the replay used nothing"
        );
        assert_eq!(s.early_data_undecidable, 1, "{family:?}");
    }
}
