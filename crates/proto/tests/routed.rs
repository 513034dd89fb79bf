//! `Endpoint::handle_datagram_for` names the connection each datagram
//! went to, which a driver with a socket per connection needs to notice a
//! peer whose address changed; and a server connection stops being
//! half-open once established and address-proved. Two endpoints exchange
//! datagrams directly, on a fixed clock, IPv4 and IPv6.

use brisk_proto::crypto::Keypair;
use brisk_proto::{ClientConfig, ConnectionHandle, Endpoint, ServerConfig};
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::net::SocketAddr;

/// Hands every datagram each side has to the other until both are quiet;
/// returns the connections the server's datagrams from `client_addr` went
/// to.
fn exchange(
    client: &mut Endpoint,
    server: &mut Endpoint,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    now: Instant,
) -> Vec<Option<ConnectionHandle>> {
    let mut routed = Vec::new();
    for _ in 0..20 {
        let mut any = false;
        let mut d = Vec::new();
        while client.poll_transmit(now, 1, &mut d).is_some() {
            routed.push(server.handle_datagram_for(now, client_addr, Ecn::NotEct, &d));
            d.clear();
            any = true;
        }
        while server.poll_transmit(now, 1, &mut d).is_some() {
            client.handle_datagram(now, server_addr, Ecn::NotEct, &d);
            d.clear();
            any = true;
        }
        if !any {
            break;
        }
    }
    routed
}

#[test]
fn datagrams_name_their_connection_and_a_moved_peer_is_seen() {
    for (client_addr, moved, server_addr) in [
        ("192.0.2.1:5000", "192.0.2.1:6000", "198.51.100.1:4433"),
        (
            "[2001:db8::1]:5000",
            "[2001:db8::1]:6000",
            "[2001:db8::2]:4433",
        ),
    ] {
        let client_addr: SocketAddr = client_addr.parse().unwrap();
        let moved: SocketAddr = moved.parse().unwrap();
        let server_addr: SocketAddr = server_addr.parse().unwrap();
        let keypair = Keypair::from_private([3; 32]);
        let public = keypair.public();
        let mut server = Endpoint::new(1, Some(ServerConfig::new(keypair)));
        let mut client = Endpoint::new(2, None);
        let now = Instant::from_millis(1);
        let ch = client
            .connect(now, server_addr, ClientConfig::new(Some(public)))
            .expect("connect");
        let routed = exchange(&mut client, &mut server, client_addr, server_addr, now);
        let h = server.accept().expect("the server accepted the connection");
        // The first flight started the connection (a datagram that does
        // names none); every later one names it.
        assert_eq!(routed.first(), Some(&None), "{routed:?}");
        assert!(
            routed.len() > 1 && routed[1..].iter().all(|r| *r == Some(h)),
            "every later client datagram went to the one connection: {routed:?}"
        );
        let s = server.connection(h).unwrap();
        assert!(s.is_established() && !s.is_half_open());
        assert_eq!(s.remote_address(), client_addr);
        // Garbage names no connection.
        assert_eq!(
            server.handle_datagram_for(now, client_addr, Ecn::NotEct, &[0x40; 40]),
            None
        );
        // The client's NAT moves it: the next datagram names the same
        // connection, whose peer is now the new address.
        let c = client.connection_mut(ch).unwrap();
        c.ping();
        let later = Instant::from_millis(2);
        let routed = exchange(&mut client, &mut server, moved, server_addr, later);
        assert!(!routed.is_empty() && routed.iter().all(|r| *r == Some(h)));
        assert_eq!(server.connection(h).unwrap().remote_address(), moved);
    }
}

/// Under Retry, the Initial that echoes a valid token names the handshake
/// it starts, which is already address-proved: a
/// driver gives it a socket of its own before a flood of forged Initials
/// (which name nothing) can drop the rest of its handshake. The first,
/// token-less Initial still names nothing.
#[test]
fn an_initial_with_a_valid_retry_token_names_its_proved_handshake() {
    for (client_addr, server_addr) in [
        ("192.0.2.1:5000", "198.51.100.1:4433"),
        ("[2001:db8::1]:5000", "[2001:db8::2]:4433"),
    ] {
        let client_addr: SocketAddr = client_addr.parse().unwrap();
        let server_addr: SocketAddr = server_addr.parse().unwrap();
        let keypair = Keypair::from_private([4; 32]);
        let public = keypair.public();
        let mut config = ServerConfig::new(keypair);
        config.admission.retry = brisk_proto::RetryPolicy::Always;
        let mut server = Endpoint::new(1, Some(config));
        let mut client = Endpoint::new(2, None);
        let now = Instant::from_millis(1);
        client
            .connect(now, server_addr, ClientConfig::new(Some(public)))
            .expect("connect");
        // The first Initial draws a Retry and names nothing.
        let mut d = Vec::new();
        assert!(client.poll_transmit(now, 1, &mut d).is_some());
        assert_eq!(
            server.handle_datagram_for(now, client_addr, Ecn::NotEct, &d),
            None
        );
        assert_eq!(server.stats().retries_sent, 1);
        d.clear();
        assert!(server.poll_transmit(now, 1, &mut d).is_some(), "a Retry");
        client.handle_datagram(now, server_addr, Ecn::NotEct, &d);
        // The Initial with the token starts a handshake and names it.
        d.clear();
        assert!(client.poll_transmit(now, 1, &mut d).is_some());
        let named = server.handle_datagram_for(now, client_addr, Ecn::NotEct, &d);
        let h = named.expect("the proved handshake is named");
        let s = server.connection(h).expect("the handshake");
        assert!(s.is_address_validated());
    }
}
