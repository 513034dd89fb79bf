//! The optimizer under hostile input, on stable Rust: seeded sessions whose
//! packets are mutated (bytes flipped, cut, duplicated, reordered) or
//! replaced by well-formed, checksummed segments with random fields on the
//! tracked tuples. Nothing may panic, the buffers stay within their
//! budget, and every datagram out is either one that came in or a valid
//! TCP segment. `BRISK_FUZZ_RUNS=N` runs N sessions per family (default 300).

mod support;

use brisk_optimizer::{Config, Optimizer, Side};
use brisk_time::Instant;
use brisk_wire::ip::parse_tcp;
use brisk_wire::tcp::{SackBlock, TcpFlags, TcpOption};
use std::collections::HashSet;
use std::time::Duration;
use support::*;

/// splitmix64: a tiny seeded generator, enough to pick mutations.
struct Rand(u64);

impl Rand {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A session as a list of packets: a handshake, server data and client
/// ACKs with SACK blocks, written by the test's own session helpers.
fn script(f: Family, r: &mut Rand) -> Vec<(Side, Vec<u8>)> {
    let mut s = Session::new(f, Config::default());
    s.ts = r.below(2) == 0;
    let mut v = Vec::new();
    let syn = tcp(
        s.client,
        s.server,
        s.cisn,
        0,
        TcpFlags::SYN,
        65535,
        syn_options(s.ts, Some(7)),
        &[],
    );
    v.push((Side::Client, syn));
    let mut sa = vec![
        TcpOption::Mss(1460),
        TcpOption::SackPermitted,
        TcpOption::WindowScale(9),
    ];
    if s.ts {
        sa.push(TcpOption::Timestamps {
            tsval: 1,
            tsecr: 1000,
        });
    }
    let synack = tcp(
        s.server,
        s.client,
        s.sisn,
        s.cisn.wrapping_add(1),
        TcpFlags::SYN | TcpFlags::ACK,
        65535,
        sa,
        &[],
    );
    v.push((Side::Server, synack));
    v.push((Side::Client, s.client_ack_datagram(0, 1 << 20, &[])));
    let m = MSS as u64;
    for i in 0..40u64 {
        v.push((Side::Server, s.server_data_datagram(i * m, MSS, i == 39)));
        if i % 3 == 2 {
            let hole = r.below(i + 1);
            v.push((
                Side::Client,
                s.client_ack_datagram(hole * m, 1 << 20, &[((hole + 1) * m, (i + 1) * m)]),
            ));
        }
    }
    v.push((
        Side::Client,
        s.client_ack_datagram(40 * m + 1, 1 << 20, &[]),
    ));
    v
}

/// A checksummed segment on the session's tuple with random fields.
fn random_segment(f: Family, r: &mut Rand) -> (Side, Vec<u8>) {
    let s = Session::new(f, Config::default());
    let side = if r.below(2) == 0 {
        Side::Client
    } else {
        Side::Server
    };
    let (from, to) = match side {
        Side::Client => (s.client, s.server),
        Side::Server => (s.server, s.client),
    };
    let near = |r: &mut Rand, base: u32| {
        base.wrapping_add((r.below(200_000) as u32).wrapping_sub(100_000))
    };
    let seq = if side == Side::Server {
        near(r, s.sisn)
    } else {
        near(r, s.cisn)
    };
    let ack = if side == Side::Server {
        near(r, s.cisn)
    } else {
        near(r, s.sisn)
    };
    let flags = TcpFlags::from_bits_truncate(r.below(0x200) as u16);
    let mut options = Vec::new();
    for _ in 0..r.below(3) {
        options.push(match r.below(6) {
            0 => TcpOption::Mss(r.next() as u16),
            1 => TcpOption::WindowScale(r.next() as u8),
            2 => TcpOption::SackPermitted,
            3 => TcpOption::Timestamps {
                tsval: r.next() as u32,
                tsecr: r.next() as u32,
            },
            4 => TcpOption::Sack(vec![SackBlock {
                left: near(r, s.sisn),
                right: near(r, s.sisn),
            }]),
            _ => TcpOption::Unknown {
                kind: 99,
                data: vec![r.next() as u8; r.below(6) as usize],
            },
        });
    }
    let payload = vec![r.next() as u8; r.below(1500) as usize];
    (
        side,
        tcp(
            from,
            to,
            seq,
            ack,
            flags,
            r.next() as u16,
            options,
            &payload,
        ),
    )
}

fn run(f: Family, seed: u64, config: &Config) {
    let mut r = Rand(seed);
    let mut opt = Optimizer::new(config.clone());
    let mut now = Instant::from_millis(1);
    let mut inputs: HashSet<Vec<u8>> = HashSet::new();
    let packets = script(f, &mut r);
    let mut queue: Vec<(Side, Vec<u8>)> = Vec::new();
    for p in &packets {
        match r.below(10) {
            0 => {
                let mut d = p.1.clone();
                if !d.is_empty() {
                    let i = r.below(d.len() as u64) as usize;
                    d[i] ^= 1 << r.below(8);
                }
                queue.push((p.0, d));
            }
            1 => {
                let mut d = p.1.clone();
                d.truncate(r.below(d.len() as u64 + 1) as usize);
                queue.push((p.0, d));
            }
            2 => {
                queue.push(p.clone());
                queue.push(p.clone());
            }
            3 => queue.push(random_segment(f, &mut r)),
            4 if !queue.is_empty() => {
                let i = r.below(queue.len() as u64) as usize;
                queue.insert(i, p.clone());
            }
            _ => queue.push(p.clone()),
        }
    }
    for (side, d) in queue {
        now += Duration::from_micros(r.below(20_000));
        while let Some(t) = opt.poll_timeout() {
            if t > now {
                break;
            }
            opt.handle_timeout(t.max(Instant::from_millis(1)));
        }
        inputs.insert(d.clone());
        opt.handle_packet(now, side, d);
        if r.below(50) == 0 {
            opt.stop_all();
        }
        while let Some(t) = opt.poll_transmit() {
            assert!(
                inputs.contains(&t.datagram) || parse_tcp(&t.datagram).is_ok(),
                "seed {seed}: an output neither passed through nor valid TCP"
            );
        }
        assert!(
            opt.held_bytes() <= config.max_total_buffer_bytes,
            "seed {seed}"
        );
    }
    // Left alone, every timer runs down without panicking or spinning.
    let mut steps = 0;
    while let Some(t) = opt.poll_timeout() {
        opt.handle_timeout(t);
        while opt.poll_transmit().is_some() {}
        steps += 1;
        assert!(steps < 100_000, "seed {seed}: timers never settle");
    }
    assert_eq!(
        opt.connection_count(),
        0,
        "seed {seed}: idle connections are forgotten"
    );
    assert_eq!(opt.held_bytes(), 0, "seed {seed}");
}

#[test]
fn mutated_sessions_never_panic_and_stay_within_budget() {
    let runs: u64 = std::env::var("BRISK_FUZZ_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let config = Config {
        max_total_buffer_bytes: 20_000,
        max_connection_buffer_bytes: 15_000,
        ..Config::default()
    };
    for f in FAMILIES {
        for seed in 0..runs {
            run(f, seed, &config);
            run(f, seed, &Config::default());
        }
    }
}
