//! Streams over the connection: no head-of-line blocking across streams,
//! flow control, reset and stop-sending, writable_bytes.

mod util;

use brisk_proto::Event;
use brisk_proto::streams::{Priority, StreamEvent, StreamId};
use brisk_time::Instant;
use util::*;

fn ms(x: u64) -> Instant {
    Instant::from_millis(x)
}

fn read_all(p: &mut Pair, id: StreamId, out: &mut Vec<u8>) -> bool {
    let mut buf = vec![0u8; 16_384];
    let Some(s) = p.server_conn() else {
        return false;
    };
    while let Ok(r) = s.read(id, &mut buf) {
        out.extend_from_slice(&buf[..r.bytes]);
        if r.fin {
            return true;
        }
        if r.bytes == 0 {
            break;
        }
    }
    false
}

#[test]
fn a_lost_packet_blocks_only_its_own_stream() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 30));
        assert!(p.connect());
        // Drop the first full-size datagram after the handshake: it carries
        // the start of stream A.
        let mut dropped = false;
        p.tap = Some(Box::new(move |dir, d| {
            if dir == Dir::ToServer && !dropped && d.len() > 1000 {
                dropped = true;
                return false;
            }
            true
        }));
        let a = p
            .client_conn()
            .open_stream(false, Priority::default())
            .unwrap();
        p.client_conn().write(a, &payload(3_000, 1)).unwrap();
        p.client_conn().finish(a).unwrap();
        p.flush();
        let b = p
            .client_conn()
            .open_stream(false, Priority::default())
            .unwrap();
        p.client_conn().write(b, &payload(3_000, 2)).unwrap();
        p.client_conn().finish(b).unwrap();
        let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
        let mut a_done = false;
        let mut b_done_at = None;
        assert!(p.run_until(ms(5_000), |p| {
            if !a_done {
                a_done = read_all(p, a, &mut got_a);
            }
            if b_done_at.is_none() && read_all(p, b, &mut got_b) {
                b_done_at = Some((p.now, got_a.len()));
            }
            a_done && b_done_at.is_some()
        }));
        let (b_at, a_len_then) = b_done_at.unwrap();
        assert_eq!(
            a_len_then, 0,
            "{family:?}: A waits for its retransmission while B is complete"
        );
        assert!(b_at < p.now, "B finished before A");
        assert_eq!(got_a, payload(3_000, 1));
        assert_eq!(got_b, payload(3_000, 2));
    }
}

#[test]
fn flow_control_bounds_what_the_receiver_buffers() {
    for family in FAMILIES {
        let mut cfg = PairConfig::new(family, 31);
        cfg.server.transport.streams.stream_receive_window = 64 * 1024;
        cfg.server.transport.streams.connection_receive_window = 96 * 1024;
        let mut p = Pair::new(cfg);
        assert!(p.connect());
        let data = payload(1 << 20, 3);
        let id = p
            .client_conn()
            .open_stream(false, Priority::default())
            .unwrap();
        let mut written = 0;
        // The server application does not read for one second.
        p.run_until(ms(1_000), |p| {
            if written < data.len() {
                written += p.client_conn().write(id, &data[written..]).unwrap_or(0);
            }
            false
        });
        let sent = p.client_conn().stats().stream_bytes_sent;
        assert_eq!(
            sent,
            64 * 1024,
            "{family:?}: the sender stops at the stream window"
        );
        let buffered = p.server_conn().unwrap().streams().recv_buffered_bytes(id);
        assert!(buffered <= 64 * 1024);
        // Reading releases credit and the transfer completes.
        let mut got = Vec::new();
        assert!(p.run_until(ms(30_000), |p| {
            if written < data.len() {
                written += p.client_conn().write(id, &data[written..]).unwrap_or(0);
                if written == data.len() {
                    p.client_conn().finish(id).unwrap();
                }
            }
            read_all(p, id, &mut got)
        }));
        assert_eq!(sha256(&got), sha256(&data));
    }
}

#[test]
fn reset_and_stop_sending_reach_the_peer() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 32));
        assert!(p.connect());
        let c = p.client_conn();
        let r = c.open_stream(false, Priority::default()).unwrap();
        c.write(r, &payload(50_000, 4)).unwrap();
        let s = c.open_stream(true, Priority::default()).unwrap();
        c.write(s, b"ping").unwrap();
        p.run_until(ms(200), |p| {
            p.server_conn.is_some()
                && p.server_events
                    .contains(&Event::Stream(StreamEvent::Opened(s)))
        });
        p.client_conn().reset_stream(r, 7).unwrap();
        p.server_conn().unwrap().stop_sending(s, 9).unwrap();
        assert!(
            p.run_until(ms(2_000), |p| {
                p.server_events
                    .contains(&Event::Stream(StreamEvent::Reset(r, 7)))
                    && p.client_events
                        .contains(&Event::Stream(StreamEvent::Stopped(s, 9)))
            }),
            "{family:?}: {:?} {:?}",
            p.client_events,
            p.server_events
        );
        // The connection carries on.
        assert!(p.client_conn().is_established() && p.server_conn().unwrap().is_established());
    }
}

#[test]
fn writable_bytes_follow_the_congestion_window() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 33));
        assert!(p.connect());
        let c = p.client_conn();
        let id = c.open_stream(false, Priority::default()).unwrap();
        let cwnd = c.stats().cwnd_bytes;
        // Nothing in flight: the window plus two packets.
        assert_eq!(c.writable_bytes(id), cwnd + 2 * 1200);
        c.write(id, &payload(5_000, 5)).unwrap();
        assert_eq!(c.writable_bytes(id), cwnd + 2 * 1200 - 5_000);
        p.flush();
        let c = p.client_conn();
        let in_flight = c.stats().bytes_in_flight;
        let unsent = c.streams().unsent_bytes(id);
        // The pacer lets a burst out; what is in flight no longer counts as
        // unsent, and the window shrinks by it.
        assert!(in_flight > 2_000 && unsent < 5_000, "{in_flight} {unsent}");
        assert_eq!(c.writable_bytes(id), (cwnd - in_flight) + 2 * 1200 - unsent);
    }
}

#[test]
fn a_response_leaves_as_equal_full_packets_and_a_shorter_last() {
    for family in FAMILIES {
        let mut p = Pair::new(PairConfig::new(family, 31));
        assert!(p.connect());
        // Settle the handshake's ACKs first.
        p.run_until(ms(200), |_| false);
        let sizes = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let seen = sizes.clone();
        p.tap = Some(Box::new(move |dir, d| {
            // Stream packets only, not the client's bare ACKs.
            if dir == Dir::ToServer && d.len() > 100 {
                seen.borrow_mut().push(d.len());
            }
            true
        }));
        let id = p
            .client_conn()
            .open_stream(true, Priority::default())
            .unwrap();
        p.client_conn().write(id, &payload(4096, 3)).unwrap();
        p.client_conn().finish(id).unwrap();
        let mut got = Vec::new();
        assert!(p.run_until(ms(2_000), |p| read_all(p, id, &mut got)));
        assert_eq!(got, payload(4096, 3));
        // Equal sizes (the datagram budget) up to the last, so the I/O
        // layer can send them as one GSO train; the first packet's STREAM
        // header has no offset and must not leave it shorter.
        let sizes = sizes.borrow();
        let (last, full) = sizes.split_last().expect("the stream's packets");
        assert!(full.len() >= 2, "{family:?}: {sizes:?}");
        assert!(full.iter().all(|&s| s == full[0]), "{family:?}: {sizes:?}");
        assert!(*last < full[0], "{family:?}: {sizes:?}");
    }
}
