//! Forged handshakes against a server that runs a real transfer: Retry
//! before key agreement, bounded half-open state, the handshake rate
//! budget, refusal past the connection limit, the amplification limit per
//! address and stateless reset after a restart. Every scenario runs on
//! IPv4 and IPv6, seeded, in virtual time.

mod util;

use brisk_proto::Pattern;
use brisk_proto::RetryPolicy;
use brisk_proto::streams::Priority;
use brisk_proto::{ClientConfig, ConnectionError, Endpoint, Event, ServerConfig};
use brisk_proto::{MAX_RESET_LEN, MIN_RESET_LEN};
use brisk_time::Instant;
use brisk_wire::Ecn;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use util::*;

/// Where the connection IDs sit in a long header with 8-byte IDs.
const DCID_AT: std::ops::Range<usize> = 6..14;
const SCID_AT: std::ops::Range<usize> = 15..23;

/// Forged Initials: a real client's first datagram, replayed with a fresh
/// destination ID each time (as an attacker who recorded one does, at no
/// cost), from spoofed addresses. An XX copy is accepted as a new
/// handshake; an IK copy fails only after the server's Diffie-Hellman
/// work, as the prologue binds the changed ID.
struct Forger {
    template: Vec<u8>,
    family: Family,
    rng: ChaCha8Rng,
    sent: u64,
}

impl Forger {
    fn new(family: Family, pattern: Pattern, server_key: [u8; 32], seed: u64) -> Self {
        let (_, server_addr) = family.addrs();
        let mut ep = Endpoint::new(seed ^ 0xf0f0, None);
        let key = (pattern == Pattern::Ik).then_some(server_key);
        ep.connect(Instant::ZERO, server_addr, ClientConfig::new(key))
            .expect("forger connects");
        let mut template = Vec::new();
        ep.poll_transmit(Instant::ZERO, 1, &mut template)
            .expect("first flight");
        assert!(template.len() >= 1200);
        Forger {
            template,
            family,
            rng: ChaCha8Rng::seed_from_u64(seed),
            sent: 0,
        }
    }

    /// The ID the server answers forged Initials to.
    fn scid(&self) -> &[u8] {
        &self.template[SCID_AT]
    }

    fn next(&mut self) -> (SocketAddr, Vec<u8>) {
        let mut d = self.template.clone();
        self.rng.fill(&mut d[DCID_AT]);
        let port = self.rng.random_range(1024..65535);
        let ip = match self.family {
            Family::V4 => IpAddr::V4(Ipv4Addr::from(
                0xcb00_7100 | self.rng.random::<u32>() & 0xff,
            )),
            Family::V6 => IpAddr::V6(Ipv6Addr::from(
                0x2001_0db8_ffff_u128 << 80 | u128::from(self.rng.random::<u32>()),
            )),
        };
        self.sent += 1;
        (SocketAddr::new(ip, port), d)
    }
}

/// What one run measured.
#[derive(Debug)]
struct Outcome {
    /// When the 1 MB transfer was complete and verified.
    transfer_done: Instant,
    /// A client that connected in the middle of the flood, and when.
    newcomer_connected: Option<Instant>,
    /// Server connections before, at most during, and after the flood.
    conns_before: usize,
    conns_peak: usize,
    conns_after: usize,
    half_open_peak: usize,
    half_open_after: usize,
    forged: u64,
    stats: brisk_proto::EndpointStats,
}

const FLOOD_START_MS: u64 = 100;
const FLOOD_MS: u64 = 1_000;
/// Forged Initials per millisecond of virtual time (20,000 a second,
/// 24 MB/s of Initials).
const FORGED_PER_MS: u64 = 20;
const NEWCOMER_AT_MS: u64 = FLOOD_START_MS + 300;
const TRANSFER_BYTES: usize = 1_000_000;

