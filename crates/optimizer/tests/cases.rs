//! Deterministic behaviour cases driven by `(now, packet)`: each written
//! once and run for IPv4 and IPv6, most over a range of positions or sizes.

mod support;

use brisk_optimizer::{Config, Optimizer, Phase, Reason, Side, Transmit};
use brisk_time::Instant;
use brisk_wire::tcp::{TcpFlags, TcpOption};
use std::time::Duration;
use support::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn phase(s: &Session) -> Option<Phase> {
    s.opt.connection(&s.key()).map(|c| c.phase)
}

#[test]
fn clean_handshakes_pass_untouched_and_start_optimizing() {
    let mut cases = 0;
    for f in FAMILIES {
        for ts in [false, true] {
            for wscale in [0u8, 2, 7, 14] {
                let mut s = Session::new(f, Config::default());
                s.ts = ts;
                s.wscale = wscale;
                s.handshake();
                assert_eq!(
                    phase(&s),
                    Some(Phase::Optimizing),
                    "{f:?} ts {ts} ws {wscale}"
                );
                assert_eq!(s.opt.stats().optimized_connections, 1);
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 16);
}

/// Runs a handshake whose SYN (or SYN-ACK) options are `syn` (`synack`),
/// then one server segment; returns the session and that segment's outputs.
fn odd_handshake(
    f: Family,
    syn: Vec<TcpOption>,
    synack: Vec<TcpOption>,
    syn_payload: &[u8],
) -> (Session, Vec<Transmit>) {
    let mut s = Session::new(f, Config::default());
    s.ts = false;
    let d = tcp(
        s.client,
        s.server,
        s.cisn,
        0,
        TcpFlags::SYN,
        65535,
        syn,
        syn_payload,
    );
    assert_eq!(
        s.feed(Side::Client, d.clone()),
        vec![Transmit {
            toward: Side::Server,
            datagram: d
        }]
    );
    let d = tcp(
        s.server,
        s.client,
        s.sisn,
        s.cisn.wrapping_add(1 + syn_payload.len() as u32),
        TcpFlags::SYN | TcpFlags::ACK,
        65535,
        synack,
        &[],
    );
    assert_eq!(
        s.feed(Side::Server, d.clone()),
        vec![Transmit {
            toward: Side::Client,
            datagram: d
        }]
    );
    let ack = s.client_ack_datagram(0, 1 << 20, &[]);
    s.feed(Side::Client, ack);
    let data = s.server_data_datagram(0, MSS, false);
    let out = s.feed(Side::Server, data.clone());
    assert_eq!(
        out,
        vec![Transmit {
            toward: Side::Client,
            datagram: data
        }],
        "untouched, no local ACK"
    );
    (s, out)
}

#[test]
fn unknown_or_fast_open_syn_options_are_never_optimized_and_reach_the_peer() {
    let good = || syn_options(false, Some(7));
    let odd: Vec<TcpOption> = vec![
        TcpOption::Unknown {
            kind: 30,
            data: vec![0, 0x81, 1, 2, 3, 4, 5, 6, 7, 8],
        },
        TcpOption::Unknown {
            kind: 253,
            data: vec![0x12, 0x34],
        },
        TcpOption::Unknown {
            kind: 29,
            data: vec![0; 4],
        },
        TcpOption::Unknown {
            kind: 69,
            data: vec![1, 2],
        },
        TcpOption::FastOpen(vec![]),
        TcpOption::FastOpen(vec![9; 8]),
    ];
    let mut cases = 0;
    for f in FAMILIES {
        for o in &odd {
            for on_synack in [false, true] {
                let mut with = good();
                with.push(o.clone());
                let (syn, synack) = if on_synack {
                    (good(), with)
                } else {
                    (with, good())
                };
                let (s, _) = odd_handshake(f, syn, synack, &[]);
                assert_eq!(
                    s.opt.stats().refused.get(&Reason::UnknownSynOption),
                    Some(&1),
                    "{f:?} {o:?}"
                );
                assert_eq!(phase(&s), Some(Phase::PassThrough));
                cases += 1;
            }
        }
        // A SYN with data (Fast Open without the option) is left alone too.
        let (s, _) = odd_handshake(f, good(), good(), b"GET");
        assert_eq!(
            s.opt.stats().refused.get(&Reason::UnknownSynOption),
            Some(&1)
        );
        cases += 1;
    }
    assert_eq!(cases, 26);
}

#[test]
fn a_handshake_without_sack_is_not_optimized() {
    for f in FAMILIES {
        for (c, sv) in [(false, true), (true, false), (false, false)] {
            let o = |sack: bool| {
                let mut v = vec![TcpOption::Mss(1400)];
                if sack {
                    v.push(TcpOption::SackPermitted);
                }
                v
            };
            let (s, _) = odd_handshake(f, o(c), o(sv), &[]);
            assert_eq!(s.opt.stats().refused.get(&Reason::NoSack), Some(&1));
        }
    }
}

#[test]
fn a_syn_seen_in_both_directions_is_a_loop_and_never_optimized() {
    for f in FAMILIES {
        let mut s = Session::new(f, Config::default());
        let syn = s.client_syn(s.cisn);
        s.feed(Side::Client, syn.clone());
        let out = s.feed(Side::Server, syn.clone());
        assert_eq!(
            out,
            vec![Transmit {
                toward: Side::Client,
                datagram: syn
            }]
        );
        assert_eq!(s.opt.stats().refused.get(&Reason::SynSeenTwice), Some(&1));
        assert_eq!(phase(&s), Some(Phase::PassThrough));
        // A second SYN with another ISN from the client is odd as well.
        let mut s = Session::new(f, Config::default());
        let syn = s.client_syn(s.cisn);
        s.feed(Side::Client, syn.clone());
        s.feed(Side::Client, syn);
        assert_eq!(
            phase(&s),
            Some(Phase::SynSeen),
            "a retransmitted SYN is fine"
        );
        let syn2 = s.client_syn(s.cisn ^ 1);
        s.feed(Side::Client, syn2);
        assert_eq!(phase(&s), Some(Phase::PassThrough));
    }
}

#[test]
fn asymmetric_routing_is_never_optimized() {
    for f in FAMILIES {
        // SYN and ACK seen, SYN-ACK not.
        let mut s = Session::new(f, Config::default());
        let syn = s.client_syn(s.cisn);
        s.feed(Side::Client, syn);
        let ack = s.client_ack_datagram(0, 1 << 20, &[]);
        s.feed(Side::Client, ack);
        assert_eq!(
            s.opt.stats().refused.get(&Reason::AsymmetricRouting),
            Some(&1)
        );
        let data = s.server_data_datagram(0, MSS, false);
        assert_eq!(
            s.feed(Side::Server, data.clone()),
            vec![Transmit {
                toward: Side::Client,
                datagram: data
            }]
        );
        // Only the downlink seen: nothing is tracked, everything passes.
        let mut s = Session::new(f, Config::default());
        for i in 0..5 {
            let data = s.server_data_datagram(i * MSS as u64, MSS, false);
            assert_eq!(
                s.feed(Side::Server, data.clone()),
                vec![Transmit {
                    toward: Side::Client,
                    datagram: data
                }]
            );
        }
        assert_eq!(s.opt.connection_count(), 0);
        // An optimized connection's packet arriving on the wrong side.
        let mut s = Session::new(f, Config::default());
        s.handshake();
        let ack = s.client_ack_datagram(0, 1 << 20, &[]);
        assert_eq!(
            s.feed(Side::Server, ack.clone()),
            vec![Transmit {
                toward: Side::Client,
                datagram: ack
            }]
        );
        assert_eq!(phase(&s), Some(Phase::PassThrough));
        assert_eq!(s.opt.stats().stopped.get(&Reason::WrongSide), Some(&1));
    }
}

#[test]
fn broken_or_non_tcp_datagrams_pass_untouched_and_start_nothing() {
    let mut cases = 0;
    for f in FAMILIES {
        let s0 = Session::new(f, Config::default());
        let syn = s0.client_syn(s0.cisn);
        let ip_len = if f == Family::V4 { 20 } else { 40 };
        let mut variants = Vec::new();
        // Every byte of the TCP header flipped in turn: a bad checksum.
        for i in ip_len..syn.len() {
            let mut d = syn.clone();
            d[i] ^= 0x40;
            variants.push((d, "flipped"));
        }
        // Cut short inside the TCP header, IP length fixed to match.
        for cut in [ip_len, ip_len + 4, ip_len + 19, ip_len + 25] {
            let mut d = syn[..cut].to_vec();
            if f == Family::V4 {
                d[2..4].copy_from_slice(&(cut as u16).to_be_bytes());
                d[10..12].fill(0);
                let c = brisk_wire::checksum::of(&d[..20]);
                d[10..12].copy_from_slice(&c.to_be_bytes());
            } else {
                d[4..6].copy_from_slice(&((cut - 40) as u16).to_be_bytes());
            }
            variants.push((d, "truncated"));
        }
        // UDP.
        let udp = brisk_wire::udp_datagram(s0.client, s0.server, brisk_wire::Ecn::NotEct, b"quic")
            .unwrap();
        variants.push((udp, "udp"));
        variants.push((vec![0x45, 0, 0], "garbage"));
        for (d, what) in variants {
            let mut s = Session::new(f, Config::default());
            let out = s.feed(Side::Client, d.clone());
            assert_eq!(
                out,
                vec![Transmit {
                    toward: Side::Server,
                    datagram: d
                }],
                "{f:?} {what}"
            );
            assert_eq!(s.opt.connection_count(), 0, "{f:?} {what}");
            cases += 1;
        }
    }
    assert!(cases > 80, "{cases}");
}

#[test]
fn server_data_is_acknowledged_in_the_clients_name_and_delivered_byte_for_byte() {
    for f in FAMILIES {
        for ts in [false, true] {
            let mut s = Session::new(f, Config::default());
            s.ts = ts;
            s.handshake();
            let d = s.server_data_datagram(0, MSS, false);
            let out = s.feed(Side::Server, d.clone());
            assert_eq!(out.len(), 2);
            let ack = out
                .iter()
                .find(|t| t.toward == Side::Server)
                .expect("a local ACK");
            let p = parse(ack);
            assert_eq!((p.src, p.dst), (s.client.ip(), s.server.ip()));
            assert_eq!(
                (p.tcp.src_port, p.tcp.dst_port),
                (s.client.port(), s.server.port())
            );
            assert_eq!(
                p.tcp.seq_number,
                s.cisn.wrapping_add(1),
                "the client's sequence number"
            );
            assert_eq!(p.tcp.ack_number, s.sseq(MSS as u64));
            // The client's 1 MiB right edge at the client's scale, less what is held.
            assert_eq!(
                u64::from(p.tcp.window) << s.wscale,
                ((1u64 << 20) - MSS as u64) >> s.wscale << s.wscale
            );
            if ts {
                assert_eq!(
                    p.tcp.timestamps(),
                    Some((2000, 5000)),
                    "client's TSval, server's TSval echoed"
                );
            } else {
                assert_eq!(p.tcp.timestamps(), None);
            }
            assert!(out.contains(&Transmit {
                toward: Side::Client,
                datagram: d
            }));
            // The client's ACK of it is absorbed.
            assert!(s.client_ack(MSS as u64, &[]).is_empty());
            assert_eq!(s.opt.stats().client_acks_absorbed, 1);
            assert_eq!(s.opt.held_bytes(), 0);
        }
    }
}

#[test]
fn client_data_with_an_old_ack_is_forwarded_with_the_ack_moved_forward() {
    for f in FAMILIES {
        let mut s = Session::new(f, Config::default());
        s.handshake();
        s.server_burst(0, 3);
        let mut opts = s.ts_opt(2001, 5000);
        opts.extend([
            TcpOption::Nop,
            TcpOption::Nop,
            TcpOption::Sack(vec![brisk_wire::tcp::SackBlock {
                left: s.sseq(1400),
                right: s.sseq(2800),
            }]),
        ]);
        let d = tcp(
            s.client,
            s.server,
            s.cisn.wrapping_add(1),
            s.sseq(0),
            TcpFlags::ACK | TcpFlags::PSH,
            8192,
            opts,
            b"GET /next",
        );
        let out = s.feed(Side::Client, d);
        let up: Vec<_> = out.iter().filter(|t| t.toward == Side::Server).collect();
        assert_eq!(up.len(), 1);
        let p = parse(up[0]);
        assert_eq!(p.tcp.ack_number, s.sseq(3 * MSS as u64));
        assert_eq!(p.payload, b"GET /next");
        assert!(p.tcp.sack_blocks().is_empty(), "stale SACK blanked");
        assert_eq!(s.opt.stats().client_acks_moved, 1);
        // The next local ACK carries the client's new sequence number.
        let out = s.server_data(3 * MSS as u64, MSS);
        let acks: Vec<_> = out
            .iter()
            .filter(|t| t.toward == Side::Server)
            .map(parse)
            .collect();
        assert_eq!(acks[0].tcp.seq_number, s.cisn.wrapping_add(1 + 9));
    }
}

#[test]
fn a_duplicate_server_segment_is_dropped_and_acknowledged_again() {
    for f in FAMILIES {
        for delivered in [false, true] {
            let mut s = Session::new(f, Config::default());
            s.handshake();
            s.server_burst(0, 4);
            if delivered {
                s.client_ack(4 * MSS as u64, &[]);
            }
            let out = s.server_data(MSS as u64, MSS);
            assert_eq!(acks_to_server(&s, &out), vec![4 * MSS as u64]);
            assert!(data_to_client(&s, &out).is_empty());
        }
    }
}

#[test]
fn a_gap_from_the_server_is_sacked_and_filled() {
    for f in FAMILIES {
        for gap in 0..6u64 {
            let mut s = Session::new(f, Config::default());
            s.handshake();
            let m = MSS as u64;
            for i in 0..8 {
                if i != gap {
                    s.server_data(i * m, MSS);
                }
            }
            let out = s.server_data(7 * m, MSS);
            let p = out
                .iter()
                .filter(|t| t.toward == Side::Server)
                .map(parse)
                .next()
                .unwrap();
            assert_eq!(
                u64::from(p.tcp.ack_number.wrapping_sub(s.sseq(0))),
                gap * m,
                "dup ACK at the hole"
            );
            if gap < 7 {
                assert!(!p.tcp.sack_blocks().is_empty());
            }
            let out = s.server_data(gap * m, MSS);
            assert_eq!(acks_to_server(&s, &out), vec![8 * m]);
        }
    }
}

/// Sends `n` segments, has the client receive all but `lost`, and returns
/// the retransmitted offsets once the reorder window has passed.
fn loss_case(f: Family, n: u64, lost: &[u64]) -> (Session, Vec<u64>) {
    let m = MSS as u64;
    let mut s = Session::new(f, Config::default());
    s.handshake();
    let out = s.server_burst(0, n as usize);
    let mut sent = data_to_client(&s, &out);
    sent.extend({
        let o = s.advance(ms(20));
        data_to_client(&s, &o)
    });
    assert_eq!(sent.len() as u64, n, "all within the initial budget");
    s.advance(ms(40));
    // The client's ACKs, one per received segment, in order.
    let mut cum = 0;
    let mut sacked: Vec<(u64, u64)> = Vec::new();
    let mut retx = Vec::new();
    for i in 0..n {
        if lost.contains(&i) {
            continue;
        }
        if cum == i * m {
            cum = (i + 1) * m;
            while !lost.contains(&(cum / m)) && sacked.iter().any(|&(l, _)| l == cum) {
                cum += m;
            }
        } else {
            sacked.push((i * m, (i + 1) * m));
        }
        let mut blocks: Vec<(u64, u64)> =
            sacked.iter().copied().filter(|&(l, _)| l >= cum).collect();
        blocks.reverse();
        let out = s.client_ack(cum, &blocks);
        retx.extend(data_to_client(&s, &out).into_iter().map(|(o, _)| o / m));
        s.advance(ms(1));
    }
    retx.extend(
        {
            let o = s.advance(ms(100));
            data_to_client(&s, &o)
        }
        .into_iter()
        .map(|(o, _)| o / m),
    );
    (s, retx)
}

#[test]
fn single_losses_are_found_by_rack_and_resent_once() {
    let mut cases = 0;
    for f in FAMILIES {
        for n in [10u64, 20, 40] {
            for k in 0..n - 1 {
                let (s, retx) = loss_case(f, n, &[k]);
                assert_eq!(retx, vec![k], "{f:?} n {n} lost {k}");
                assert_eq!(s.opt.stats().rack_losses, 1);
                cases += 1;
            }
        }
    }
    assert!(cases >= 130, "{cases}");
}

#[test]
fn burst_losses_are_all_resent_without_a_timeout() {
    let mut cases = 0;
    for f in FAMILIES {
        for start in [0u64, 3, 10] {
            for len in [2u64, 5, 10] {
                let lost: Vec<u64> = (start..start + len).collect();
                let (s, mut retx) = loss_case(f, 30, &lost);
                retx.sort();
                assert_eq!(retx, lost, "{f:?} burst {start}+{len}");
                assert_eq!(s.opt.stats().tail_loss_probes, 0);
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 18);
}

#[test]
fn tail_losses_are_found_by_a_probe_not_a_timeout() {
    let m = MSS as u64;
    for f in FAMILIES {
        for tail in 1..=5u64 {
            let n = 10;
            let mut s = Session::new(f, Config::default());
            s.handshake();
            s.server_burst(0, n);
            s.advance(ms(30));
            // Everything but the last `tail` arrives (RTT 30 ms).
            s.client_ack((n as u64 - tail) * m, &[]);
            // The probe resends the last segment after two RTTs.
            let out = s.advance(ms(70));
            assert_eq!(
                data_to_client(&s, &out),
                vec![((n as u64 - 1) * m, MSS)],
                "{f:?} tail {tail}"
            );
            assert_eq!(s.opt.stats().tail_loss_probes, 1);
            // Its SACK, an RTT later, lets RACK resend the rest of the tail.
            s.advance(ms(30));
            let mut resent = Vec::new();
            let out = s.client_ack((n as u64 - tail) * m, &[((n as u64 - 1) * m, n as u64 * m)]);
            resent.extend(data_to_client(&s, &out));
            resent.extend({
                let o = s.advance(ms(50));
                data_to_client(&s, &o)
            });
            let want: Vec<(u64, usize)> = (n as u64 - tail..n as u64 - 1)
                .map(|i| (i * m, MSS))
                .collect();
            assert_eq!(resent, want);
        }
    }
}

#[test]
fn reordering_within_the_window_resends_nothing() {
    let m = MSS as u64;
    for f in FAMILIES {
        for late in 0..8u64 {
            let mut s = Session::new(f, Config::default());
            s.handshake();
            s.server_burst(0, 10);
            s.advance(ms(40));
            // Segment `late` arrives 2 ms after the next one (the reorder
            // window is a quarter of the 40 ms min RTT: 10 ms).
            let mut out = Vec::new();
            for i in 0..10u64 {
                if i == late {
                    continue;
                }
                if i < late {
                    out.extend(s.client_ack((i + 1) * m, &[]));
                } else if i == late + 1 {
                    out.extend(s.client_ack(late * m, &[((late + 1) * m, (i + 1) * m)]));
                    s.advance(ms(2));
                    out.extend(s.client_ack((late + 2) * m, &[]));
                } else {
                    out.extend(s.client_ack((i + 1) * m, &[]));
                }
            }
            out.extend(s.advance(ms(200)));
            assert!(data_to_client(&s, &out).is_empty(), "{f:?} late {late}");
            assert_eq!(s.opt.stats().retransmissions, 0);
        }
    }
}

#[test]
fn a_long_radio_freeze_backs_probes_off_and_never_collapses_the_budget() {
    for f in FAMILIES {
        let mut s = Session::new(f, Config::default());
        s.handshake();
        s.server_burst(0, 10);
        let budget = s.opt.subscriber_budget(s.client.ip());
        s.advance(Duration::from_secs(20));
        let probes = s.opt.stats().tail_loss_probes;
        // 0.5 s doubling to 4 s: 0.5, 1, 2, 4, 4, 4, 4 ... within 20 s.
        assert!((5..=8).contains(&probes), "{probes}");
        assert_eq!(s.opt.subscriber_budget(s.client.ip()), budget);
        assert_eq!(s.opt.stats().retransmissions, probes);
    }
}

#[test]
fn a_200_kb_burst_is_spread_at_20_kb_per_ms() {
    for f in FAMILIES {
        let cfg = Config {
            initial_budget_bytes: 1 << 20,
            ..Config::default()
        };
        let mut s = Session::new(f, cfg);
        s.handshake();
        let start = s.now;
        s.server_burst(0, 143);
        s.advance(ms(30));
        let sends: Vec<(Instant, usize)> = s
            .log
            .iter()
            .filter(|(_, t)| t.toward == Side::Client)
            .map(|(at, t)| (*at, parse(t).payload.len()))
            .filter(|&(_, l)| l > 0)
            .collect();
        assert_eq!(sends.len(), 143);
        let last = sends.last().unwrap().0.saturating_duration_since(start);
        // 200 kB at 20 MB/s: about 9 ms, not 0.
        assert!(last >= ms(8) && last <= ms(11), "{last:?}");
        for (i, &(t, _)) in sends.iter().enumerate() {
            let in_ms: usize = sends[i..]
                .iter()
                .take_while(|&&(u, _)| u < t + ms(1))
                .map(|&(_, l)| l)
                .sum();
            assert!(in_ms <= 20_000 + 3_000 + MSS, "{in_ms} bytes within 1 ms");
        }
    }
}

/// Runs `f` on session `s` with the optimizer `shared` that all of a
/// case's sessions go through.
fn through<R>(shared: &mut Optimizer, s: &mut Session, f: impl FnOnce(&mut Session) -> R) -> R {
    std::mem::swap(shared, &mut s.opt);
    let r = f(s);
    std::mem::swap(shared, &mut s.opt);
    r
}

/// A subscriber with 40 busy flows and a budget of 20 segments: each flow
/// still gets two segments in flight, so a client that acknowledges every
/// second segment (and delays the ACK of a lone one by 40 ms or more)
/// answers every flow at once. With one segment each (the budget split 40
/// ways) every flow waited for the client's delayed-ACK timer, or, with
/// the benchmark's scripted client that has none, for a tail-loss probe,
/// per segment: 100 bulk flows of one address then moved 0.02 Gbit/s.
#[test]
fn many_flows_of_one_subscriber_each_keep_two_segments_in_flight() {
    let m = MSS as u64;
    for f in FAMILIES {
        let cfg = Config {
            initial_budget_bytes: 20 * MSS,
            min_budget_bytes: 20 * MSS,
            max_budget_bytes: 20 * MSS,
            ..Config::default()
        };
        let mut shared = Optimizer::new(cfg.clone());
        let mut sessions: Vec<Session> = (1..=40u16)
            .map(|n| {
                let mut s = Session::new(f, cfg.clone());
                s.client = f.client(n);
                s.cisn = u32::from(n) * 1000;
                s
            })
            .collect();
        let now = sessions[0].now;
        for s in &mut sessions {
            through(&mut shared, s, |s| {
                s.handshake();
                s.server_burst(0, 10);
            });
        }
        through(&mut shared, &mut sessions[0], |s| s.advance(ms(20)));
        let in_flight: Vec<u64> = sessions
            .iter()
            .map(|s| shared.connection(&s.key()).unwrap().in_flight_bytes)
            .collect();
        assert!(
            in_flight.iter().all(|&b| b == 2 * m),
            "{f:?}: {in_flight:?}"
        );
        // Each flow's two segments are acknowledged by one client ACK, and
        // the next two go out.
        for s in &mut sessions {
            s.now = now + ms(20);
            through(&mut shared, s, |s| s.client_ack(2 * m, &[]));
        }
        through(&mut shared, &mut sessions[0], |s| s.advance(ms(20)));
        for s in &sessions {
            let c = shared.connection(&s.key()).unwrap();
            assert_eq!(c.in_flight_bytes, 2 * m, "{f:?}");
            assert_eq!(shared.stats().tail_loss_probes, 0, "{f:?}");
        }
    }
}

#[test]
fn two_flows_of_one_subscriber_share_its_budget_evenly() {
    for f in FAMILIES {
        let cfg = Config {
            initial_budget_bytes: 20 * MSS,
            min_budget_bytes: 20 * MSS,
            max_budget_bytes: 20 * MSS,
            ..Config::default()
        };
        let mut a = Session::new(f, cfg);
        a.handshake();
        // A second connection of the same client, through the same optimizer.
        let mut b = Session::new(f, Config::default());
        std::mem::swap(&mut a.opt, &mut b.opt);
        b.client = f.client(2);
        b.cisn = 77;
        b.now = a.now;
        b.handshake();
        std::mem::swap(&mut a.opt, &mut b.opt);
        a.server_burst(0, 40);
        std::mem::swap(&mut a.opt, &mut b.opt);
        b.now = a.now;
        b.server_burst(0, 40);
        b.advance(ms(10));
        let ka = a.key();
        let kb = b.key();
        let ia = b.opt.connection(&ka).unwrap().in_flight_bytes;
        let ib = b.opt.connection(&kb).unwrap().in_flight_bytes;
        assert_eq!(ia + ib, 20 * MSS as u64, "{f:?}");
        // The first flow took the whole budget before the second had data;
        // as it drains, the second gets the next releases until even.
        std::mem::swap(&mut a.opt, &mut b.opt);
        a.now = b.now;
        a.client_ack(10 * MSS as u64, &[]);
        // Long enough for the pacer (1.25 x the 1.4 MB/s just measured)
        // to release the ten segments.
        a.advance(ms(10));
        std::mem::swap(&mut a.opt, &mut b.opt);
        let ia = b.opt.connection(&ka).unwrap().in_flight_bytes;
        let ib = b.opt.connection(&kb).unwrap().in_flight_bytes;
        assert_eq!((ia, ib), (10 * MSS as u64, 10 * MSS as u64), "{f:?}");
    }
}

#[test]
fn a_full_connection_buffer_stops_early_acks_and_drains_to_pass_through() {
    for f in FAMILIES {
        for limit_segments in [3usize, 10, 30] {
            let seg_len = s_len(f);
            let cfg = Config {
                max_connection_buffer_bytes: limit_segments * seg_len,
                ..Config::default()
            };
            let mut s = Session::new(f, cfg);
            s.handshake();
            s.server_burst(0, limit_segments);
            let out = s.server_data((limit_segments * MSS) as u64, MSS);
            let to_client = data_to_client(&s, &out);
            assert_eq!(
                to_client,
                vec![((limit_segments * MSS) as u64, MSS)],
                "passed on untouched"
            );
            assert!(
                acks_to_server(&s, &out).is_empty(),
                "not acknowledged early"
            );
            assert_eq!(phase(&s), Some(Phase::Draining));
            assert!(s.opt.held_bytes() <= limit_segments * seg_len);
            // The client acknowledges everything: held data delivered, and
            // its ACK (beyond the local one) reaches the server.
            s.advance(ms(100));
            let out = s.client_ack(((limit_segments + 1) * MSS) as u64, &[]);
            assert_eq!(
                acks_to_server(&s, &out),
                vec![((limit_segments + 1) * MSS) as u64]
            );
            assert_eq!(phase(&s), Some(Phase::PassThrough));
            assert_eq!(s.opt.held_bytes(), 0);
        }
    }
}

fn s_len(f: Family) -> usize {
    MSS + 20 + 12 + if f == Family::V4 { 20 } else { 40 }
}

#[test]
fn the_total_buffer_is_shared_and_bounded() {
    for f in FAMILIES {
        let cfg = Config {
            max_total_buffer_bytes: 25 * s_len(f),
            ..Config::default()
        };
        let mut s = Session::new(f, cfg);
        let mut clients = Vec::new();
        for n in 1..=5u16 {
            s.client = f.client(n);
            s.cisn = u32::from(n) * 1000;
            s.handshake();
            s.server_burst(0, 10);
            assert!(s.opt.held_bytes() <= 25 * s_len(f));
            clients.push(s.key());
        }
        // Two fit whole; the third is cut off and drains; the last two
        // never get room and pass through at once.
        let draining = clients
            .iter()
            .filter(|k| s.opt.connection(k).unwrap().phase != Phase::Optimizing)
            .count();
        assert_eq!(draining, 3);
        assert_eq!(
            s.opt.stats().stopped.get(&Reason::BufferFull),
            Some(&(draining as u64))
        );
    }
}

#[test]
fn stopping_on_request_drains_then_passes_through() {
    for f in FAMILIES {
        let mut s = Session::new(f, Config::default());
        s.handshake();
        s.server_burst(0, 5);
        assert!(s.opt.stop_connection(&s.key()));
        assert_eq!(phase(&s), Some(Phase::Draining));
        // New data now passes untouched and unacknowledged.
        let d = s.server_data_datagram(5 * MSS as u64, MSS, false);
        assert_eq!(
            s.feed(Side::Server, d.clone()),
            vec![Transmit {
                toward: Side::Client,
                datagram: d
            }]
        );
        s.client_ack(6 * MSS as u64, &[]);
        assert_eq!(phase(&s), Some(Phase::PassThrough));
        assert_eq!(s.opt.stats().stopped.get(&Reason::Requested), Some(&1));
    }
}

#[test]
fn a_server_fin_is_delivered_and_only_the_client_acknowledges_it() {
    let m = MSS as u64;
    for f in FAMILIES {
        for n in [0u64, 1, 5] {
            let mut s = Session::new(f, Config::default());
            s.handshake();
            s.server_burst(0, n as usize);
            let fin = s.server_data_datagram(n * m, MSS, true);
            let mut out = s.feed(Side::Server, fin.clone());
            assert_eq!(
                acks_to_server(&s, &out),
                vec![(n + 1) * m],
                "data acknowledged, FIN not"
            );
            out.extend(s.advance(ms(5)));
            assert!(out.contains(&Transmit {
                toward: Side::Client,
                datagram: fin
            }));
            let out = s.client_ack((n + 1) * m + 1, &[]);
            assert_eq!(
                acks_to_server(&s, &out),
                vec![(n + 1) * m + 1],
                "the client's ACK of the FIN"
            );
            assert_eq!(phase(&s), Some(Phase::PassThrough));
            assert_eq!(s.opt.held_bytes(), 0);
        }
    }
}

/// The server's retransmission timer can fire for its FIN before the
/// client's ACK of it has crossed the radio queue; the bare FIN it resends
/// is a copy of the one held, not new data overlapping it.
#[test]
fn a_resent_bare_fin_is_a_duplicate_and_optimization_goes_on() {
    let m = MSS as u64;
    for f in FAMILIES {
        let mut s = Session::new(f, Config::default());
        s.handshake();
        s.server_burst(0, 2);
        let fin = s.server_data_datagram(2 * m, MSS, true);
        s.feed(Side::Server, fin);
        let dropped = s.opt.stats().duplicates_dropped;
        let bare = s.server_data_datagram(3 * m, 0, true);
        let out = s.feed(Side::Server, bare);
        assert!(
            out.iter().all(|t| t.toward == Side::Server),
            "the copy goes nowhere: {out:?}"
        );
        assert_eq!(s.opt.stats().duplicates_dropped, dropped + 1);
        assert_eq!(phase(&s), Some(Phase::Optimizing));
        s.advance(ms(5));
        let out = s.client_ack(3 * m + 1, &[]);
        assert_eq!(acks_to_server(&s, &out), vec![3 * m + 1]);
        assert_eq!(phase(&s), Some(Phase::PassThrough));
        assert_eq!(s.opt.stats().stopped.get(&Reason::Overlap), None);
    }
}

#[test]
fn a_reset_from_either_side_passes_and_frees_the_connection() {
    for f in FAMILIES {
        for from in [Side::Server, Side::Client] {
            let mut s = Session::new(f, Config::default());
            s.handshake();
            s.server_burst(0, 5);
            let rst = match from {
                Side::Server => tcp(
                    s.server,
                    s.client,
                    s.sseq(5 * MSS as u64),
                    0,
                    TcpFlags::RST,
                    0,
                    vec![],
                    &[],
                ),
                Side::Client => tcp(
                    s.client,
                    s.server,
                    s.cisn.wrapping_add(1),
                    0,
                    TcpFlags::RST,
                    0,
                    vec![],
                    &[],
                ),
            };
            let out = s.feed(from, rst.clone());
            assert!(out.contains(&Transmit {
                toward: from.other(),
                datagram: rst
            }));
            assert_eq!(phase(&s), Some(Phase::PassThrough));
            assert_eq!(s.opt.held_bytes(), 0);
            assert_eq!(s.opt.stats().stopped.get(&Reason::Closed), Some(&1));
        }
    }
}

#[test]
fn an_idle_connection_is_forgotten() {
    for f in FAMILIES {
        let mut s = Session::new(f, Config::default());
        s.handshake();
        s.advance(Duration::from_secs(121));
        assert_eq!(s.opt.connection_count(), 0);
        assert_eq!(s.opt.stats().idle_expired, 1);
    }
}

#[test]
fn sequence_numbers_wrap() {
    for f in FAMILIES {
        for sisn in [u32::MAX - 5000, u32::MAX, 0x7fff_ffff] {
            let mut s = Session::new(f, Config::default());
            s.sisn = sisn;
            s.handshake();
            let out = s.server_burst(0, 8);
            assert_eq!(acks_to_server(&s, &out).last(), Some(&(8 * MSS as u64)));
            s.advance(ms(30));
            s.client_ack(8 * MSS as u64, &[]);
            assert_eq!(s.opt.held_bytes(), 0, "{sisn}");
        }
    }
}

#[test]
fn local_windows_never_offer_more_than_the_buffers_hold() {
    let m = MSS as u64;
    for f in FAMILIES {
        for limit_segments in [10usize, 40] {
            // A client's first window is small (64 kB on Linux) and grows.
            window_abiding_transfer(f, limit_segments, 10 * m);
        }
    }
}

/// A client whose first window is larger than the connection's buffer
/// (the 8 MB a window scale of 7 allows, or just over the buffer): a
/// server that keeps to it must not overrun the buffer either. Before the
/// optimizer lowered that window in the handshake ACK, it could never
/// take it back (local ACKs never move a right edge back), so such a
/// server filled the buffer and the connection fell back to pass-through.
#[test]
fn a_first_window_larger_than_the_buffer_is_lowered_and_never_overrun() {
    let m = MSS as u64;
    for f in FAMILIES {
        for limit_segments in [10usize, 40] {
            let buffer = (limit_segments * s_len(f)) as u64;
            for first_window in [buffer + m, 4 * buffer, 65_535 << 7] {
                let s = window_abiding_transfer(f, limit_segments, first_window);
                assert_eq!(s.opt.stats().handshake_windows_lowered, 1);
                assert!(s.server_edge <= buffer, "{f:?} {first_window}");
            }
            // A first window that fits is left alone.
            let s = window_abiding_transfer(f, limit_segments, buffer / 2);
            assert_eq!(s.opt.stats().handshake_windows_lowered, 0);
            assert_eq!(s.server_edge, ((buffer / 2) >> s.wscale) << s.wscale);
        }
    }
}

/// A window-abiding server sends 200 rounds through a connection whose
/// buffer holds `limit_segments` full segments; the client's handshake
/// ACK offers `first_window` bytes. Asserts the buffer is never exceeded,
/// the connection stays optimized and the transfer keeps moving.
fn window_abiding_transfer(f: Family, limit_segments: usize, first_window: u64) -> Session {
    let m = MSS as u64;
    let seg_len = s_len(f);
    let cfg = Config {
        max_connection_buffer_bytes: limit_segments * seg_len,
        ..Config::default()
    };
    let mut s = Session::new(f, cfg);
    s.handshake_window = first_window;
    s.handshake();
    // A server that keeps to the window it is given: it sends up
    // to the right edge of the handshake ACK it saw and then of
    // each local ACK, and the client acknowledges what reaches it.
    let mut next = 0u64;
    let mut edge = s.server_edge;
    let mut delivered = 0u64;
    let mut seen = 0;
    for round in 0..200 {
        while next + m <= edge {
            for a in s.server_data(next, MSS) {
                if a.toward == Side::Server {
                    let p = parse(&a);
                    let ack = u64::from(p.tcp.ack_number.wrapping_sub(s.sseq(0)));
                    edge = edge.max(ack + (u64::from(p.tcp.window) << s.wscale));
                }
            }
            next += m;
        }
        assert!(
            s.opt.held_bytes() <= limit_segments * seg_len,
            "{f:?} round {round}"
        );
        s.advance(ms(20));
        for (_, t) in &s.log[seen..] {
            let p = parse(t);
            if t.toward == Side::Client && !p.payload.is_empty() {
                let off = u64::from(p.tcp.seq_number.wrapping_sub(s.sseq(0)));
                delivered = delivered.max(off + p.payload.len() as u64);
            }
        }
        seen = s.log.len();
        for a in s.client_ack(delivered, &[]) {
            if a.toward == Side::Server {
                let p = parse(&a);
                let ack = u64::from(p.tcp.ack_number.wrapping_sub(s.sseq(0)));
                edge = edge.max(ack + (u64::from(p.tcp.window) << s.wscale));
            }
        }
    }
    assert_eq!(
        phase(&s),
        Some(Phase::Optimizing),
        "{f:?}: never fell back {:?} delivered {delivered} next {next}",
        s.opt.stats()
    );
    assert!(
        delivered > 150 * m,
        "{f:?}: the transfer kept moving ({delivered} bytes)"
    );
    s
}
