//! Handshakes: IK and XX complete, keys are authenticated, early data.

mod util;

use brisk_proto::Pattern;
use brisk_proto::crypto::{Keypair, PacketCipher};
use brisk_proto::{ConnectionError, Event};
use brisk_time::Instant;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use util::*;

#[test]
fn ik_handshake_completes_in_one_round_trip() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 1));
        assert!(p.connect(), "{family:?}");
        // 10 ms each way: the client has keys after one round trip.
        assert!(
            p.now <= Instant::from_millis(21),
            "{family:?} took {:?}",
            p.now
        );
        assert_eq!(p.client_conn().pattern(), Pattern::Ik);
        let server_key = p.server_conn().unwrap().remote_static_key();
        assert!(
            server_key.is_some(),
            "server learns the client's static key"
        );
        // Both sides confirm shortly after.
        p.run_until(Instant::from_millis(200), |p| {
            p.client_conn().is_handshake_confirmed()
                && p.server_conn().unwrap().is_handshake_confirmed()
        });
        assert!(p.server_conn().unwrap().is_handshake_confirmed());
    }
}

#[test]
fn xx_handshake_completes_and_reveals_the_server_key() {
    for family in FAMILIES {
        let mut cfg = PairConfig::new(family, 2);
        let server_public = cfg.server.keypair.public();
        cfg.client.server_static_key = None;
        let mut p = Pair::new(cfg);
        assert!(p.connect(), "{family:?}");
        assert_eq!(p.client_conn().pattern(), Pattern::Xx);
        assert_eq!(p.client_conn().remote_static_key(), Some(server_public));
        p.run_until(Instant::from_millis(500), |p| {
            p.client_conn().is_handshake_confirmed()
        });
        assert!(p.client_conn().is_handshake_confirmed());
    }
}

#[test]
fn wrong_server_key_is_rejected() {
    for family in FAMILIES {
        let mut cfg = PairConfig::new(family, 3);
        let impostor = Keypair::generate(&mut ChaCha8Rng::seed_from_u64(99));
        cfg.client.server_static_key = Some(impostor.public());
        let mut p = Pair::new(cfg);
        p.run_until(Instant::from_millis(60_000), |p| {
            p.client_events.contains(&Event::Closed)
        });
        assert!(
            !p.client_connected() && p.server_conn.is_none(),
            "{family:?}"
        );
        assert!(p.server.stats().handshake_failed >= 1);
        assert!(
            p.client_events
                .contains(&Event::ConnectionLost(ConnectionError::TimedOut))
        );
        assert_eq!(
            p.server.handles().count(),
            0,
            "no state for the failed handshake"
        );
    }
}

#[test]
fn early_data_is_delivered_once_and_counted_as_early() {
    use brisk_proto::Idempotent;
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 4));
        let id = p
            .client_conn()
            .send_early(Idempotent::declare(b"GET /index.html"))
            .unwrap();
        p.client_conn().finish(id).unwrap();
        let mut got = Vec::new();
        let mut fin = false;
        let mut at = None;
        assert!(p.run_until(Instant::from_millis(2_000), |p| {
            let now = p.now;
            if let Some(s) = p.server_conn() {
                let mut buf = [0u8; 64];
                while let Ok(r) = s.read(id, &mut buf) {
                    got.extend_from_slice(&buf[..r.bytes]);
                    fin |= r.fin;
                    if r.bytes > 0 {
                        at.get_or_insert(now);
                    }
                    if r.bytes == 0 || r.fin {
                        break;
                    }
                }
            }
            fin
        }));
        assert_eq!(
            got, b"GET /index.html",
            "{family:?}: delivered exactly once"
        );
        // Readable half a round trip in, with the first flight.
        let at = at.expect("early data read");
        assert_at(at, Instant::from_millis(10), &format!("{family:?}"));
        assert!(p.server_events.contains(&Event::EarlyData {
            stream: id,
            len_bytes: 15
        }));
        let s = p.server_conn().unwrap().stats();
        assert_eq!(s.early_data_received_bytes, 15);
        assert_eq!(p.client_conn().stats().early_data_sent_bytes, 15);
    }
}

