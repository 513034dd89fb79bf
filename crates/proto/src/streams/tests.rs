//! Two endpoints' streams wired back to back: end-to-end behaviour of
//! scheduling, flow control, cancellation, the low-water mark and cleanup.

use proptest::prelude::*;

use super::*;

const P: Priority = Priority(3);

/// Applies a control frame at the endpoint it was sent to.
fn apply_control(to: &mut Streams, frame: ControlFrame) -> Result<(), StreamError> {
    match frame {
        ControlFrame::MaxData(max) => to.handle_max_data(max),
        ControlFrame::MaxStreamData { id, max } => to.handle_max_stream_data(id, max)?,
        ControlFrame::MaxStreams { bidi, count } => to.handle_max_streams(bidi, count),
        ControlFrame::ResetStream {
            id,
            error_code,
            final_size,
        } => to.handle_reset(id, error_code, final_size)?,
        ControlFrame::StopSending { id, error_code } => to.handle_stop_sending(id, error_code)?,
        ControlFrame::DataBlocked(_) | ControlFrame::StreamDataBlocked { .. } => {}
    }
    Ok(())
}

/// Delivers every pending control frame from `from` to `to`, reliably.
fn exchange_control(from: &mut Streams, to: &mut Streams) -> Vec<ControlFrame> {
    let mut frames = Vec::new();
    while let Some(f) = from.poll_control(Instant::ZERO, Duration::ZERO) {
        apply_control(to, f).unwrap();
        from.on_control_acked(f);
        frames.push(f);
    }
    frames
}

/// Sends one chunk over a perfect path: delivered, then acknowledged.
fn transfer(from: &mut Streams, to: &mut Streams, max_len: usize) -> Option<StreamChunk> {
    let c = from.poll_transmit(max_len)?;
    to.handle_stream_frame(c.id, c.offset, &c.data, c.fin)
        .unwrap();
    from.on_chunk_acked(c.id, c.offset, c.data.len() as u64, c.fin);
    Some(c)
}

/// Runs a perfect path until both sides are quiet.
fn settle(a: &mut Streams, b: &mut Streams) {
    loop {
        let mut moved = !exchange_control(a, b).is_empty() | !exchange_control(b, a).is_empty();
        while transfer(a, b, 1200).is_some() {
            moved = true;
        }
        while transfer(b, a, 1200).is_some() {
            moved = true;
        }
        if !moved {
            return;
        }
    }
}

/// Reads everything readable now; the bool is the FIN.
fn read_all(s: &mut Streams, id: StreamId) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 1500];
    loop {
        let r = s.read(id, &mut buf).unwrap();
        out.extend_from_slice(&buf[..r.bytes]);
        if r.fin || r.bytes == 0 {
            return (out, r.fin);
        }
    }
}

fn events(s: &mut Streams) -> Vec<StreamEvent> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

/// A client that knows the server's limits, and the server.
fn pair(server_config: StreamsConfig) -> (Streams, Streams) {
    let mut client = Streams::new(Side::Client, StreamsConfig::default());
    client.set_peer_limits(PeerLimits::granted_by(&server_config));
    let mut server = Streams::new(Side::Server, server_config);
    server.set_peer_limits(PeerLimits::granted_by(&StreamsConfig::default()));
    (client, server)
}

fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ salt).collect()
}

#[test]
fn streams_share_the_connections_send_budget_and_hear_when_it_frees() {
    const STREAM: u64 = 64 << 10;
    let (mut client, mut server) = pair(StreamsConfig::default());
    client.config.send_buffer_limit = STREAM;
    client.config.connection_send_buffer_limit = 2 * STREAM;
    let ids: Vec<StreamId> = (0..8).map(|_| client.open(true, P).unwrap()).collect();
    let data = pattern(STREAM as usize, 1);
    let written: Vec<usize> = ids
        .iter()
        .map(|&id| client.write(id, &data).unwrap())
        .collect();
    // Two streams fill the budget; the other six take nothing, whatever
    // their own room.
    assert_eq!(written[..2], [STREAM as usize; 2]);
    assert!(written[2..].iter().all(|&n| n == 0), "{written:?}");
    assert_eq!(client.connection_send_buffered_bytes(), 2 * STREAM);
    assert!(!client.is_writable(ids[2]));
    assert_eq!(client.send_room(ids[2]), 0);
    events(&mut client);
    // Delivered and acknowledged: the budget is free again, and the
    // streams the budget stopped are told.
    settle(&mut client, &mut server);
    assert_eq!(client.connection_send_buffered_bytes(), 0);
    let writable: Vec<StreamId> = events(&mut client)
        .into_iter()
        .filter_map(|e| match e {
            StreamEvent::Writable(id) => Some(id),
            _ => None,
        })
        .collect();
    for id in &ids[2..] {
        assert!(writable.contains(id), "{id:?} not told: {writable:?}");
    }
    assert_eq!(client.write(ids[2], &data).unwrap(), STREAM as usize);
    // A reset gives its stream's bytes back at once.
    client.reset(ids[2], 7).unwrap();
    assert_eq!(client.connection_send_buffered_bytes(), 0);
}

#[test]
fn one_stream_may_always_fill_its_own_buffer() {
    let config = StreamsConfig {
        send_buffer_limit: 1 << 20,
        connection_send_buffer_limit: 1 << 10,
        ..StreamsConfig::default()
    };
    let s = Streams::new(Side::Client, config);
    assert_eq!(s.config().connection_send_buffer_limit, 1 << 20);
}

#[test]
fn open_respects_the_peers_max_streams() {
    let (mut client, _) = pair(StreamsConfig {
        max_streams_bidi: 2,
        ..StreamsConfig::default()
    });
    assert_eq!(client.open(true, P), Ok(StreamId(0)));
    assert_eq!(client.open(true, P), Ok(StreamId(4)));
    assert_eq!(
        client.open(true, P),
        Err(StreamError::StreamsBlocked { bidi: true })
    );
    assert_eq!(
        client.open(false, P),
        Ok(StreamId(2)),
        "unidirectional streams have their own limit"
    );
    client.handle_max_streams(true, 1);
    assert!(
        events(&mut client).is_empty(),
        "a smaller MAX_STREAMS is ignored"
    );
    client.handle_max_streams(true, 3);
    assert_eq!(
        events(&mut client),
        vec![StreamEvent::Available { bidi: true }]
    );
    assert_eq!(client.open(true, P), Ok(StreamId(8)));
}

