//! The packet builder and GSO trains, through two real endpoints: the
//! order frame sources fill a packet in, the shape of a train (equal
//! datagrams, only the last shorter, each one whole packet the peer opens),
//! the datagram limit, the datagram size each family is configured with,
//! and the frame type a CONNECTION_CLOSE names for a broken rule.

use super::tests::{MS, Pair};
use super::*;
use crate::error::code;
use crate::frame::{Frame, ty};
use crate::qlog::{QlogEvent, QlogFrame};
use crate::streams::Priority;
use std::sync::{Arc, Mutex};

/// Keeps the frames of every packet a connection sent.
#[derive(Clone, Default)]
struct SentLog(Arc<Mutex<Vec<Vec<QlogFrame>>>>);

impl QlogSink for SentLog {
    fn emit(&mut self, _time: Instant, event: QlogEvent) {
        if let QlogEvent::PacketSent(p) = event
            && let Ok(mut log) = self.0.lock()
        {
            log.push(p.frames);
        }
    }
}

/// The frame kind as qlog names its variant (`Ack`, `Stream`, ...).
fn kind(f: &QlogFrame) -> String {
    let debug = format!("{f:?}");
    debug
        .split([' ', '{', '('])
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Hands each datagram of a train to the server, as a kernel splitting it
/// would; returns how many packets the server opened.
fn deliver_train(p: &mut Pair, t: &Transmit, train: &[u8]) -> u64 {
    let before = p.server().stats().packets_received;
    let (now, from) = (p.now, p.client_addr);
    for d in train.chunks(t.segment_bytes) {
        p.server.handle_datagram(now, from, t.ecn, d);
    }
    p.server().stats().packets_received - before
}

#[test]
fn a_packet_is_filled_ack_then_control_then_stream_then_ping() {
    for v6 in [false, true] {
        let mut p = Pair::connected(v6, false, false);
        let now = p.now;
        // Something for the client to acknowledge.
        p.server().ping();
        let mut d = Vec::new();
        p.server.poll_transmit(now, 1, &mut d).expect("a PING");
        p.client
            .handle_datagram(now, p.server_addr, Ecn::NotEct, &d);
        let log = SentLog::default();
        let c = p.client();
        c.set_qlog(Box::new(log.clone()));
        // Queued in the opposite order to the one they go out in.
        c.ping();
        let data = c.open_stream(false, Priority::default()).unwrap();
        c.write(data, &[7; 300]).unwrap();
        let reset = c.open_stream(false, Priority::default()).unwrap();
        c.reset_stream(reset, 9).unwrap();
        d.clear();
        let t = p.client.poll_transmit(now, 64, &mut d).expect("a packet");
        assert_eq!(t.datagrams(), 1, "v6 {v6}: not full, so no train");
        let sent = log.0.lock().unwrap().clone();
        assert_eq!(sent.len(), 1, "v6 {v6}: {sent:?}");
        let kinds: Vec<String> = sent[0].iter().map(kind).collect();
        assert_eq!(
            kinds,
            ["Ack", "ResetStream", "Stream", "Ping"],
            "v6 {v6}: {sent:?}"
        );
    }
}

#[test]
fn a_train_is_equal_full_datagrams_then_one_shorter() {
    for v6 in [false, true] {
        let mut p = Pair::connected(v6, false, false);
        let mds = p.client().mds();
        let c = p.client();
        let id = c.open_stream(false, Priority::default()).unwrap();
        // Two and a half datagrams' worth of data.
        c.write(id, &vec![3; mds * 5 / 2]).unwrap();
        let mut train = Vec::new();
        let t = p
            .client
            .poll_transmit(p.now, 64, &mut train)
            .expect("a train");
        assert_eq!(t.len_bytes, train.len(), "v6 {v6}");
        assert_eq!(t.segment_bytes, mds, "v6 {v6}: full datagrams");
        assert_eq!(t.datagrams(), 3, "v6 {v6}: {t:?}");
        let last = t.len_bytes - 2 * t.segment_bytes;
        assert!(
            last > 0 && last < mds,
            "v6 {v6}: last datagram {last} bytes"
        );
        // Every segment is one whole packet: the server opens three.
        assert_eq!(deliver_train(&mut p, &t, &train), 3, "v6 {v6}");
        // Nothing was left for a second train.
        train.clear();
        let rest = p.client.poll_transmit(p.now, 64, &mut train);
        assert!(
            rest.is_none_or(|r| r.datagrams() == 1 && r.len_bytes < 100),
            "v6 {v6}: {rest:?}"
        );
    }
}

#[test]
fn a_train_holds_at_most_the_datagrams_asked_for() {
    for v6 in [false, true] {
        let mut p = Pair::connected(v6, false, false);
        let mds = p.client().mds();
        let c = p.client();
        let id = c.open_stream(false, Priority::default()).unwrap();
        c.write(id, &vec![5; mds * 8]).unwrap();
        let mut buf = Vec::new();
        for max in [1, 2, 3] {
            buf.clear();
            let t = p.client.poll_transmit(p.now, max, &mut buf).unwrap();
            assert_eq!(t.datagrams(), max, "v6 {v6}");
            assert_eq!(t.len_bytes, max * mds, "v6 {v6}: all full");
            assert_eq!(deliver_train(&mut p, &t, &buf), max as u64, "v6 {v6}");
        }
    }
}

#[test]
fn segments_are_the_datagram_size_each_family_is_configured_with() {
    // A 1500-byte MTU less the IP and UDP headers: 1472 bytes over IPv4,
    // 1452 over IPv6.
    for (v6, payload) in [(false, 1472u64), (true, 1452)] {
        let mut p = Pair::connected_with(v6, |client, server| {
            client.max_datagram_size = payload;
            server.max_datagram_size = payload;
        });
        let c = p.client();
        let id = c.open_stream(false, Priority::default()).unwrap();
        c.write(id, &vec![9; 20_000]).unwrap();
        let mut train = Vec::new();
        // Room kept in front for the headers is left alone.
        train.resize(48, 0xaa);
        let t = p.client.poll_transmit(p.now, 64, &mut train).unwrap();
        assert!(train[..48].iter().all(|&b| b == 0xaa), "v6 {v6}");
        assert_eq!(t.segment_bytes as u64, payload, "v6 {v6}");
        assert!(t.datagrams() > 1, "v6 {v6}: {t:?}");
        assert!(t.len_bytes <= MAX_TRAIN_BYTES, "v6 {v6}");
        let n = t.datagrams() as u64;
        assert_eq!(deliver_train(&mut p, &t, &train[48..]), n, "v6 {v6}");
    }
}

#[test]
fn a_stream_rule_broken_in_another_frame_names_that_frame() {
    for v6 in [false, true] {
        // The client's own uni stream 2 has no receiving half, and the
        // server's uni stream 3 no sending half at the client.
        let cases = [
            (
                Frame::ResetStream {
                    id: 2,
                    error_code: 0,
                    final_size: 0,
                },
                ty::RESET_STREAM,
            ),
            (Frame::MaxStreamData { id: 3, max: 10 }, ty::MAX_STREAM_DATA),
            (
                Frame::StopSending {
                    id: 3,
                    error_code: 0,
                },
                ty::STOP_SENDING,
            ),
        ];
        for (frame, expected) in cases {
            let mut p = Pair::connected(v6, false, false);
            let now = p.now + MS;
            let c = p.client();
            c.handle_frame(now, &frame, None);
            let close = c.close.as_ref().expect("the connection closes");
            assert_eq!(close.code, code::STREAM_STATE_ERROR, "{frame:?}");
            assert_eq!(close.frame_type, Some(expected.into()), "{frame:?}");
        }
    }
}