#[test]
fn early_data_needs_ik_and_must_come_first() {
    use brisk_proto::{EarlyDataError, Idempotent};
    let mut cfg = PairConfig::new(Family::V4, 5);
    cfg.client.server_static_key = None;
    let mut p = Pair::new(cfg);
    assert_eq!(
        p.client_conn().send_early(Idempotent::declare(b"x")),
        Err(EarlyDataError::NotIk)
    );

    let mut p = Pair::new(PairConfig::new(Family::V6, 5));
    let big = vec![0u8; 5_000];
    assert!(matches!(
        p.client_conn().send_early(Idempotent::declare(&big)),
        Err(EarlyDataError::TooLarge { .. })
    ));
    p.step();
    assert_eq!(
        p.client_conn().send_early(Idempotent::declare(b"x")),
        Err(EarlyDataError::TooLate)
    );
}

#[test]
fn server_refusing_early_data_still_gets_it_after_the_handshake() {
    use brisk_proto::Idempotent;
    let mut cfg = PairConfig::new(Family::V4, 6);
    cfg.server.accept_early_data = false;
    let mut p = Pair::new(cfg);
    let id = p
        .client_conn()
        .send_early(Idempotent::declare(b"hello"))
        .unwrap();
    p.client_conn().finish(id).unwrap();
    let mut got = Vec::new();
    assert!(p.run_until(Instant::from_millis(2_000), |p| {
        let mut buf = [0u8; 16];
        if let Some(s) = p.server_conn()
            && let Ok(r) = s.read(id, &mut buf)
        {
            got.extend_from_slice(&buf[..r.bytes]);
            return r.fin;
        }
        false
    }));
    assert_eq!(got, b"hello");
    assert_eq!(
        p.server_conn().unwrap().stats().early_data_received_bytes,
        0
    );
    assert!(
        !p.server_events
            .iter()
            .any(|e| matches!(e, Event::EarlyData { .. }))
    );
}

/// Drops the `n`-th datagram (0-based) going `dir`.
fn drop_nth(dir: Dir, n: usize) -> Tap {
    let mut seen = 0;
    Box::new(move |d, _| {
        if d != dir {
            return true;
        }
        seen += 1;
        seen != n + 1
    })
}

#[test]
fn handshake_recovers_from_each_lost_flight() {
    for family in FAMILIES {
        for xx in [false, true] {
            let flights: &[(Dir, usize)] = if xx {
                &[(Dir::ToServer, 0), (Dir::ToClient, 0), (Dir::ToServer, 1)]
            } else {
                &[(Dir::ToServer, 0), (Dir::ToClient, 0)]
            };
            for &(dir, n) in flights {
                let mut cfg = PairConfig::new(family, 7);
                if xx {
                    cfg.client.server_static_key = None;
                }
                let mut p = Pair::new(cfg);
                p.tap = Some(drop_nth(dir, n));
                let mut bulk = Bulk::new(payload(30_000, 3));
                assert!(
                    p.run_until(Instant::from_millis(10_000), |p| bulk.pump(p)),
                    "{family:?} xx={xx} lost {dir:?} #{n}"
                );
                // The lost flight is resent after one probe timeout (about
                // a second with the initial RTT of 333 ms), not never.
                assert!(
                    p.now < Instant::from_millis(3_000),
                    "{family:?} xx={xx} {dir:?} #{n}: {:?}",
                    p.now
                );
            }
        }
    }
}

/// Drops the first `n` datagrams going `dir`.
fn drop_first(dir: Dir, n: usize) -> Tap {
    let mut seen = 0;
    Box::new(move |d, _| {
        if d != dir {
            return true;
        }
        seen += 1;
        seen > n
    })
}