#[test]
fn peer_streams_open_in_order_and_within_our_limit() {
    let mut server = Streams::new(
        Side::Server,
        StreamsConfig {
            max_streams_bidi: 3,
            ..StreamsConfig::default()
        },
    );
    server
        .handle_stream_frame(StreamId(8), 0, b"third", false)
        .unwrap();
    assert_eq!(
        events(&mut server),
        vec![
            StreamEvent::Opened(StreamId(0)),
            StreamEvent::Opened(StreamId(4)),
            StreamEvent::Opened(StreamId(8)),
            StreamEvent::Readable(StreamId(8)),
        ]
    );
    assert_eq!(server.accept(), Some(StreamId(0)));
    assert_eq!(server.accept(), Some(StreamId(4)));
    assert_eq!(server.accept(), Some(StreamId(8)));
    assert_eq!(server.accept(), None);
    let err = server
        .handle_stream_frame(StreamId(12), 0, b"x", false)
        .unwrap_err();
    assert_eq!(err, StreamError::StreamLimit { id: StreamId(12) });
    assert_eq!(err.transport_error_code(), Some(0x04));
}

#[test]
fn frames_and_calls_in_the_wrong_direction_are_rejected() {
    let mut server = Streams::new(Side::Server, StreamsConfig::default());
    let state = |id| Err(StreamError::StreamState { id: StreamId(id) });
    let own_uni = server.open(false, P).unwrap();
    assert_eq!(own_uni, StreamId(3));
    assert_eq!(
        server.handle_stream_frame(own_uni, 0, b"x", false),
        state(3)
    );
    assert_eq!(server.handle_reset(own_uni, 0, 0), state(3));
    assert_eq!(
        server.handle_stream_frame(StreamId(1), 0, b"x", false),
        state(1),
        "not opened yet"
    );
    assert_eq!(
        server.handle_max_stream_data(StreamId(2), 10),
        state(2),
        "client uni: we never send"
    );
    assert_eq!(server.handle_stop_sending(StreamId(2), 0), state(2));
    server
        .handle_stream_frame(StreamId(2), 0, b"hi", false)
        .unwrap();
    assert_eq!(
        server.write(StreamId(2), b"x"),
        Err(StreamError::WrongDirection { id: StreamId(2) })
    );
    assert_eq!(
        server.read(own_uni, &mut [0; 4]),
        Err(StreamError::WrongDirection { id: own_uni })
    );
    assert_eq!(
        server.write(StreamId(7), b"x"),
        Err(StreamError::UnknownStream { id: StreamId(7) })
    );
    assert_eq!(server.unsent_bytes(StreamId(7)), 0);
    assert!(!server.is_writable(StreamId(7)));
}

#[test]
fn bidirectional_exchange_finishes_and_is_forgotten() {
    let (mut client, mut server) = pair(StreamsConfig::default());
    let id = client.open(true, P).unwrap();
    let request = pattern(100_000, 1);
    assert_eq!(client.write(id, &request), Ok(request.len()));
    client.finish(id).unwrap();
    assert_eq!(client.finish(id), Err(StreamError::Closed { id }));
    settle(&mut client, &mut server);
    assert_eq!(server.accept(), Some(id));
    assert_eq!(read_all(&mut server, id), (request, true));
    assert_eq!(server.recv_state(id), Some(RecvState::DataRead));
    let reply = pattern(3000, 2);
    server.write(id, &reply).unwrap();
    server.finish(id).unwrap();
    settle(&mut client, &mut server);
    assert_eq!(read_all(&mut client, id), (reply, true));
    assert!(events(&mut client).contains(&StreamEvent::Finished(id)));
    assert!(events(&mut server).contains(&StreamEvent::Finished(id)));
    assert_eq!(client.live_streams(), 0);
    assert_eq!(server.live_streams(), 0);
    assert_eq!(
        client.read(id, &mut [0; 4]),
        Err(StreamError::Closed { id })
    );
    assert_eq!(client.stats().bytes_acked, 100_000);
    assert_eq!(server.stats().bytes_read, 100_000);
}

#[test]
fn closed_peer_streams_give_the_stream_credit_back() {
    let (mut client, mut server) = pair(StreamsConfig {
        max_streams_uni: 2,
        ..StreamsConfig::default()
    });
    let a = client.open(false, P).unwrap();
    let b = client.open(false, P).unwrap();
    assert!(client.open(false, P).is_err());
    for id in [a, b] {
        client.write(id, b"payload").unwrap();
        client.finish(id).unwrap();
    }
    settle(&mut client, &mut server);
    for id in [a, b] {
        assert_eq!(read_all(&mut server, id), (b"payload".to_vec(), true));
    }
    assert_eq!(server.live_streams(), 0);
    assert_eq!(
        client.live_streams(),
        0,
        "acknowledged uni streams are forgotten"
    );
    let frames = exchange_control(&mut server, &mut client);
    assert_eq!(
        frames,
        vec![ControlFrame::MaxStreams {
            bidi: false,
            count: 4
        }]
    );
    assert!(events(&mut client).contains(&StreamEvent::Available { bidi: false }));
    assert_eq!(client.open(false, P), Ok(StreamId(10)));
}

#[test]
fn a_lost_chunk_never_blocks_another_stream() {
    let (mut client, mut server) = pair(StreamsConfig::default());
    let a = client.open(false, P).unwrap();
    let b = client.open(false, P).unwrap();
    client.write(a, &pattern(3000, 3)).unwrap();
    client.write(b, &pattern(3000, 4)).unwrap();
    client.finish(a).unwrap();
    client.finish(b).unwrap();
    let chunks: Vec<StreamChunk> = std::iter::from_fn(|| client.poll_transmit(1000)).collect();
    assert_eq!(chunks.len(), 6);
    for c in &chunks {
        if c.id == a && c.offset == 0 {
            client.on_chunk_lost(c.id, c.offset, c.data.len() as u64, c.fin);
        } else {
            server
                .handle_stream_frame(c.id, c.offset, &c.data, c.fin)
                .unwrap();
            client.on_chunk_acked(c.id, c.offset, c.data.len() as u64, c.fin);
        }
    }
    let evs = events(&mut server);
    assert!(evs.contains(&StreamEvent::Readable(b)));
    assert!(
        !evs.contains(&StreamEvent::Readable(a)),
        "a has a hole at offset 0"
    );
    assert_eq!(read_all(&mut server, b), (pattern(3000, 4), true));
    assert_eq!(read_all(&mut server, a), (Vec::new(), false));
    assert_eq!(
        server.recv_buffered_bytes(a),
        3000,
        "the rest of a waits, reassembled"
    );
    let again = transfer(&mut client, &mut server, 1000).unwrap();
    assert_eq!((again.id, again.offset), (a, 0));
    assert_eq!(client.stats().bytes_retransmitted, 1000);
    assert_eq!(read_all(&mut server, a), (pattern(3000, 3), true));
}