fn run(family: Family, pattern: Pattern, retry: RetryPolicy, flood: bool, seed: u64) -> Outcome {
    let mut cfg = PairConfig::new(family, seed);
    cfg.server.admission.retry = retry;
    // Shorter than the default 5 s, so the run settles sooner.
    cfg.server.admission.half_open_timeout = 2_000 * MS;
    let server_key = cfg.server.keypair.public();
    let client_cfg = cfg.client.clone();
    let half_open_timeout = cfg.server.admission.half_open_timeout;
    let mut p = Pair::new(cfg);
    let mut forger = Forger::new(family, pattern, server_key, seed);
    // Replies to forged addresses leave the server but reach nobody.
    let forged_scid = forger.scid().to_vec();
    p.tap = Some(Box::new(move |dir, d: &mut Vec<u8>| {
        !(dir == Dir::ToClient && d[0] & 0x80 != 0 && d.get(DCID_AT) == Some(&forged_scid[..]))
    }));
    let mut bulk = Bulk::new(payload(TRANSFER_BYTES, seed));
    let mut transfer_done = None;
    let mut newcomer = None;
    let mut newcomer_connected = None;
    let flood_end = FLOOD_START_MS + FLOOD_MS;
    // The half-open timeout is never below three probe timeouts (about
    // 3 s before any RTT sample), then a second to spare.
    let settle_end = flood_end + half_open_timeout.as_millis().max(3_000) as u64 + 1_000;
    let mut conns_before = 0;
    let (mut conns_peak, mut half_open_peak) = (0, 0);
    for tick in 1..=settle_end {
        p.run_until(Instant::from_millis(tick), |p| {
            if transfer_done.is_none() && bulk.pump(p) {
                transfer_done = Some(p.now);
            }
            false
        });
        if tick == FLOOD_START_MS {
            conns_before = p.server.handles().count();
        }
        if flood && (FLOOD_START_MS..flood_end).contains(&tick) {
            for _ in 0..FORGED_PER_MS {
                let (from, d) = forger.next();
                p.server.handle_datagram(p.now, from, Ecn::NotEct, &d);
            }
        }
        if tick == NEWCOMER_AT_MS {
            let h = p.client.connect(p.now, p.server_addr, client_cfg.clone());
            newcomer = Some(h.expect("newcomer connects"));
        }
        if let Some(h) = newcomer
            && newcomer_connected.is_none()
            && p.client.connection(h).is_some_and(|c| c.is_established())
        {
            newcomer_connected = Some(p.now);
        }
        conns_peak = conns_peak.max(p.server.handles().count());
        half_open_peak = half_open_peak.max(p.server.half_open());
    }
    let transfer_done = transfer_done.expect("transfer completes");
    assert_eq!(sha256(&bulk.received), sha256(&bulk.data), "byte-exact");
    Outcome {
        transfer_done,
        newcomer_connected,
        conns_before,
        conns_peak,
        conns_after: p.server.handles().count(),
        half_open_peak,
        half_open_after: p.server.half_open(),
        forged: forger.sent,
        stats: p.server.stats(),
    }
}

#[test]
fn a_forged_handshake_flood_costs_the_server_retries_not_state() {
    let under_load = RetryPolicy::UnderLoad { half_open: 64 };
    for family in FAMILIES {
        let calm = run(family, Pattern::Xx, under_load, false, 41);
        for pattern in [Pattern::Xx, Pattern::Ik] {
            let attacked = run(family, pattern, under_load, true, 41);
            let unguarded = run(family, pattern, RetryPolicy::Never, true, 41);
            let tag = format!("{family:?} {pattern:?}: {attacked:?} vs {unguarded:?}");
            assert_eq!(attacked.forged, FLOOD_MS * FORGED_PER_MS);
            // The transfer is as fast as without the flood (virtual time
            // charges no CPU, so this checks the protocol never slowed it).
            let ratio = attacked.transfer_done.as_secs_f64() / calm.transfer_done.as_secs_f64();
            assert!(ratio <= 1.5, "{tag}: transfer {ratio:.2}x slower");
            // A client arriving mid-flood gets in within a few round trips
            // (20 ms each): a Retry, then the handshake.
            let joined = attacked.newcomer_connected.expect("newcomer connected");
            let waited = joined - Instant::from_millis(NEWCOMER_AT_MS);
            assert!(
                waited.as_millis() <= 100,
                "{tag}: newcomer waited {waited:?}"
            );
            // Nearly every forgery got a Retry, none of them state.
            assert!(
                attacked.stats.retries_sent >= attacked.forged * 99 / 100,
                "{tag}"
            );
            // Key agreements: the two real clients, then the half-open
            // threshold (64) at once and 64 a second of failed ones.
            let handshakes = attacked.stats.connections_accepted + attacked.stats.handshake_failed;
            let bound = 2 + 64 + 64 * FLOOD_MS / 1_000 + 1;
            assert!(handshakes <= bound, "{tag}: {handshakes} handshakes");
            assert!(attacked.half_open_peak <= 64 + 1, "{tag}");
            assert!(
                attacked.conns_peak <= attacked.conns_before + 64 + 1,
                "{tag}"
            );
            // Once the forged half-open handshakes time out, the server is
            // back to its own two connections.
            assert_eq!(attacked.half_open_after, 0, "{tag}");
            assert_eq!(attacked.conns_after, calm.conns_after, "{tag}");
            assert_eq!(calm.conns_after, 2, "{tag}: the transfer and the newcomer");
            // Without Retry, the same flood buys a handshake each time the
            // rate budget allows (2,000 a second) and fills the half-open
            // budget (XX), so the newcomer may wait; the bounds still hold.
            let unguarded_handshakes =
                unguarded.stats.connections_accepted + unguarded.stats.handshake_failed;
            assert!(
                unguarded_handshakes >= 10 * handshakes,
                "{tag}: retry saved too little"
            );
            assert!(unguarded.half_open_peak <= 1024, "{tag}");
            assert_eq!(unguarded.half_open_after, 0, "{tag}");
            if pattern == Pattern::Xx {
                assert!(unguarded.half_open_peak >= 1_000, "{tag}");
            }
        }
    }
}

