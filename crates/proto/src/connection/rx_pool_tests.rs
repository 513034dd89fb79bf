//! The decryption buffer pool: a reader that falls behind pins a buffer
//! per packet and the pool grows with the backlog; as it reads the backlog
//! the pool gives the buffers back instead of keeping its peak.

use super::recv::RX_BUFS_MIN;
use super::tests::Pair;
use crate::streams::Priority;

/// Bytes the client sends while the server's application does not read:
/// several hundred packets' worth, far past [`RX_BUFS_MIN`].
const BACKLOG_BYTES: usize = 600_000;

#[test]
fn buffers_a_backlog_pinned_are_freed_once_the_reader_catches_up() {
    for v6 in [false, true] {
        let mut p = Pair::connected(v6, false, false);
        let c = p.client();
        let id = c.open_stream(true, Priority::default()).unwrap();
        let data: Vec<u8> = (0..BACKLOG_BYTES).map(|i| (i % 251) as u8).collect();
        let mut written = 0;
        for _ in 0..400 {
            written += p.client().write(id, &data[written..]).unwrap();
            p.exchange(1);
            let c = p.client();
            if written == data.len()
                && c.streams().unsent_bytes(id) == 0
                && c.bytes_in_flight() == 0
            {
                break;
            }
        }
        assert_eq!(written, data.len());
        assert_eq!(p.client().streams().unsent_bytes(id), 0, "all delivered");
        let peak = p.server().rx_bufs_kept();
        assert!(
            peak > 4 * RX_BUFS_MIN,
            "{peak} buffers for an unread backlog of {BACKLOG_BYTES} bytes"
        );
        // The application reads it all, then the client sends a little
        // more: that packet's buffer comes from the freed pool, and the
        // rest of the backlog's buffers go.
        let mut out = vec![0u8; 64 * 1024];
        let mut read = Vec::new();
        while let Ok(r) = p.server().read(id, &mut out) {
            if r.bytes == 0 {
                break;
            }
            read.extend_from_slice(&out[..r.bytes]);
        }
        assert_eq!(read, data, "the backlog arrives intact");
        // Reading gave the buffers back, with no packet after it.
        let kept = p.server().rx_bufs_kept();
        assert!(
            kept <= RX_BUFS_MIN + 1,
            "{kept} buffers kept once the backlog was read (peak {peak})"
        );
        p.client().write(id, b"more").unwrap();
        p.exchange(3);
        let kept = p.server().rx_bufs_kept();
        assert!(
            kept <= RX_BUFS_MIN + 1,
            "{kept} buffers kept after the backlog was read (peak {peak})"
        );
    }
}

/// Bytes the server sends a client that reads as they come: a few hundred
/// packets, each of which would have taken a new buffer behind a buffer
/// too small to reuse.
const STREAMED_BYTES: usize = 600_000;

#[test]
fn buffers_made_before_the_datagram_size_grew_do_not_hold_the_pool() {
    for v6 in [false, true] {
        let mut p = Pair::connected_with(v6, |client, server| {
            for t in [client, server] {
                t.pmtud = true;
                t.max_datagram_size = 1452;
            }
        });
        // Path MTU discovery raises the datagram size above the 1200
        // bytes the first packets were decrypted at.
        p.exchange(60);
        let mds = p.client().mds();
        assert!(mds > 1200, "path MTU discovery stayed at {mds} bytes");
        let rooms = p.client().rx_buf_rooms();
        assert!(
            rooms.iter().any(|&r| r < mds),
            "no buffer smaller than the {mds}-byte datagrams: {rooms:?}"
        );
        let id = p.server().open_stream(true, Priority::default()).unwrap();
        let data: Vec<u8> = (0..STREAMED_BYTES).map(|i| (i % 251) as u8).collect();
        let (mut written, mut read) = (0, Vec::new());
        let mut out = vec![0u8; 64 * 1024];
        for _ in 0..2_000 {
            written += p.server().write(id, &data[written..]).unwrap();
            p.exchange(1);
            while let Ok(r) = p.client().read(id, &mut out) {
                if r.bytes == 0 {
                    break;
                }
                read.extend_from_slice(&out[..r.bytes]);
            }
            if read.len() == data.len() {
                break;
            }
        }
        assert_eq!(read, data, "the stream arrives intact");
        let kept = p.client().rx_bufs_kept();
        assert!(
            kept <= RX_BUFS_MIN + 1,
            "{kept} buffers kept by a reader that kept up ({} datagrams received)",
            p.client().stats().datagrams_received
        );
        let rooms = p.client().rx_buf_rooms();
        assert!(
            rooms.iter().all(|&r| r >= mds),
            "buffers too small for {mds}-byte datagrams are still kept: {rooms:?}"
        );
    }
}

/// A reader that takes each packet's data at once decrypts every packet
/// into the buffer returned last, whose lines are still in cache, not into
/// the oldest of a pool grown by an earlier burst.
#[test]
fn a_reader_that_keeps_up_reuses_the_buffer_returned_last() {
    let mut p = Pair::connected(false, false, false);
    let id = p.client().open_stream(true, Priority::default()).unwrap();
    // A burst left unread pins a buffer per packet: the pool grows.
    let burst = vec![7u8; 20_000];
    assert_eq!(p.client().write(id, &burst), Ok(burst.len()));
    for _ in 0..20 {
        p.exchange(1);
        if p.server().rx_bufs_kept() > 4 {
            break;
        }
    }
    let kept = p.server().rx_bufs_kept();
    assert!(kept > 4, "{kept} buffers after an unread burst");
    let mut out = vec![0u8; 64 * 1024];
    let mut read = 0;
    let mut starts = Vec::new();
    for round in 0..30 {
        if round >= 20 {
            assert_eq!(p.client().write(id, b"ping"), Ok(4));
        }
        p.exchange(1);
        while let Ok(r) = p.server().read(id, &mut out) {
            if r.bytes == 0 {
                break;
            }
            read += r.bytes;
        }
        if round >= 20 {
            starts.push(p.server().rx_buf_last());
        }
    }
    assert_eq!(read, burst.len() + 10 * 4, "everything sent was read");
    starts.dedup();
    assert_eq!(starts.len(), 1, "buffers used in turn: {starts:?}");
}