#[test]
fn urgent_data_overtakes_buffered_bulk_data() {
    let (mut client, _) = pair(StreamsConfig::default());
    let bulk = client.open(false, Priority(5)).unwrap();
    client.write(bulk, &[0; 50_000]).unwrap();
    assert_eq!(client.poll_transmit(1000).unwrap().id, bulk);
    let urgent = client.open(false, Priority::HIGHEST).unwrap();
    client.write(urgent, &[1; 2500]).unwrap();
    client.finish(urgent).unwrap();
    let order: Vec<(StreamId, u64)> = std::iter::from_fn(|| client.poll_transmit(1000))
        .take(5)
        .map(|c| (c.id, c.offset))
        .collect();
    assert_eq!(
        order,
        vec![
            (urgent, 0),
            (urgent, 1000),
            (urgent, 2000),
            (bulk, 1000),
            (bulk, 2000)
        ]
    );
    // Lowering a stream's priority takes effect at once.
    let other = client.open(false, Priority(5)).unwrap();
    client.write(other, &[2; 5000]).unwrap();
    client.set_priority(bulk, Priority::LOWEST).unwrap();
    let ids: Vec<StreamId> = std::iter::from_fn(|| client.poll_transmit(1000))
        .take(5)
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, vec![other; 5]);
}

#[test]
fn streams_of_one_level_take_turns() {
    let (mut client, _) = pair(StreamsConfig::default());
    let ids: Vec<StreamId> = (0..3).map(|_| client.open(false, P).unwrap()).collect();
    for id in &ids {
        client.write(*id, &[0; 3000]).unwrap();
    }
    let order: Vec<StreamId> = std::iter::from_fn(|| client.poll_transmit(1000))
        .map(|c| c.id)
        .collect();
    assert_eq!(order, [ids.clone(), ids.clone(), ids].concat());
}

#[test]
fn lost_data_goes_first_within_its_level_only() {
    let (mut client, _) = pair(StreamsConfig::default());
    let a = client.open(false, P).unwrap();
    let b = client.open(false, P).unwrap();
    client.write(a, &[0; 1000]).unwrap();
    client.write(b, &[0; 5000]).unwrap();
    let first = client.poll_transmit(1000).unwrap();
    assert_eq!(first.id, a);
    client.on_chunk_lost(a, 0, 1000, false);
    let c = client.poll_transmit(1000).unwrap();
    assert_eq!(
        (c.id, c.offset),
        (a, 0),
        "the retransmission beats b's new data"
    );
    client.on_chunk_lost(a, 0, 1000, false);
    let urgent = client.open(false, Priority::HIGHEST).unwrap();
    client.write(urgent, &[0; 10]).unwrap();
    assert_eq!(
        client.poll_transmit(1000).unwrap().id,
        urgent,
        "a more urgent level still comes first"
    );
    assert_eq!(client.poll_transmit(1000).unwrap().id, a);
    assert_eq!(client.poll_transmit(1000).unwrap().id, b);
}

#[test]
fn reset_cancels_buffered_and_lost_data_immediately() {
    let (mut client, mut server) = pair(StreamsConfig::default());
    let doomed = client.open(false, P).unwrap();
    let other = client.open(false, P).unwrap();
    client.write(doomed, &[9; 100_000]).unwrap();
    client.write(other, &pattern(5000, 5)).unwrap();
    client.finish(other).unwrap();
    let mut sent_doomed = 0;
    let mut lost = Vec::new();
    while sent_doomed < 3000 {
        let c = client.poll_transmit(1000).unwrap();
        if c.id == doomed {
            sent_doomed += c.data.len() as u64;
            lost.push(c);
        } else {
            server
                .handle_stream_frame(c.id, c.offset, &c.data, c.fin)
                .unwrap();
            client.on_chunk_acked(c.id, c.offset, c.data.len() as u64, c.fin);
        }
    }
    for c in &lost {
        client.on_chunk_lost(c.id, c.offset, c.data.len() as u64, c.fin);
    }
    client.reset(doomed, 99).unwrap();
    assert_eq!(client.send_buffered_bytes(doomed), 0);
    assert_eq!(client.unsent_bytes(doomed), 0);
    assert_eq!(
        client.write(doomed, b"x"),
        Err(StreamError::Closed { id: doomed })
    );
    // Late reports about the cancelled data change nothing.
    for c in &lost {
        client.on_chunk_lost(c.id, c.offset, c.data.len() as u64, c.fin);
    }
    let rest: Vec<StreamChunk> =
        std::iter::from_fn(|| transfer(&mut client, &mut server, 1000)).collect();
    assert!(rest.iter().all(|c| c.id == other));
    assert_eq!(
        client.stats().bytes_sent,
        3000 + 5000,
        "unsent bytes of the reset stream never used credit"
    );
    let frames = exchange_control(&mut client, &mut server);
    assert_eq!(
        frames,
        vec![ControlFrame::ResetStream {
            id: doomed,
            error_code: 99,
            final_size: 3000
        }]
    );
    assert_eq!(
        server.read(doomed, &mut [0; 10]),
        Err(StreamError::Reset {
            id: doomed,
            error_code: 99
        })
    );
    assert!(events(&mut server).contains(&StreamEvent::Reset(doomed, 99)));
    assert_eq!(read_all(&mut server, other), (pattern(5000, 5), true));
    assert_eq!(server.live_streams(), 0);
    assert_eq!(client.live_streams(), 0);
}

