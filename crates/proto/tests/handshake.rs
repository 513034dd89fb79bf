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
        assert!(p.now <= Instant::from_millis(21), "{family:?} took {:?}", p.now);
        assert_eq!(p.client_conn().pattern(), Pattern::Ik);
        let server_key = p.server_conn().unwrap().remote_static_key();
        assert!(server_key.is_some(), "server learns the client's static key");
        // Both sides confirm shortly after.
        p.run_until(Instant::from_millis(200), |p| {
            p.client_conn().is_handshake_confirmed() && p.server_conn().unwrap().is_handshake_confirmed()
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
        p.run_until(Instant::from_millis(500), |p| p.client_conn().is_handshake_confirmed());
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
        p.run_until(Instant::from_millis(60_000), |p| p.client_events.contains(&Event::Closed));
        assert!(!p.client_connected() && p.server_conn.is_none(), "{family:?}");
        assert!(p.server.stats().handshake_failed >= 1);
        assert!(p.client_events.contains(&Event::ConnectionLost(ConnectionError::TimedOut)));
        assert_eq!(p.server.handles().count(), 0, "no state for the failed handshake");
    }
}
