//! `Endpoint::detach` hands an established connection to the caller while
//! the endpoint keeps routing its datagrams (`Delivery::Detached`) and
//! counting it against the connection limit; a handshake cannot be
//! detached; once the detached connection has closed, `forget_detached`
//! drops its route. Two endpoints exchange datagrams directly, on a fixed
//! clock, IPv4 and IPv6; the detached connection reads its datagrams
//! either from the caller or straight from the endpoint's routing
//! (`Endpoint::handle_datagram_routed_to`).

use brisk_proto::crypto::Keypair;
use brisk_proto::{
    ClientConfig, Connection, ConnectionHandle, Delivery, Endpoint, Event, ServerConfig,
};
use brisk_time::Instant;
use brisk_wire::Ecn;
use std::net::SocketAddr;

/// Both sides' datagrams, delivered until both are quiet. The server's
/// detached connection (if any) reads what the endpoint routes to it (with
/// `handed`, the endpoint hands it over itself) and sends from itself; the
/// deliveries of client datagrams are returned.
fn exchange(
    client: &mut Endpoint,
    server: &mut Endpoint,
    detached: &mut Option<(ConnectionHandle, Connection)>,
    addrs: (SocketAddr, SocketAddr),
    now: Instant,
    handed: bool,
) -> Vec<(Delivery, Vec<u8>)> {
    let (client_addr, server_addr) = addrs;
    let mut deliveries = Vec::new();
    for _ in 0..20 {
        let mut any = false;
        let mut d = Vec::new();
        while client.poll_transmit(now, 1, &mut d).is_some() {
            let delivery = match detached.as_mut() {
                Some((h, c)) if handed => {
                    server.handle_datagram_routed_to(now, client_addr, Ecn::NotEct, &d, (*h, c))
                }
                _ => server.handle_datagram_routed(now, client_addr, Ecn::NotEct, &d),
            };
            if let (Delivery::Detached(h), Some((dh, c))) = (delivery, detached.as_mut()) {
                assert_eq!(h, *dh);
                if !handed {
                    c.handle_datagram(now, client_addr, Ecn::NotEct, &d);
                }
            }
            deliveries.push((delivery, d.clone()));
            d.clear();
            any = true;
        }
        while server.poll_transmit(now, 1, &mut d).is_some() {
            client.handle_datagram(now, server_addr, Ecn::NotEct, &d);
            d.clear();
            any = true;
        }
        if let Some((_, c)) = detached.as_mut() {
            while c.poll_transmit(now, 1, &mut d).is_some() {
                client.handle_datagram(now, server_addr, Ecn::NotEct, &d);
                d.clear();
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    deliveries
}

#[test]
fn a_detached_connection_gets_its_datagrams_through_the_endpoint_until_forgotten() {
    for ((client_addr, server_addr), handed) in [
        ("192.0.2.1:5000", "198.51.100.1:4433"),
        ("[2001:db8::1]:5000", "[2001:db8::2]:4433"),
    ]
    .into_iter()
    .flat_map(|a| [(a, false), (a, true)])
    {
        let addrs: (SocketAddr, SocketAddr) =
            (client_addr.parse().unwrap(), server_addr.parse().unwrap());
        let keypair = Keypair::from_private([3; 32]);
        let public = keypair.public();
        let mut config = ServerConfig::new(keypair);
        config.max_connections = 1;
        let mut server = Endpoint::new(1, Some(config));
        let mut client = Endpoint::new(2, None);
        let now = Instant::from_millis(1);
        let ch = client
            .connect(now, addrs.1, ClientConfig::new(Some(public)))
            .expect("connect");
        // Before the first datagram the server has nothing to detach.
        assert!(server.detach(ConnectionHandle(0)).is_none());
        let mut detached = None;
        exchange(&mut client, &mut server, &mut detached, addrs, now, handed);
        let h = server.accept().expect("the server accepted the connection");
        let c = server
            .detach(h)
            .expect("an established connection detaches");
        assert!(server.connection(h).is_none());
        assert_eq!(server.handles().count(), 0);
        assert_eq!(server.detached_len(), 1);
        detached = Some((h, c));

        // Stream data from the client reaches the detached connection.
        let cc = client.connection_mut(ch).unwrap();
        let id = cc.open_stream(true, Default::default()).unwrap();
        assert_eq!(cc.write(id, b"hello").unwrap(), 5);
        let later = Instant::from_millis(2);
        let got = exchange(
            &mut client,
            &mut server,
            &mut detached,
            addrs,
            later,
            handed,
        );
        assert!(
            !got.is_empty() && got.iter().all(|(d, _)| *d == Delivery::Detached(h)),
            "{got:?}"
        );
        let (_, earlier) = got[0].clone();
        let (_, c) = detached.as_mut().unwrap();
        let sid = c.accept_stream().expect("the client's stream");
        let mut buf = [0u8; 16];
        let r = c.read(sid, &mut buf).unwrap();
        assert_eq!(&buf[..r.bytes], b"hello");

        // It still counts: a second client is refused (limit 1).
        let mut other = Endpoint::new(3, None);
        let oh = other
            .connect(later, addrs.1, ClientConfig::new(Some(public)))
            .unwrap();
        exchange(&mut other, &mut server, &mut None, addrs, later, handed);
        assert_eq!(server.stats().refused, 1);
        assert!(
            other
                .connection(oh)
                .is_none_or(|c| c.state() != brisk_proto::ConnState::Established)
        );

        // The detached side closes; once it reports Closed its route goes
        // and its datagrams name nobody.
        let (_, c) = detached.as_mut().unwrap();
        c.close(later, 0, b"bye");
        let mut end = later;
        let mut closed = false;
        for _ in 0..200 {
            exchange(&mut client, &mut server, &mut detached, addrs, end, handed);
            let (_, c) = detached.as_mut().unwrap();
            while let Some(e) = c.poll_event() {
                closed |= e == Event::Closed;
            }
            if closed {
                break;
            }
            end = c.poll_timeout().unwrap_or(end).max(end);
            c.handle_timeout(end);
        }
        assert!(closed, "the detached connection drained");
        server.forget_detached(h);
        assert_eq!(server.detached_len(), 0);
        assert!(!matches!(
            server.handle_datagram_routed(end, addrs.0, Ecn::NotEct, &earlier),
            Delivery::Detached(_)
        ));
    }
}