#[test]
fn retry_always_costs_one_round_trip_and_keeps_early_data() {
    for family in FAMILIES {
        for ik in [true, false] {
            let mut cfg = PairConfig::new(family, 43);
            cfg.server.admission.retry = RetryPolicy::Always;
            if !ik {
                cfg.client.server_static_key = None;
            }
            let mut p = Pair::new(cfg);
            if ik {
                let early = brisk_proto::Idempotent::declare(b"GET /");
                p.client_conn().send_early(early).expect("early data");
            }
            assert!(p.connect(), "{family:?} ik={ik}");
            // Both sides connected after one round trip (IK) or one and a
            // half (XX), plus the Retry's round trip of 20 ms.
            let want = if ik { 40 } else { 50 };
            assert_at(
                p.now,
                Instant::from_millis(want),
                &format!("{family:?} ik={ik}"),
            );
            let s = p.server.stats();
            assert_eq!((s.retries_sent, s.connections_accepted), (1, 1));
            if ik {
                assert!(
                    p.server_events
                        .iter()
                        .any(|e| matches!(e, Event::EarlyData { len_bytes: 5, .. })),
                    "{family:?}: early data survives the Retry"
                );
            }
            if !ik {
                let mut bulk = Bulk::new(payload(200_000, 43));
                assert!(p.run_until(Instant::from_millis(5_000), |p| bulk.pump(p)));
                assert_eq!(sha256(&bulk.received), sha256(&bulk.data));
            }
        }
    }
}

/// The Retry's round trip is the client's first RTT sample (RFC 9002
/// §6.3): an Initial with the token that is lost is resent a few round
/// trips later, not at the initial one-second probe timeout. The
/// baseline is the same loss after a first Initial that was itself
/// resent, whose Retry is ambiguous and gives no sample.
#[test]
fn a_lost_initial_after_a_retry_is_resent_within_round_trips() {
    use std::cell::Cell;
    use std::rc::Rc;
    for family in FAMILIES {
        // (datagrams to the server dropped, first to last; connected by)
        for (drops, within_ms) in [(&[1u32][..], 200u64), (&[0, 2][..], 2_200)] {
            let mut cfg = PairConfig::new(family, 45);
            cfg.server.admission.retry = RetryPolicy::Always;
            let mut p = Pair::new(cfg);
            let seen = Rc::new(Cell::new(0u32));
            let counter = seen.clone();
            let drops = drops.to_vec();
            p.tap = Some(Box::new(move |dir, _| {
                if dir != Dir::ToServer {
                    return true;
                }
                let i = counter.get();
                counter.set(i + 1);
                !drops.contains(&i)
            }));
            assert!(p.connect(), "{family:?}");
            let took = p.now.as_millis();
            if within_ms < 1_000 {
                // 20 ms for the Retry, the lost Initial's probe timeout
                // of three RTTs from that sample, 20 ms for the answer.
                assert!(took <= within_ms, "{family:?}: connected at {took} ms");
            } else {
                // Two one-second timeouts: the first Initial's and, with
                // no sample, the one of the Initial with the token.
                assert!(
                    (2_000..=within_ms).contains(&took),
                    "{family:?}: connected at {took} ms"
                );
            }
            assert_eq!(p.server.stats().retries_sent, 1, "{family:?}");
        }
    }
}

