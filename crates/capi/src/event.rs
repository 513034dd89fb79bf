//! Events as one flat C struct: what happened, to which connection and
//! stream, and a number whose meaning the kind gives.

use brisk_proto::Event;
use brisk_proto::streams::StreamEvent;

use crate::endpoint::{BriskEndpoint, non_null, note_reason, with_endpoint};
use crate::status::BriskStatus;

/// What an event reports.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BriskEventKind {
    /// The handshake completed: streams carry data both ways.
    Connected = 1,
    /// The peer opened `stream`; take it with `brisk_stream_accept`.
    StreamOpened = 2,
    /// `stream` has data (or its end) to read. Raised again after each
    /// read that leaves data behind.
    StreamReadable = 3,
    /// `stream` can take more bytes: write the next piece.
    StreamWritable = 4,
    /// Everything written on `stream`, its end included, was acknowledged.
    StreamFinished = 5,
    /// The peer abandoned its sending half of `stream` with error `value`.
    StreamReset = 6,
    /// The peer asked us to stop sending on `stream` (error `value`); our
    /// half was reset.
    StreamStopped = 7,
    /// The peer allows more streams; `value` is 1 for bidirectional.
    StreamsAvailable = 8,
    /// Server: the client's first flight carried `value` bytes of early
    /// data on `stream`. It may be a replay: act on it only idempotently.
    EarlyData = 9,
    /// The connection failed or the peer closed it; `value` is the error
    /// code where there is one, and `brisk_last_error` says why.
    ConnectionLost = 10,
    /// The connection is gone and its handle forgotten.
    Closed = 11,
    /// Unreliable datagrams arrived on the connection.
    DatagramsReadable = 12,
}

/// One event of one connection.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BriskEvent {
    /// What happened.
    pub kind: BriskEventKind,
    /// The connection it happened to.
    pub connection: u64,
    /// The stream, for the stream kinds; 0 otherwise.
    pub stream: u64,
    /// An error code, a byte count or a flag, as the kind says; 0 otherwise.
    pub value: u64,
}

fn flatten(connection: u64, event: Event) -> BriskEvent {
    let (kind, stream, value) = match event {
        Event::Connected => (BriskEventKind::Connected, 0, 0),
        Event::Stream(s) => match s {
            StreamEvent::Opened(id) => (BriskEventKind::StreamOpened, id.0, 0),
            StreamEvent::Readable(id) => (BriskEventKind::StreamReadable, id.0, 0),
            StreamEvent::Writable(id) => (BriskEventKind::StreamWritable, id.0, 0),
            StreamEvent::Finished(id) => (BriskEventKind::StreamFinished, id.0, 0),
            StreamEvent::Reset(id, code) => (BriskEventKind::StreamReset, id.0, code),
            StreamEvent::Stopped(id, code) => (BriskEventKind::StreamStopped, id.0, code),
            StreamEvent::Available { bidi } => {
                (BriskEventKind::StreamsAvailable, 0, u64::from(bidi))
            }
        },
        Event::EarlyData { stream, len_bytes } => (BriskEventKind::EarlyData, stream.0, len_bytes),
        Event::ConnectionLost(e) => {
            use brisk_proto::ConnectionError as E;
            let code = match &e {
                E::ApplicationClosed { code, .. }
                | E::PeerTransportError { code, .. }
                | E::TransportError { code, .. }
                | E::Refused { code, .. } => *code,
                _ => 0,
            };
            note_reason(connection, &e);
            (BriskEventKind::ConnectionLost, 0, code)
        }
        Event::Closed => (BriskEventKind::Closed, 0, 0),
        Event::DatagramsReadable => (BriskEventKind::DatagramsReadable, 0, 0),
    };
    BriskEvent {
        kind,
        connection,
        stream,
        value,
    }
}

/// The next event of any connection, into `*out`; `BRISK_STATUS_DONE` when
/// none is waiting. Call until `BRISK_STATUS_DONE` after every input.
///
/// # Safety
/// `ep` as for every call; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_poll_event(
    ep: *mut BriskEndpoint,
    out: *mut BriskEvent,
) -> BriskStatus {
    let func = "brisk_poll_event";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        non_null(out, func, "out")?;
        let Some((h, event)) = ep.inner.poll_event() else {
            return Ok(BriskStatus::Done);
        };
        // SAFETY: non-NULL and writable by the caller's promise.
        unsafe { out.write(flatten(h.0, event)) };
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}