#[test]
fn a_delivered_reset_event_lets_the_stream_be_forgotten() {
    let config = StreamsConfig {
        max_streams_uni: 1,
        connection_receive_window: 400,
        ..StreamsConfig::default()
    };
    let mut server = Streams::new(Side::Server, config);
    server
        .handle_stream_frame(StreamId(2), 0, &[0; 100], false)
        .unwrap();
    server.handle_reset(StreamId(2), 4, 300).unwrap();
    assert_eq!(server.recv_state(StreamId(2)), Some(RecvState::ResetRecvd));
    assert_eq!(
        server.recv_buffered_bytes(StreamId(2)),
        0,
        "the reset dropped the buffer"
    );
    let evs = events(&mut server);
    assert!(evs.contains(&StreamEvent::Reset(StreamId(2), 4)));
    assert_eq!(server.live_streams(), 0);
    assert_eq!(
        server.read(StreamId(2), &mut [0; 4]),
        Err(StreamError::Closed { id: StreamId(2) })
    );
    // All 300 bytes up to the final size count as consumed: the connection
    // window moves to 300 + 400, and the stream slot goes back to the peer.
    assert_eq!(
        server.poll_control(Instant::ZERO, Duration::ZERO),
        Some(ControlFrame::MaxData(700))
    );
    assert_eq!(
        server.poll_control(Instant::ZERO, Duration::ZERO),
        Some(ControlFrame::MaxStreams {
            bidi: false,
            count: 2
        })
    );
    assert_eq!(server.poll_control(Instant::ZERO, Duration::ZERO), None);
}

#[test]
fn windows_bound_what_is_sent_and_refill_after_half_is_read() {
    let server_config = StreamsConfig {
        stream_receive_window: 4000,
        connection_receive_window: 6000,
        ..StreamsConfig::default()
    };
    let (mut client, mut server) = pair(server_config);
    let a = client.open(false, P).unwrap();
    let b = client.open(false, P).unwrap();
    assert_eq!(
        client.write(a, &[1; 10_000]),
        Ok(4000),
        "the stream window bounds writes"
    );
    assert!(!client.is_writable(a));
    assert_eq!(client.write(b, &[2; 10_000]), Ok(4000));
    let chunks: Vec<StreamChunk> =
        std::iter::from_fn(|| transfer(&mut client, &mut server, 1000)).collect();
    let total: usize = chunks.iter().map(|c| c.data.len()).sum();
    assert_eq!(total, 6000, "the connection window bounds what is sent");
    let frames = exchange_control(&mut client, &mut server);
    assert_eq!(
        frames,
        vec![
            ControlFrame::StreamDataBlocked { id: a, limit: 4000 },
            ControlFrame::StreamDataBlocked { id: b, limit: 4000 },
            ControlFrame::DataBlocked(6000),
        ]
    );
    assert_eq!(read_all(&mut server, a).0.len(), 3000);
    let frames = exchange_control(&mut server, &mut client);
    assert_eq!(
        frames,
        vec![
            ControlFrame::MaxData(9000),
            ControlFrame::MaxStreamData { id: a, max: 7000 }
        ]
    );
    assert!(
        events(&mut client).contains(&StreamEvent::Writable(a)),
        "credit makes the stream writable"
    );
    assert_eq!(client.write(a, &[1; 10_000]), Ok(3000));
    let more: usize = std::iter::from_fn(|| transfer(&mut client, &mut server, 1000))
        .map(|c| c.data.len())
        .sum();
    assert_eq!(more, 3000);
    assert!(server.recv_buffered_bytes(b) <= 4000);
}

#[test]
fn a_peer_past_its_windows_is_a_flow_control_error() {
    let config = StreamsConfig {
        stream_receive_window: 1000,
        connection_receive_window: 1500,
        ..Default::default()
    };
    let mut server = Streams::new(Side::Server, config);
    let fc = |id| Err(StreamError::FlowControl { id: StreamId(id) });
    assert_eq!(
        server.handle_stream_frame(StreamId(0), 1, &[0; 1000], false),
        fc(0)
    );
    server
        .handle_stream_frame(StreamId(0), 999, &[0; 1], false)
        .unwrap();
    assert!(
        server.recv_buffered_bytes(StreamId(0)) <= 1000,
        "a far byte costs at most the window"
    );
    server
        .handle_stream_frame(StreamId(4), 0, &[0; 400], false)
        .unwrap();
    assert_eq!(
        server.handle_stream_frame(StreamId(8), 0, &[0; 101], false),
        fc(8),
        "connection window"
    );
    assert_eq!(server.handle_reset(StreamId(8), 0, 101), fc(8));
    assert_eq!(
        server.handle_stream_frame(StreamId(8), u64::MAX - 2, &[0; 8], false),
        fc(8)
    );
    assert_eq!(
        StreamError::FlowControl { id: StreamId(0) }.transport_error_code(),
        Some(0x03)
    );
}

#[test]
fn final_size_changes_are_errors() {
    let mut server = Streams::new(Side::Server, StreamsConfig::default());
    server
        .handle_stream_frame(StreamId(0), 0, b"0123456789", true)
        .unwrap();
    let fs = Err(StreamError::FinalSize { id: StreamId(0) });
    assert_eq!(
        server.handle_stream_frame(StreamId(0), 8, b"89a", false),
        fs
    );
    assert_eq!(
        server.handle_stream_frame(StreamId(0), 0, b"01234", true),
        fs
    );
    assert_eq!(server.handle_reset(StreamId(0), 1, 11), fs);
    server
        .handle_stream_frame(StreamId(4), 0, b"abc", false)
        .unwrap();
    assert_eq!(
        server.handle_reset(StreamId(4), 1, 2),
        Err(StreamError::FinalSize { id: StreamId(4) })
    );
    assert_eq!(
        StreamError::FinalSize { id: StreamId(0) }.transport_error_code(),
        Some(0x06)
    );
}

#[test]
fn stop_sending_makes_the_peer_reset() {
    let (mut client, mut server) = pair(StreamsConfig::default());
    let id = client.open(false, P).unwrap();
    client.write(id, &[0; 5000]).unwrap();
    transfer(&mut client, &mut server, 1000).unwrap();
    server.stop_sending(id, 7).unwrap();
    assert_eq!(
        server.read(id, &mut [0; 10]),
        Err(StreamError::Closed { id })
    );
    assert_eq!(
        exchange_control(&mut server, &mut client),
        vec![ControlFrame::StopSending { id, error_code: 7 }]
    );
    assert!(events(&mut client).contains(&StreamEvent::Stopped(id, 7)));
    assert!(
        client.poll_transmit(1000).is_none(),
        "nothing more is sent after STOP_SENDING"
    );
    assert_eq!(
        exchange_control(&mut client, &mut server),
        vec![ControlFrame::ResetStream {
            id,
            error_code: 7,
            final_size: 1000
        }]
    );
    assert!(
        !events(&mut server)
            .iter()
            .any(|e| matches!(e, StreamEvent::Reset(..))),
        "the app asked for it"
    );
    assert_eq!(server.live_streams(), 0);
    assert_eq!(client.live_streams(), 0);
}

