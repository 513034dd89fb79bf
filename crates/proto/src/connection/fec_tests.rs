//! Forward error correction between two real endpoints: negotiation (a
//! peer that did not announce it never sees a repair frame), and a lost
//! packet rebuilt at the receiver, acknowledged and never retransmitted.

use super::tests::{MS, Pair};
use super::*;
use crate::fec::FecPolicy;
use crate::streams::Priority;
use brisk_wire::Ecn;

/// A pair where `client_fec` and `server_fec` say who announces FEC.
fn pair(v6: bool, client_fec: bool, server_fec: bool) -> Pair {
    Pair::connected_with(v6, |c, s| {
        c.fec.enabled = client_fec;
        c.fec.default_policy = FecPolicy::On;
        s.fec.enabled = server_fec;
    })
}

/// Writes `len` bytes on a new stream of the client and finishes it.
fn send(p: &mut Pair, len: usize) -> StreamId {
    let c = p.client();
    let id = c.open_stream(false, Priority::default()).unwrap();
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    assert_eq!(c.write(id, &data).unwrap(), len);
    c.finish(id).unwrap();
    id
}

/// Delivers what both sides send, dropping the client's datagrams whose
/// index (from 0, over the whole run) is in `drop`.
pub(super) fn exchange_dropping(p: &mut Pair, rounds: usize, drop: &[usize]) {
    let mut index = 0;
    for _ in 0..rounds {
        let now = p.now;
        let mut d = Vec::new();
        while p.client.poll_transmit(now, 1, &mut d).is_some() {
            if !drop.contains(&index) {
                p.server
                    .handle_datagram(now, p.client_addr, Ecn::NotEct, &d);
            }
            index += 1;
            d.clear();
        }
        while p.server.poll_transmit(now, 1, &mut d).is_some() {
            p.client
                .handle_datagram(now, p.server_addr, Ecn::NotEct, &d);
            d.clear();
        }
        while p.client.poll_event().is_some() {}
        while p.server.poll_event().is_some() {}
        p.now += 5 * MS;
        p.client.handle_timeout(p.now);
        p.server.handle_timeout(p.now);
    }
}

#[test]
fn repair_flows_only_when_both_sides_announced_it() {
    for v6 in [false, true] {
        for (client_fec, server_fec) in [(true, true), (true, false), (false, true)] {
            let mut p = pair(v6, client_fec, server_fec);
            let both = client_fec && server_fec;
            assert_eq!(p.client().fec_negotiated(), both);
            assert_eq!(p.server().fec_negotiated(), both);
            send(&mut p, 20_000);
            p.exchange(20);
            let sent = p.client().stats().repair_packets_sent;
            assert_eq!(sent > 0, both, "{client_fec} {server_fec}: {sent}");
        }
    }
}

#[test]
fn a_lost_packet_is_rebuilt_and_not_retransmitted() {
    for v6 in [false, true] {
        let mut p = pair(v6, true, true);
        let id = send(&mut p, 6_000);
        // The stream's second datagram is lost; the flight's tail repair
        // rebuilds it.
        exchange_dropping(&mut p, 40, &[1]);
        assert_eq!(p.server().stats().packets_rebuilt, 1);
        assert_eq!(p.client().stats().stream_bytes_retransmitted, 0);
        let mut buf = vec![0; 10_000];
        let r = p.server().read(id, &mut buf).unwrap();
        assert!(r.fin);
        assert_eq!(r.bytes, 6_000);
        assert!(
            buf[..6_000]
                .iter()
                .enumerate()
                .all(|(i, &b)| b == (i % 251) as u8)
        );
    }
}