#[test]
fn a_full_server_refuses_at_once_with_a_reason() {
    for family in FAMILIES {
        let mut cfg = PairConfig::new(family, 44);
        cfg.server.max_connections = 1;
        let client_cfg = cfg.client.clone();
        let mut p = Pair::new(cfg);
        assert!(p.connect());
        p.run_until(p.now + 100 * MS, |p| p.server.half_open() == 0);
        let asked = p.now;
        let h = p
            .client
            .connect(asked, p.server_addr, client_cfg)
            .expect("connect");
        let refused = |p: &mut Pair| {
            p.client_events
                .iter()
                .any(|e| matches!(e, Event::ConnectionLost(ConnectionError::Refused { .. })))
        };
        assert!(p.run_until(asked + 1_000 * MS, refused), "{family:?}");
        // One round trip (20 ms), not the 30 s idle timeout.
        assert_at(p.now, asked + 20 * MS, &format!("{family:?}"));
        let err = p
            .client_events
            .iter()
            .find_map(|e| match e {
                Event::ConnectionLost(e @ ConnectionError::Refused { .. }) => Some(e.to_string()),
                _ => None,
            })
            .unwrap_or_default();
        assert_eq!(
            err, "server refused the connection: too many connections",
            "{family:?}"
        );
        p.run_until(p.now + 100 * MS, |_| false);
        assert!(
            p.client.connection(h).is_none(),
            "the refused connection is gone"
        );
        assert!(p.client_conn().is_established(), "the first one lives on");
        assert_eq!(p.server.handles().count(), 1);
        assert_eq!(p.server.stats().refused, 1);
    }
}

/// Drives a lone server endpoint's timers for `for_ms`, collecting what
/// it sends, by destination.
fn drain_server(server: &mut Endpoint, now: &mut Instant, for_ms: u64) -> Vec<(SocketAddr, usize)> {
    let end = *now + std::time::Duration::from_millis(for_ms);
    let mut out = Vec::new();
    loop {
        let mut d = Vec::new();
        while let Some(t) = server.poll_transmit(*now, 1, &mut d) {
            out.push((t.destination, t.len_bytes));
            d.clear();
        }
        while server.poll_event().is_some() {}
        match server.poll_timeout() {
            Some(t) if t <= end => {
                *now = (*now).max(t);
                server.handle_timeout(*now);
            }
            _ => break,
        }
    }
    *now = end;
    out
}

#[test]
fn amplification_is_limited_per_address_not_per_connection() {
    for family in FAMILIES {
        let seed = 45;
        let keys = brisk_proto::crypto::Keypair::generate(&mut ChaCha8Rng::seed_from_u64(seed));
        let mut config = ServerConfig::new(keys.clone());
        config.admission.retry = RetryPolicy::Never;
        let mut forger = Forger::new(family, Pattern::Xx, keys.public(), seed);
        let victim_ip = forger.next().0.ip();
        let elsewhere = SocketAddr::new(family.addrs().0.ip(), 999);
        for copies in [0, 40] {
            let mut server = Endpoint::new(seed, Some(config.clone()));
            let mut now = Instant::ZERO;
            let mut from_victim = 0;
            let mut initials = Vec::new();
            // Five handshakes in the victim's name, from five ports.
            for port in 1000..1005 {
                let (_, d) = forger.next();
                let victim = SocketAddr::new(victim_ip, port);
                server.handle_datagram(now, victim, Ecn::NotEct, &d);
                from_victim += d.len();
                initials.push(d);
            }
            let mut out = drain_server(&mut server, &mut now, 10);
            // Copies of them from another address, over two seconds.
            for i in 0..copies {
                for d in &initials {
                    server.handle_datagram(now, elsewhere, Ecn::NotEct, d);
                }
                out.extend(drain_server(&mut server, &mut now, 50 + i % 3));
            }
            out.extend(drain_server(&mut server, &mut now, 10_000));
            let to_victim: usize = out
                .iter()
                .filter(|(a, _)| a.ip() == victim_ip)
                .map(|(_, n)| n)
                .sum();
            assert!(
                to_victim <= 3 * from_victim,
                "{family:?} copies={copies}: {to_victim} bytes sent for {from_victim} received"
            );
            assert!(to_victim > 0);
            assert!(
                out.iter().all(|(a, _)| a.ip() == victim_ip),
                "nothing goes to the copier"
            );
            assert_eq!(server.stats().connections_accepted, 5, "{family:?}");
        }
    }
}