#[test]
fn stopped_bidi_stream_reports_the_code_on_write() {
    let (mut client, mut server) = pair(StreamsConfig::default());
    let id = client.open(true, P).unwrap();
    client.write(id, b"hello").unwrap();
    settle(&mut client, &mut server);
    server.stop_sending(id, 3).unwrap();
    settle(&mut client, &mut server);
    assert_eq!(
        client.write(id, b"more"),
        Err(StreamError::Stopped { id, error_code: 3 })
    );
    assert_eq!(
        client.send_state(id),
        Some(SendState::ResetRecvd),
        "the RESET_STREAM was acknowledged"
    );
}

#[test]
fn lost_control_frames_are_sent_again_while_they_matter() {
    let config = StreamsConfig {
        stream_receive_window: 1000,
        connection_receive_window: 1000,
        ..Default::default()
    };
    let mut server = Streams::new(Side::Server, config);
    server
        .handle_stream_frame(StreamId(0), 0, &[0; 800], false)
        .unwrap();
    server.read(StreamId(0), &mut [0; 600]).unwrap();
    assert_eq!(
        server.poll_control(Instant::ZERO, Duration::ZERO),
        Some(ControlFrame::MaxData(1600))
    );
    assert_eq!(
        server.poll_control(Instant::ZERO, Duration::ZERO),
        Some(ControlFrame::MaxStreamData {
            id: StreamId(0),
            max: 1600
        })
    );
    assert_eq!(server.poll_control(Instant::ZERO, Duration::ZERO), None);
    server.read(StreamId(0), &mut [0; 100]).unwrap();
    server.on_control_lost(ControlFrame::MaxData(1600));
    server.on_control_lost(ControlFrame::MaxStreamData {
        id: StreamId(0),
        max: 1600,
    });
    assert_eq!(
        server.poll_control(Instant::ZERO, Duration::ZERO),
        Some(ControlFrame::MaxData(1700)),
        "the fresher value goes"
    );
    assert_eq!(
        server.poll_control(Instant::ZERO, Duration::ZERO),
        Some(ControlFrame::MaxStreamData {
            id: StreamId(0),
            max: 1700
        })
    );

    server.stop_sending(StreamId(0), 5).unwrap();
    let stop = server.poll_control(Instant::ZERO, Duration::ZERO).unwrap();
    server.on_control_lost(stop);
    assert_eq!(
        server.poll_control(Instant::ZERO, Duration::ZERO),
        Some(stop)
    );
    server.handle_reset(StreamId(0), 5, 800).unwrap();
    server.on_control_lost(stop);
    assert_eq!(
        server.poll_control(Instant::ZERO, Duration::ZERO),
        None,
        "the stream is gone: no STOP_SENDING needed"
    );

    let own = server.open(false, P).unwrap();
    server.reset(own, 1).unwrap();
    let reset = server.poll_control(Instant::ZERO, Duration::ZERO).unwrap();
    server.on_control_lost(reset);
    assert_eq!(
        server.poll_control(Instant::ZERO, Duration::ZERO),
        Some(reset),
        "resets are sent until acknowledged"
    );
    server.on_control_lost(ControlFrame::StreamDataBlocked { id: own, limit: 0 });
    assert_eq!(server.poll_control(Instant::ZERO, Duration::ZERO), None);
}

#[test]
fn readable_events_come_once_per_read() {
    let mut server = Streams::new(Side::Server, StreamsConfig::default());
    server
        .handle_stream_frame(StreamId(2), 0, b"abc", false)
        .unwrap();
    server
        .handle_stream_frame(StreamId(2), 3, b"def", false)
        .unwrap();
    assert_eq!(
        events(&mut server),
        vec![
            StreamEvent::Opened(StreamId(2)),
            StreamEvent::Readable(StreamId(2))
        ]
    );
    server.read(StreamId(2), &mut [0; 2]).unwrap();
    assert_eq!(
        events(&mut server),
        vec![StreamEvent::Readable(StreamId(2))],
        "data is left"
    );
    server.read(StreamId(2), &mut [0; 10]).unwrap();
    assert!(events(&mut server).is_empty());
    server
        .handle_stream_frame(StreamId(2), 6, b"", true)
        .unwrap();
    assert_eq!(
        events(&mut server),
        vec![StreamEvent::Readable(StreamId(2))],
        "the FIN is readable"
    );
    assert_eq!(
        server.read(StreamId(2), &mut [0; 10]),
        Ok(ReadResult {
            bytes: 0,
            fin: true
        })
    );
    assert_eq!(server.live_streams(), 0);
}

/// An application that writes one fixed-size unit per Writable event and
/// remembers when each unit was created.
struct UnitWriter {
    id: StreamId,
    /// (first offset, creation time in ms) of every unit.
    units: Vec<(u64, u64)>,
    /// Bytes of the current unit a short write left over.
    left: usize,
    written: u64,
}

impl UnitWriter {
    const UNIT: usize = 1000;

    fn write_unit(&mut self, s: &mut Streams, now_ms: u64) {
        if self.left == 0 {
            self.left = Self::UNIT;
            self.units.push((self.written, now_ms));
        }
        let n = s.write(self.id, &[0u8; Self::UNIT][..self.left]).unwrap();
        self.left -= n;
        self.written += n as u64;
    }

    /// When the unit holding `offset` was created.
    fn created_ms(&self, offset: u64) -> u64 {
        let i = self.units.partition_point(|(start, _)| *start <= offset);
        self.units[i - 1].1
    }
}