#[test]
fn handshake_resends_keep_coming_within_a_connect_timeout() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 9));
        // Four first messages lost in a row: the fifth must arrive within
        // the 5 s a client waits, so the resends stay about a second
        // apart (unbounded doubling would send it at 15 s).
        p.tap = Some(drop_first(Dir::ToServer, 4));
        assert!(
            p.run_until(Instant::from_millis(30_000), |p| p
                .client_conn()
                .is_established()),
            "{family:?}"
        );
        assert!(
            p.now < Instant::from_millis(5_000),
            "{family:?}: established at {:?}",
            p.now
        );
    }
}

#[test]
fn unknown_versions_get_version_negotiation() {
    use brisk_proto::packet::{HeaderView, LOCAL_CID_LEN, VERSION_1};
    use brisk_wire::Ecn;
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 8));
        let mut initial = vec![0u8; 1200];
        initial[0] = 0xc0;
        initial[1..5].copy_from_slice(&0x1a2a_3a4au32.to_be_bytes());
        initial[5] = 4;
        initial[6..10].copy_from_slice(&[1, 2, 3, 4]);
        initial[10] = 2;
        initial[11..13].copy_from_slice(&[5, 6]);
        p.inject(Dir::ToServer, Ecn::NotEct, &initial);
        let mut vn = Vec::new();
        p.server
            .poll_transmit(p.now, 1, &mut vn)
            .expect("a version negotiation packet");
        let v = HeaderView::new_checked(&vn[..], LOCAL_CID_LEN).unwrap();
        assert!(v.is_version_negotiation());
        assert_eq!((v.dcid(), v.scid()), (&[5u8, 6][..], &[1u8, 2, 3, 4][..]));
        assert_eq!(v.versions().collect::<Vec<_>>(), vec![VERSION_1]);
        assert_eq!(p.server.handles().count(), 0);
        // A short datagram gets nothing: no amplification.
        p.inject(Dir::ToServer, Ecn::NotEct, &initial[..600]);
        assert!(p.server.poll_transmit(p.now, 1, &mut Vec::new()).is_none());

        // A client told that its version is unknown gives up.
        p.step();
        let scid = p.client_conn().local_cid();
        let mut vn = vec![0xc0, 0, 0, 0, 0, scid.len() as u8];
        vn.extend_from_slice(scid.as_bytes());
        vn.extend_from_slice(&[0, 0x0a, 0x0a, 0x0a, 0x0a]);
        p.inject(Dir::ToClient, Ecn::NotEct, &vn);
        p.step();
        assert!(
            p.client_events
                .contains(&Event::ConnectionLost(ConnectionError::VersionMismatch))
        );
    }
}

#[test]
fn close_reaches_the_peer_with_code_and_reason() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 9));
        assert!(p.connect());
        let now = p.now;
        p.client_conn().close(now, 42, b"done");
        assert!(p.run_until(Instant::from_millis(5_000), |p| {
            p.client_events.contains(&Event::Closed) && p.server_events.contains(&Event::Closed)
        }));
        assert!(p.server_events.contains(&Event::ConnectionLost(
            ConnectionError::ApplicationClosed {
                code: 42,
                reason: "done".into()
            }
        )));
        assert!(
            !p.client_events
                .iter()
                .any(|e| matches!(e, Event::ConnectionLost(_)))
        );
        assert_eq!(
            (p.client.handles().count(), p.server.handles().count()),
            (0, 0)
        );
    }
}