#[test]
fn a_restarted_server_resets_its_old_connections_at_once() {
    for family in FAMILIES {
        for same_key in [true, false] {
            let cfg = PairConfig::new(family, 46);
            let server_cfg = cfg.server.clone();
            let (mut p, _) = connected_with_traffic(cfg);
            // The server restarts: same key file, nothing else kept.
            let restarted = if same_key {
                server_cfg
            } else {
                let other =
                    brisk_proto::crypto::Keypair::generate(&mut ChaCha8Rng::seed_from_u64(7));
                ServerConfig::new(other)
            };
            p.server = Endpoint::new(4242, Some(restarted));
            p.server_conn = None;
            let asked = p.now;
            let c = p.client_conn();
            let id = c.open_stream(true, Priority::default()).expect("stream");
            c.write(id, b"still there?").expect("write");
            let reset = |p: &mut Pair| {
                p.client_events
                    .contains(&Event::ConnectionLost(ConnectionError::StatelessReset))
            };
            let seen = p.run_until(asked + 2_000 * MS, reset);
            assert_eq!(seen, same_key, "{family:?} same_key={same_key}");
            if same_key {
                assert_at(
                    p.now,
                    asked + 20 * MS,
                    &format!("{family:?}: one round trip"),
                );
                assert_eq!(p.client.stats().resets_received, 1);
                assert!(p.server.stats().resets_sent >= 1);
            } else {
                // A reset under another key is not believed.
                assert_eq!(p.client.stats().resets_received, 0);
            }
        }
    }
}

#[test]
fn resets_shrink_are_rate_limited_and_never_answer_tiny_packets() {
    for family in FAMILIES {
        let keys = brisk_proto::crypto::Keypair::generate(&mut ChaCha8Rng::seed_from_u64(47));
        let mut server = Endpoint::new(47, Some(ServerConfig::new(keys)));
        let (from, _) = family.addrs();
        let now = Instant::from_millis(1);
        let mut unknown = vec![0x40u8; 1200];
        unknown[1..9].copy_from_slice(&[7; 8]);
        server.handle_datagram(now, from, Ecn::NotEct, &unknown);
        let mut d = Vec::new();
        let r = server.poll_transmit(now, 1, &mut d).expect("a reset");
        assert_eq!(r.len_bytes, MAX_RESET_LEN, "{family:?}");
        // Two servers answering each other's resets stop at the minimum.
        let mut len = r.len_bytes;
        let mut at = now;
        while len > MIN_RESET_LEN {
            at += 1_000 * MS;
            let mut echo = vec![0x40u8; len];
            echo[1..9].copy_from_slice(&[8; 8]);
            server.handle_datagram(at, from, Ecn::NotEct, &echo);
            d.clear();
            match server.poll_transmit(at, 1, &mut d) {
                Some(t) => {
                    assert!(t.len_bytes < len);
                    len = t.len_bytes;
                }
                None => break,
            }
        }
        let tiny = vec![0x40u8; MIN_RESET_LEN];
        server.handle_datagram(at + 1_000 * MS, from, Ecn::NotEct, &tiny);
        assert!(
            server
                .poll_transmit(at + 1_000 * MS, 1, &mut Vec::new())
                .is_none(),
            "{family:?}"
        );
        // A burst of 10,000 unknown packets at one instant draws a handful.
        let later = at + 10_000 * MS;
        let before = server.stats().resets_sent;
        for _ in 0..10_000 {
            server.handle_datagram(later, from, Ecn::NotEct, &unknown);
        }
        let sent = server.stats().resets_sent - before;
        assert!((1..=10).contains(&sent), "{family:?}: {sent} resets");
        assert!(server.stats().stateless_dropped >= 9_990);
    }
}