/// One run of the TCP_NOTSENT_LOWAT scenario from the WWDC 2015 talk: a
/// link drains the stream at a fixed rate, every sent byte is acknowledged
/// at once, and the application writes one 1,000-byte unit per Writable
/// event. Returns the worst age, in ms, of a byte when it leaves.
fn worst_staleness_ms(
    low_water_mark: u64,
    send_buffer_limit: u64,
    rate_bytes_per_ms: usize,
) -> u64 {
    // A buffer of fixed size: the peer's huge window must not grow it.
    let config = StreamsConfig {
        low_water_mark,
        send_buffer_limit,
        send_buffer_limit_max: send_buffer_limit,
        ..StreamsConfig::default()
    };
    let mut s = Streams::new(Side::Client, config);
    s.set_peer_limits(PeerLimits {
        max_streams_bidi: 1,
        max_streams_uni: 1,
        max_data: 1 << 40,
        max_stream_data: 1 << 40,
    });
    let id = s.open(false, P).unwrap();
    let mut app = UnitWriter {
        id,
        units: Vec::new(),
        left: 0,
        written: 0,
    };
    app.write_unit(&mut s, 0);
    let mut worst = 0;
    for now_ms in 0..10_000u64 {
        while let Some(ev) = s.poll_event() {
            if ev == StreamEvent::Writable(id) {
                app.write_unit(&mut s, now_ms);
            }
        }
        let mut budget = rate_bytes_per_ms;
        while budget > 0 {
            let Some(c) = s.poll_transmit(budget) else {
                break;
            };
            budget -= c.data.len();
            worst = worst.max(now_ms - app.created_ms(c.offset));
            s.on_chunk_acked(id, c.offset, c.data.len() as u64, c.fin);
        }
        assert!(s.unsent_bytes(id) <= send_buffer_limit);
    }
    worst
}

#[test]
fn low_water_mark_bounds_how_stale_sent_data_gets() {
    // The seed's numbers: a 120 KB send buffer drained at 50 KB/s.
    let rate = 50; // bytes per ms
    let buffer = 120_000;
    let lowat = 16 << 10;
    let without = worst_staleness_ms(u64::MAX, buffer, rate);
    let with = worst_staleness_ms(lowat, buffer, rate);
    // Without the mark the app fills the buffer: 120,000 / 50 = 2,400 ms,
    // plus up to one unit (20 ms) whose tail waited for room.
    let full = buffer / rate as u64;
    assert!(
        (full..=full + 1000 / rate as u64 + 1).contains(&without),
        "without low-water mark: {without} ms"
    );
    // With it, at most mark + one unit wait: (16,384 + 1,000) / 50 = 348 ms.
    let bound = (lowat + 1000) / rate as u64 + 1;
    assert!(with <= bound, "with low-water mark: {with} ms > {bound} ms");
    assert!(
        with >= lowat / rate as u64,
        "the mark itself is kept full: {with} ms"
    );
}

#[test]
fn a_lower_mark_makes_data_fresher() {
    let rate = 50;
    let small = worst_staleness_ms(4096, 120_000, rate);
    let large = worst_staleness_ms(32_768, 120_000, rate);
    assert!(small < large, "{small} ms vs {large} ms");
    assert!(small <= (4096 + 1000) / rate as u64 + 1);
}

/// A tiny deterministic generator for the property tests' path decisions.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// What the path does with one chunk.
enum Fate {
    Delivered,
    Lost,
    /// Declared lost too early: delivered and acknowledged anyway.
    Spurious,
}

/// Both endpoints after a lossy run, and what the server read per stream
/// (bytes, and whether the stream ended by FIN or reset).
struct Run {
    client: Streams,
    server: Streams,
    got: Vec<(Vec<u8>, bool)>,
}