/// A close the network drops is repeated within the closing period, so
/// an idle server learns of it at once rather than at its idle timeout:
/// with the first close lost the server hears it about one probe timeout
/// later, with the first two lost about two; with all three lost it is
/// left to its idle timeout (the baseline: without repeats, one lost
/// close meant that wait).
#[test]
fn a_lost_close_is_repeated_and_still_reaches_an_idle_peer() {
    use std::cell::Cell;
    use std::rc::Rc;
    for family in FAMILIES {
        for lost in 0..=3u32 {
            let mut p = Pair::new(PairConfig::new(family, 11));
            assert!(p.connect());
            // Let the handshake's last ACKs settle: both sides idle.
            let settle = p.now + std::time::Duration::from_millis(500);
            p.run_until(settle, |_| false);
            let closing = Rc::new(Cell::new(true));
            let dropped = Rc::new(Cell::new(0u32));
            let (c, d) = (closing.clone(), dropped.clone());
            p.tap = Some(Box::new(move |dir, _| {
                if dir == Dir::ToServer && c.get() && d.get() < lost {
                    d.set(d.get() + 1);
                    return false;
                }
                true
            }));
            let closed_at = p.now;
            p.client_conn().close(closed_at, 7, b"bye");
            let heard = |p: &Pair| {
                p.server_events.iter().any(|e| {
                    matches!(
                        e,
                        Event::ConnectionLost(ConnectionError::ApplicationClosed { code: 7, .. })
                    )
                })
            };
            // Until the server hears the close, or its connection ends
            // without it.
            assert!(
                p.run_until(closed_at + std::time::Duration::from_secs(60), |p| {
                    heard(p) || p.server_events.contains(&Event::Closed)
                })
            );
            closing.set(false);
            let took = p.now - closed_at;
            assert_eq!(dropped.get(), lost, "{family:?}");
            let heard = heard(&p);
            if lost < 3 {
                assert!(heard, "{family:?}, {lost} lost: {:?}", p.server_events);
                assert!(
                    took < std::time::Duration::from_secs(1),
                    "{family:?}, {lost} lost: the server heard the close after {took:?}"
                );
            } else {
                // Every copy lost: only the idle timeout (30 s) ends it.
                assert!(!heard, "{family:?}");
                assert!(took >= std::time::Duration::from_secs(10), "{took:?}");
            }
        }
    }
}

#[test]
fn packet_cipher_is_the_servers_first_choice_that_the_client_offers() {
    use PacketCipher::{Aes256Gcm as Aes, ChaCha20Poly1305 as ChaCha};
    let cases: [(&[PacketCipher], &[PacketCipher], PacketCipher); 4] = [
        (&[Aes, ChaCha], &[Aes, ChaCha], Aes),
        (&[Aes, ChaCha], &[ChaCha, Aes], ChaCha),
        (&[ChaCha], &[Aes, ChaCha], ChaCha),
        (&[ChaCha, Aes], &[Aes], Aes),
    ];
    for (i, (client, server, expected)) in cases.into_iter().enumerate() {
        for family in FAMILIES {
            let mut cfg = PairConfig::new(family, 40 + i as u64);
            cfg.client.transport.packet_ciphers = client.to_vec();
            cfg.server.transport.packet_ciphers = server.to_vec();
            let mut p = Pair::new(cfg);
            assert!(p.connect(), "{family:?} case {i}");
            assert_eq!(p.client_conn().packet_cipher(), Some(expected));
            assert_eq!(p.server_conn().unwrap().packet_cipher(), Some(expected));
            // 1-RTT data flows both ways under it.
            let id = p
                .client_conn()
                .open_stream(true, Default::default())
                .unwrap();
            p.client_conn().write(id, b"ping").unwrap();
            p.client_conn().finish(id).unwrap();
            let got = p.run_until(Instant::from_millis(2_000), |p| {
                p.server_conn().unwrap().streams().stats().bytes_received == 4
            });
            assert!(got, "{family:?} case {i}");
        }
    }
}

#[test]
fn no_common_packet_cipher_fails_the_handshake() {
    for family in FAMILIES {
        let mut cfg = PairConfig::new(family, 50);
        cfg.client.transport.packet_ciphers = vec![PacketCipher::ChaCha20Poly1305];
        cfg.server.transport.packet_ciphers = vec![PacketCipher::Aes256Gcm];
        let mut p = Pair::new(cfg);
        p.run_until(Instant::from_millis(60_000), |p| {
            p.client_events.contains(&Event::Closed)
        });
        assert!(
            !p.client_connected() && p.server_conn.is_none(),
            "{family:?}"
        );
        assert!(p.server.stats().handshake_failed >= 1);
    }
}
