//! Shared set-up: a client and a server endpoint, connected in memory.
#![allow(dead_code)]

use brisk_proto::crypto::Keypair;
use brisk_proto::{ClientConfig, ConnectionHandle, Endpoint, ServerConfig};
use brisk_time::Instant;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

pub const CLIENT: SocketAddr = SocketAddr::new(
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
    4000,
);
pub const SERVER: SocketAddr = SocketAddr::new(
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2)),
    443,
);

pub fn server_endpoint() -> Endpoint {
    let keys = Keypair::generate(&mut ChaCha8Rng::seed_from_u64(7));
    Endpoint::new(2, Some(ServerConfig::new(keys)))
}

/// Delivers everything both sides send until they fall silent, advancing
/// time 5 ms per round.
pub fn exchange(client: &mut Endpoint, server: &mut Endpoint, now: &mut Instant, rounds: usize) {
    for _ in 0..rounds {
        let mut moved = false;
        let mut d = Vec::new();
        while let Some(t) = client.poll_transmit(*now, 1, &mut d) {
            server.handle_datagram(*now, CLIENT, t.ecn, &d);
            d.clear();
            moved = true;
        }
        while let Some(t) = server.poll_transmit(*now, 1, &mut d) {
            client.handle_datagram(*now, SERVER, t.ecn, &d);
            d.clear();
            moved = true;
        }
        while client.poll_event().is_some() {}
        while server.accept().is_some() {}
        while server.poll_event().is_some() {}
        *now += Duration::from_millis(5);
        client.handle_timeout(*now);
        server.handle_timeout(*now);
        if !moved {
            break;
        }
    }
}

/// A connected pair, with a little data moved each way.
pub fn connected() -> (Endpoint, Endpoint, ConnectionHandle, Instant) {
    let mut server = server_endpoint();
    let keys = Keypair::generate(&mut ChaCha8Rng::seed_from_u64(7));
    let mut client = Endpoint::new(1, None);
    let mut now = Instant::ZERO;
    // The client takes datagrams, so hostile DATAGRAM frames reach its
    // receive queue rather than only its refusal.
    let mut config = ClientConfig::new(Some(keys.public()));
    config.transport.datagrams.max_frame_bytes = Some(1_400);
    let h = client.connect(now, SERVER, config).expect("connect");
    exchange(&mut client, &mut server, &mut now, 20);
    if let Some(c) = client.connection_mut(h)
        && let Ok(id) = c.open_stream(true, Default::default())
    {
        let _ = c.write(id, &[7u8; 3000]);
    }
    exchange(&mut client, &mut server, &mut now, 20);
    (client, server, h, now)
}
