//! Handshakes: IK and XX complete, keys are authenticated, early data.

mod util;

use brisk_proto::crypto::Keypair;
use brisk_proto::handshake::Pattern;
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
        assert_eq!(at, Some(Instant::from_millis(10)), "{family:?}");
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