/// Runs streams from client to server over a path that loses, reorders and
/// duplicates chunks, checking every chunk against the windows the server
/// advertised. Returns what the server read per stream.
fn lossy_run(
    lens: &[usize],
    seed: u64,
    loss_pct: u64,
    window: u64,
    max_len: usize,
    reset_at: Option<(usize, usize)>,
) -> Result<Run, TestCaseError> {
    let server_config = StreamsConfig {
        stream_receive_window: window,
        connection_receive_window: window * 2,
        ..StreamsConfig::default()
    };
    let (mut client, mut server) = pair(server_config);
    let mut rng = Xorshift(seed | 1);
    let ids: Vec<StreamId> = lens
        .iter()
        .map(|_| client.open(false, Priority(rng.next(3) as u8)).unwrap())
        .collect();
    let data: Vec<Vec<u8>> = lens
        .iter()
        .enumerate()
        .map(|(i, len)| pattern(*len, i as u8))
        .collect();
    let mut written = vec![0usize; lens.len()];
    let mut got = vec![(Vec::new(), false); lens.len()];
    let mut stream_max = vec![window; lens.len()];
    let mut conn_max = window * 2;
    let mut highest = vec![0u64; lens.len()];
    let mut in_flight: Vec<(StreamChunk, Fate)> = Vec::new();
    let mut reset_done = None;
    for step in 0..100_000usize {
        for (i, id) in ids.iter().enumerate() {
            if written[i] < lens[i] && reset_done != Some(i) {
                written[i] += client.write(*id, &data[i][written[i]..]).unwrap();
                if written[i] == lens[i] {
                    client.finish(*id).unwrap();
                }
            }
        }
        if let Some((victim, at)) = reset_at {
            // A stream already fully acknowledged is gone: nothing to cancel.
            if step == at && client.reset(ids[victim], 11).is_ok() {
                reset_done = Some(victim);
            }
        }
        let sent = client.poll_transmit(max_len);
        if let Some(c) = &sent {
            let i = ids.iter().position(|id| *id == c.id).unwrap();
            prop_assert!(reset_done != Some(i), "a reset stream was transmitted");
            let end = c.offset + c.data.len() as u64;
            prop_assert!(end <= stream_max[i], "past MAX_STREAM_DATA");
            highest[i] = highest[i].max(end);
            prop_assert!(highest.iter().sum::<u64>() <= conn_max, "past MAX_DATA");
            let fate = match rng.next(100) {
                r if r < loss_pct => Fate::Lost,
                r if r < loss_pct + 5 => Fate::Spurious,
                _ => Fate::Delivered,
            };
            if let Fate::Spurious = fate {
                client.on_chunk_lost(c.id, c.offset, c.data.len() as u64, c.fin);
            }
            in_flight.push((c.clone(), fate));
        }
        // Resolve one chunk in random order (reordering).
        if !in_flight.is_empty() && (sent.is_none() || rng.next(2) == 0) {
            let (c, fate) = in_flight.swap_remove(rng.next(in_flight.len() as u64) as usize);
            let len = c.data.len() as u64;
            match fate {
                Fate::Lost => client.on_chunk_lost(c.id, c.offset, len, c.fin),
                Fate::Delivered | Fate::Spurious => {
                    server
                        .handle_stream_frame(c.id, c.offset, &c.data, c.fin)
                        .unwrap();
                    if rng.next(10) == 0 {
                        server
                            .handle_stream_frame(c.id, c.offset, &c.data, c.fin)
                            .unwrap();
                    }
                    client.on_chunk_acked(c.id, c.offset, len, c.fin);
                }
            }
        }
        for (i, id) in ids.iter().enumerate() {
            if got[i].1 {
                continue;
            }
            let mut buf = [0u8; 700];
            match server.read(*id, &mut buf) {
                Ok(r) => {
                    got[i].0.extend_from_slice(&buf[..r.bytes]);
                    got[i].1 = r.fin;
                }
                Err(StreamError::Reset { .. }) => got[i].1 = true,
                Err(_) => {}
            }
        }
        for f in exchange_control(&mut server, &mut client) {
            match f {
                ControlFrame::MaxData(max) => conn_max = conn_max.max(max),
                ControlFrame::MaxStreamData { id, max } => {
                    let i = ids.iter().position(|x| *x == id).unwrap();
                    stream_max[i] = stream_max[i].max(max);
                }
                _ => {}
            }
        }
        exchange_control(&mut client, &mut server);
        if in_flight.is_empty() && got.iter().all(|g| g.1) && client.live_streams() == 0 {
            return Ok(Run {
                client,
                server,
                got,
            });
        }
    }
    Err(TestCaseError::fail("the transfer did not complete"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Losses, spurious losses, reordering and duplicates: every byte
    /// arrives, is acknowledged exactly once, and no chunk ever exceeds the
    /// windows the receiver advertised.
    #[test]
    fn lossy_path_delivers_every_byte_once(
        len in 1usize..20_000,
        seed in any::<u64>(),
        loss_pct in 0u64..40,
        window in 1000u64..8000,
        max_len in 16usize..1500,
    ) {
        let Run { client, server, got } = lossy_run(&[len], seed, loss_pct, window, max_len, None)?;
        prop_assert_eq!(&got[0].0, &pattern(len, 0));
        prop_assert_eq!(client.stats().bytes_acked, len as u64);
        prop_assert_eq!(client.stats().bytes_sent, len as u64);
        prop_assert_eq!(server.stats().bytes_received, len as u64);
        prop_assert_eq!(server.live_streams(), 0);
    }

    /// Several prioritized streams over a lossy path, one of them reset
    /// midway: the others arrive intact and the reset one is never sent
    /// again after the reset.
    #[test]
    fn cancellation_midway_leaves_other_streams_intact(
        lens in proptest::collection::vec(1usize..6000, 3),
        seed in any::<u64>(),
        loss_pct in 0u64..30,
        victim in 0usize..3,
        reset_step in 0usize..40,
    ) {
        let Run { server, got, .. } = lossy_run(&lens, seed, loss_pct, 4000, 500, Some((victim, reset_step)))?;
        for (i, len) in lens.iter().enumerate() {
            if i != victim {
                prop_assert_eq!(&got[i].0, &pattern(*len, i as u8));
            } else {
                let original = pattern(*len, i as u8);
                prop_assert!(original.starts_with(&got[i].0), "a reset stream delivers a prefix");
            }
        }
        prop_assert_eq!(server.live_streams(), 0);
    }
}

/// A sender that writes all it may and a reader that reads all it can,
/// over a perfect path, for `rounds` round trips: what the sender buffered
/// each round, and the MAX_STREAM_DATA limits the reader granted.
fn window_rounds(
    client_config: StreamsConfig,
    server_config: StreamsConfig,
    rounds: usize,
    read_per_round: usize,
) -> (Vec<usize>, Vec<u64>) {
    let mut client = Streams::new(Side::Client, client_config.clone());
    client.set_peer_limits(PeerLimits::granted_by(&server_config));
    let mut server = Streams::new(Side::Server, server_config);
    server.set_peer_limits(PeerLimits::granted_by(&client_config));
    let id = client.open(true, P).unwrap();
    let data = vec![7u8; 64 << 10];
    let mut buf = vec![0u8; read_per_round];
    let (mut written, mut granted) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        written.push(client.write(id, &data).unwrap());
        while transfer(&mut client, &mut server, 1200).is_some() {}
        server.read(id, &mut buf).unwrap();
        for f in exchange_control(&mut server, &mut client) {
            if let ControlFrame::MaxStreamData { max, .. } = f {
                granted.push(max);
            }
        }
    }
    (written, granted)
}

#[test]
fn a_window_the_sender_fills_while_the_reader_keeps_up_doubles_to_its_cap() {
    let server = StreamsConfig {
        stream_receive_window: 1000,
        stream_receive_window_max: 8000,
        ..StreamsConfig::default()
    };
    let (written, granted) = window_rounds(StreamsConfig::default(), server.clone(), 5, 64 << 10);
    // 1000 read: the window becomes 2000, then 4000, then the cap.
    assert_eq!(granted, [3000, 7000, 15_000, 23_000, 31_000]);
    assert_eq!(written, [1000, 2000, 4000, 8000, 8000]);
    // A reader that reads 600 bytes a round holds the sender itself: the
    // window stays, and only what was read is granted again.
    let (_, granted) = window_rounds(StreamsConfig::default(), server, 3, 600);
    assert_eq!(granted, [1600, 2200, 2800]);
}

#[test]
fn the_send_buffer_follows_a_grown_peer_window_up_to_its_own_cap() {
    let server = StreamsConfig {
        stream_receive_window: 1000,
        stream_receive_window_max: 8000,
        ..StreamsConfig::default()
    };
    let client = |max| StreamsConfig {
        send_buffer_limit: 1000,
        send_buffer_limit_max: max,
        ..StreamsConfig::default()
    };
    let (written, _) = window_rounds(client(16 << 20), server.clone(), 4, 64 << 10);
    assert_eq!(written, [1000, 2000, 4000, 8000]);
    // A cap at the limit keeps the buffer fixed, and with it the window.
    let (written, granted) = window_rounds(client(1000), server, 3, 64 << 10);
    assert_eq!(written, [1000, 1000, 1000]);
    assert_eq!(granted, [3000, 4000, 5000]);
}

#[test]
fn a_window_half_held_behind_a_hole_doubles_before_the_repair_lands() {
    let config = StreamsConfig {
        stream_receive_window: 4000,
        stream_receive_window_max: 16_000,
        ..StreamsConfig::default()
    };
    let (mut client, mut server) = pair(config.clone());
    let id = client.open(true, P).unwrap();
    let data = pattern(4000, 5);
    client.write(id, &data).unwrap();
    // Bytes 0..500 are on their way (lost, or late); 1000 bytes wait
    // behind them: under half the window, no grant yet.
    let missing = client.poll_transmit(500).unwrap();
    for _ in 0..2 {
        transfer(&mut client, &mut server, 500).unwrap();
    }
    assert_eq!(read_all(&mut server, id), (Vec::new(), false));
    assert!(exchange_control(&mut server, &mut client).is_empty());
    // Half the window behind the hole, the reader having read all it
    // could: the doubled window goes out before the repair lands.
    transfer(&mut client, &mut server, 500).unwrap();
    assert_eq!(
        exchange_control(&mut server, &mut client),
        [ControlFrame::MaxStreamData { id, max: 8000 }]
    );
    // The repair lands: everything reads, and the window, now 8000, owes
    // no grant until half of it is read.
    server
        .handle_stream_frame(missing.id, missing.offset, &missing.data, missing.fin)
        .unwrap();
    client.on_chunk_acked(id, missing.offset, missing.data.len() as u64, false);
    assert_eq!(read_all(&mut server, id), (data[..2000].to_vec(), false));
    assert!(exchange_control(&mut server, &mut client).is_empty());

    // The same 2000 bytes in order, left unread by a slow reader: the
    // reader, not the window, holds the sender, and nothing is granted.
    let (mut client, mut server) = pair(config);
    let id = client.open(true, P).unwrap();
    client.write(id, &data).unwrap();
    for _ in 0..4 {
        transfer(&mut client, &mut server, 500).unwrap();
    }
    assert!(exchange_control(&mut server, &mut client).is_empty());
}

/// What the sending side shows of a stream after acknowledgements.
fn send_view(s: &mut Streams, id: StreamId) -> impl PartialEq + std::fmt::Debug {
    (
        s.stats(),
        s.send_state(id),
        s.send_buffered_bytes(id),
        s.connection_send_buffered_bytes(),
        s.is_writable(id),
        s.live_streams(),
        events(s),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Chunks acknowledged in a row, handed over as one range (as an ACK
    /// of several packets does), leave the sender as chunk by chunk would:
    /// the same bytes acknowledged and freed, the same events, FIN or not,
    /// with some chunks acknowledged earlier out of order.
    #[test]
    fn chunks_acknowledged_as_one_range_leave_the_stream_as_one_by_one(
        len in 1usize..30_000,
        max_len in 100usize..1500,
        early in proptest::collection::vec(any::<bool>(), 40),
        split in 0usize..40,
        fin in any::<bool>(),
    ) {
        let data = pattern(len, 3);
        let mut sides = [pair(StreamsConfig::default()).0, pair(StreamsConfig::default()).0];
        let mut id = StreamId(0);
        let mut chunks = Vec::new();
        for s in &mut sides {
            id = s.open(true, P).unwrap();
            prop_assert_eq!(s.write(id, &data).unwrap(), len);
            if fin {
                s.finish(id).unwrap();
            }
            chunks.clear();
            while let Some(c) = s.poll_transmit(max_len) {
                chunks.push((c.offset, c.data.len() as u64, c.fin));
            }
        }
        // A few chunks acknowledged on their own first (out of order).
        let early: Vec<bool> = (0..chunks.len()).map(|i| early[i % early.len()]).collect();
        for s in &mut sides {
            for (i, &(o, l, f)) in chunks.iter().enumerate().rev() {
                if early[i] {
                    s.on_chunk_acked(id, o, l, f);
                }
            }
        }
        // Then everything, in order: chunk by chunk, or as two runs.
        for &(o, l, f) in &chunks {
            sides[0].on_chunk_acked(id, o, l, f);
        }
        let cut = split.min(chunks.len());
        for part in [&chunks[..cut], &chunks[cut..]] {
            if let (Some(first), Some(last)) = (part.first(), part.last()) {
                let end = last.0 + last.1;
                sides[1].on_chunk_acked(id, first.0, end - first.0, last.2);
            }
        }
        let [a, b] = &mut sides;
        prop_assert_eq!(send_view(a, id), send_view(b, id));
        prop_assert_eq!(a.stats().bytes_acked, len as u64);
    }
}

/// Readable pieces behind a filled hole: `read_each` hands them all over
/// in one call, in order and uncopied, with the same credit, events and
/// end of stream as reading chunks until one comes back empty.
#[test]
fn reading_each_piece_at_once_is_reading_chunks_until_empty() {
    for fin in [false, true] {
        let run = |all_at_once: bool| {
            let (mut client, mut server) = pair(StreamsConfig::default());
            let id = client.open(false, P).unwrap();
            let data = pattern(9000, 5);
            client.write(id, &data).unwrap();
            if fin {
                client.finish(id).unwrap();
            }
            let mut chunks = Vec::new();
            while let Some(c) = client.poll_transmit(1000) {
                chunks.push(c);
            }
            // The first chunk arrives last: the others wait behind it.
            for c in chunks.iter().skip(1).chain(chunks.first()) {
                server
                    .handle_stream_frame(c.id, c.offset, &c.data, c.fin)
                    .unwrap();
            }
            let mut got = Vec::new();
            let mut calls = 0;
            let ended = if all_at_once {
                calls += 1;
                server
                    .read_each(id, 700, |b| {
                        assert!(b.len() <= 700);
                        got.push(b);
                    })
                    .unwrap()
                    .fin
            } else {
                loop {
                    calls += 1;
                    let c = server.read_chunk(id, 700).unwrap();
                    let (empty, fin) = (c.data.is_empty(), c.fin);
                    if !empty {
                        got.push(c.data);
                    }
                    if fin || empty {
                        break fin;
                    }
                }
            };
            let bytes: Vec<u8> = got.iter().flat_map(|b| b.iter().copied()).collect();
            assert_eq!(bytes, data);
            let control: Vec<ControlFrame> =
                std::iter::from_fn(|| server.poll_control(Instant::ZERO, Duration::ZERO)).collect();
            let view = (
                got.len(),
                ended,
                server.stats(),
                server.recv_state(id),
                server.recv_buffered_bytes(id),
                server.live_streams(),
                events(&mut server),
                control,
            );
            (view, calls)
        };
        let (one_by_one, calls) = run(false);
        let (at_once, call) = run(true);
        assert_eq!(one_by_one, at_once, "fin {fin}");
        assert!(one_by_one.0 > 10, "{} pieces", one_by_one.0);
        assert_eq!(one_by_one.1, fin);
        assert!(calls >= one_by_one.0 && call == 1);
    }
}
