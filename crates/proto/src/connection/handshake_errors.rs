//! What a server reports for a client's first handshake message it cannot
//! accept: each failure is its own `HandshakeError` variant, so a counter
//! or a log line can tell a wrong key from a malformed or mismatched
//! message. The client side is written by hand so each fault is exact.

use super::*;
use crate::packet::VERSION_1;
use rand::SeedableRng;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn keys(seed: u64) -> Keypair {
    Keypair::generate(&mut ChaCha20Rng::seed_from_u64(seed))
}

fn cid(b: u8) -> ConnectionId {
    ConnectionId::new(&[b; 8]).expect("8 bytes is a valid connection ID")
}

fn remote(v6: bool) -> SocketAddr {
    let ip = if v6 {
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1))
    } else {
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))
    };
    SocketAddr::new(ip, 4000)
}

/// The header's connection IDs: the client's random DCID and its own SCID.
const DCID: u8 = 1;
const SCID: u8 = 2;

/// The IK first message of a client that believes `server_key` is the
/// server's, carrying `payload`.
fn first_message(server_key: &Keypair, payload: &[u8]) -> Vec<u8> {
    let prologue = handshake::prologue(VERSION_1, Pattern::Ik, &cid(DCID), &cid(SCID));
    let mut client = Handshake::initiator(
        Pattern::Ik,
        &keys(10),
        Some(&server_key.public()),
        &prologue,
        [3; 32],
        None,
    )
    .expect("a client handshake with valid keys builds");
    client.write(payload).expect("the first message fits")
}

fn params(source_cid: ConnectionId, ciphers: Vec<PacketCipher>) -> Vec<u8> {
    HandshakePayload {
        params: TransportParams {
            source_cid,
            packet_ciphers: ciphers,
            ..TransportParams::default()
        },
        early: None,
    }
    .emit()
}

/// What the server makes of `message`: `None` when it accepts it.
fn server_reads(config: &ServerConfig, message: &[u8], v6: bool) -> Option<HandshakeError> {
    let info = InitialInfo {
        version: VERSION_1,
        dcid: cid(DCID),
        scid: cid(SCID),
        pattern: Pattern::Ik,
        message,
        datagram_len: 1200,
        address_validated: false,
        allowance: Allowance::default(),
        reset_token: None,
    };
    Connection::new_server(
        Instant::ZERO,
        config,
        cid(9),
        info,
        remote(v6),
        [4; 32],
        None,
    )
    .err()
}

#[test]
fn each_bad_first_message_is_reported_as_what_failed() {
    let server = keys(20);
    let config = ServerConfig::new(server.clone());
    let chacha = vec![PacketCipher::ChaCha20Poly1305];
    for v6 in [false, true] {
        // The baseline: a well-formed message is accepted.
        let good = first_message(&server, &params(cid(SCID), chacha.clone()));
        assert_eq!(server_reads(&config, &good, v6), None);

        let other_server = first_message(&keys(21), &params(cid(SCID), chacha.clone()));
        assert_eq!(
            server_reads(&config, &other_server, v6),
            Some(HandshakeError::Decrypt)
        );

        assert_eq!(
            server_reads(&config, &good[..40], v6),
            Some(HandshakeError::MalformedMessage { len_bytes: 40 })
        );

        let garbage = first_message(&server, &[0x30]);
        assert!(matches!(
            server_reads(&config, &garbage, v6),
            Some(HandshakeError::Payload(_))
        ));

        let foreign_cid = first_message(&server, &params(cid(7), chacha.clone()));
        assert_eq!(
            server_reads(&config, &foreign_cid, v6),
            Some(HandshakeError::SourceCidMismatch {
                header: cid(SCID),
                params: cid(7),
            })
        );

        let mut aes_only = config.clone();
        aes_only.transport.packet_ciphers = vec![PacketCipher::Aes256Gcm];
        assert_eq!(
            server_reads(&aes_only, &good, v6),
            Some(HandshakeError::NoCommonCipher)
        );
    }
}
