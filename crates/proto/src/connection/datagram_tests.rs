//! Unreliable datagrams between two real endpoints, IPv4 and IPv6:
//! negotiation (a peer that did not announce them gets a clear error on
//! send, and one that sends anyway is refused), deadlines, the receive
//! queue's bound, no retransmission, and a lost datagram rebuilt by FEC.

use super::fec_tests::exchange_dropping;
use super::tests::{MS, Pair};
use crate::datagrams::DatagramError;
use crate::fec::FecPolicy;
use bytes::Bytes;

/// A pair where `client` and `server` say who takes datagrams (up to
/// 1,400-byte frames) and `fec` whether both announce FEC.
fn pair(v6: bool, client: bool, server: bool, fec: bool) -> Pair {
    Pair::connected_with(v6, |c, s| {
        c.datagrams.max_frame_bytes = client.then_some(1_400);
        s.datagrams.max_frame_bytes = server.then_some(1_400);
        c.fec.enabled = fec;
        s.fec.enabled = fec;
        c.datagrams.fec_policy = FecPolicy::On;
        s.datagrams.receive_queue_datagrams = 4;
    })
}

/// Datagram `i`: 1,000 bytes that name it.
fn datagram(i: u8) -> Bytes {
    Bytes::from(vec![i; 1_000])
}

/// Everything the server's application can read, as datagram numbers.
fn received(p: &mut Pair) -> Vec<u8> {
    std::iter::from_fn(|| p.server().recv_datagram())
        .map(|d| d[0])
        .collect()
}

#[test]
fn a_peer_that_did_not_announce_datagrams_gets_none() {
    for v6 in [false, true] {
        let mut p = pair(v6, true, false, false);
        let now = p.now;
        assert_eq!(p.client().max_datagram_size(), None);
        assert_eq!(
            p.client().send_datagram(now, datagram(1), None),
            Err(DatagramError::UnsupportedByPeer)
        );
        // The other way works: the client announced them.
        let max = p.server().max_datagram_size().unwrap();
        assert!((1_000..1_400).contains(&max), "{max}");
        assert_eq!(
            p.server()
                .send_datagram(now, Bytes::from(vec![0; max + 1]), None),
            Err(DatagramError::TooLarge { len: max + 1, max })
        );
        p.server().send_datagram(now, datagram(2), None).unwrap();
        p.exchange(2);
        assert_eq!(p.client().recv_datagram(), Some(datagram(2)));
        assert_eq!(p.client().stats().app_datagrams.received, 1);
    }
}

#[test]
fn a_datagram_to_a_peer_that_did_not_announce_them_closes_the_connection() {
    for v6 in [false, true] {
        let mut p = pair(v6, true, false, false);
        // A misbehaving client: it acts as if the server had announced them.
        if let Some(params) = p.client().peer_params.as_mut() {
            params.max_datagram_frame_size = Some(1_400);
        }
        let now = p.now;
        p.client().send_datagram(now, datagram(1), None).unwrap();
        p.exchange(3);
        assert!(p.client_saw_protocol_violation());
        assert_eq!(p.server().datagram_stats().rejected, 1);
        assert_eq!(p.server().datagram_stats().received, 0);
    }
}

#[test]
fn a_datagram_past_its_deadline_is_dropped_at_the_sender() {
    for v6 in [false, true] {
        let mut p = pair(v6, true, true, false);
        let now = p.now;
        assert_eq!(
            p.client().send_datagram(now, datagram(0), Some(now - MS)),
            Err(DatagramError::DeadlinePassed)
        );
        for i in 1..=6 {
            // Odd ones may wait 2 ms, even ones 50 ms.
            let deadline = now + if i % 2 == 1 { 2 * MS } else { 50 * MS };
            p.client()
                .send_datagram(now, datagram(i), Some(deadline))
                .unwrap();
        }
        // Nothing is sent for 5 ms (the application's thread was late, or
        // the window was full): the odd ones miss their deadline.
        p.now += 5 * MS;
        p.exchange(10);
        let s = p.client().datagram_stats();
        assert_eq!((s.sent, s.expired), (3, 3));
        assert_eq!(received(&mut p), vec![2, 4, 6]);
    }
}

#[test]
fn a_full_receive_queue_drops_its_oldest() {
    for v6 in [false, true] {
        let mut p = pair(v6, true, true, false);
        let now = p.now;
        for i in 1..=10 {
            p.client().send_datagram(now, datagram(i), None).unwrap();
        }
        p.exchange(10);
        let s = p.server().datagram_stats();
        assert_eq!((s.received, s.receive_queue_dropped), (10, 6));
        assert_eq!(received(&mut p), vec![7, 8, 9, 10]);
    }
}

#[test]
fn a_lost_datagram_is_not_retransmitted() {
    for v6 in [false, true] {
        let mut p = pair(v6, true, true, false);
        let now = p.now;
        for i in 1..=4 {
            p.client().send_datagram(now, datagram(i), None).unwrap();
        }
        // The client's second packet (datagram 2) is lost.
        exchange_dropping(&mut p, 100, &[1]);
        let c = p.client().stats();
        assert!(c.packets_lost >= 1, "the loss was detected");
        assert_eq!(c.app_datagrams.sent, 4);
        assert_eq!(c.packets_retransmitted, 0);
        assert_eq!(received(&mut p), vec![1, 3, 4]);
    }
}

#[test]
fn fec_rebuilds_a_lost_datagram() {
    for v6 in [false, true] {
        let mut p = pair(v6, true, true, true);
        assert!(p.client().fec_negotiated());
        let now = p.now;
        for i in 1..=4 {
            p.client().send_datagram(now, datagram(i), None).unwrap();
        }
        exchange_dropping(&mut p, 40, &[1]);
        assert_eq!(p.server().stats().packets_rebuilt, 1);
        assert!(p.client().stats().repair_packets_sent >= 1);
        assert_eq!(p.client().datagram_stats().sent, 4, "none sent twice");
        // The rebuilt one comes last, once its block's repair arrived:
        // datagrams are not ordered.
        assert_eq!(received(&mut p), vec![1, 3, 4, 2]);
    }
}
