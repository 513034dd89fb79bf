//! Streams and connections: open, accept, write, finish, read, close.
//!
//! Writes and reads never block: a write takes what fits the send buffer
//! and the peer's credit and says how much; a read takes what has arrived
//! in order. `BRISK_STATUS_DONE` means "nothing now, wait for the event"
//! (`STREAM_WRITABLE`, `STREAM_READABLE`).

use brisk_proto::streams::{Priority, StreamId};
use brisk_time::Instant;

use crate::endpoint::{BriskEndpoint, connection, non_null, with_endpoint};
use crate::status::{BriskStatus, fail};

fn stream_failed(func: &str, conn: u64, e: impl std::fmt::Display) -> BriskStatus {
    fail(
        BriskStatus::StreamError,
        format!("{func} on connection {conn}: {e}"),
    )
}

/// Opens a stream on `connection`, bidirectional when `bidi` is true, else
/// send-only; its id goes to `*stream_out`. At the peer's stream limit it
/// fails with `BRISK_STATUS_STREAM_ERROR`; `STREAMS_AVAILABLE` follows
/// when the peer allows more.
///
/// # Safety
/// `ep` as for every call; `stream_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_stream_open(
    ep: *mut BriskEndpoint,
    connection_handle: u64,
    bidi: bool,
    stream_out: *mut u64,
) -> BriskStatus {
    let func = "brisk_stream_open";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        non_null(stream_out, func, "stream_out")?;
        let c = connection(ep, connection_handle, func)?;
        let id = c
            .open_stream(bidi, Priority::default())
            .map_err(|e| stream_failed(func, connection_handle, e))?;
        // SAFETY: non-NULL and writable by the caller's promise.
        unsafe { stream_out.write(id.0) };
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}

/// The next stream the peer opened on `connection`, into `*stream_out`;
/// `BRISK_STATUS_DONE` when none waits.
///
/// # Safety
/// `ep` as for every call; `stream_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_stream_accept(
    ep: *mut BriskEndpoint,
    connection_handle: u64,
    stream_out: *mut u64,
) -> BriskStatus {
    let func = "brisk_stream_accept";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        non_null(stream_out, func, "stream_out")?;
        let Some(id) = connection(ep, connection_handle, func)?.accept_stream() else {
            return Ok(BriskStatus::Done);
        };
        // SAFETY: non-NULL and writable by the caller's promise.
        unsafe { stream_out.write(id.0) };
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}

/// Queues up to `len` bytes of `data` on `stream`; how many were taken
/// goes to `*written_out`. Taking none of a non-empty write returns
/// `BRISK_STATUS_DONE`: write again after `STREAM_WRITABLE`.
///
/// # Safety
/// `ep` as for every call; `data` NULL only with `len` 0, else `len`
/// readable bytes; `written_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_stream_write(
    ep: *mut BriskEndpoint,
    connection_handle: u64,
    stream: u64,
    data: *const u8,
    len: usize,
    written_out: *mut usize,
) -> BriskStatus {
    let func = "brisk_stream_write";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        non_null(written_out, func, "written_out")?;
        if len > 0 {
            non_null(data, func, "data")?;
        }
        let bytes: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: non-NULL; `len` readable bytes by the caller's promise.
            unsafe { std::slice::from_raw_parts(data, len) }
        };
        let c = connection(ep, connection_handle, func)?;
        let n = c
            .write(StreamId(stream), bytes)
            .map_err(|e| stream_failed(func, connection_handle, e))?;
        // SAFETY: non-NULL and writable by the caller's promise.
        unsafe { written_out.write(n) };
        Ok(if n == 0 && len > 0 {
            BriskStatus::Done
        } else {
            BriskStatus::Ok
        })
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}

/// Ends `stream` after the bytes written so far (the peer reads its end).
///
/// # Safety
/// `ep` as for every call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_stream_finish(
    ep: *mut BriskEndpoint,
    connection_handle: u64,
    stream: u64,
) -> BriskStatus {
    let func = "brisk_stream_finish";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        connection(ep, connection_handle, func)?
            .finish(StreamId(stream))
            .map_err(|e| stream_failed(func, connection_handle, e))?;
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}

/// Copies up to `cap` in-order bytes of `stream` into `buf`; the count goes
/// to `*read_out` and whether the stream ended with them to `*fin_out`.
/// `BRISK_STATUS_DONE` when nothing new has arrived yet.
///
/// # Safety
/// `ep` as for every call; `buf` `cap` writable bytes; `read_out` and
/// `fin_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_stream_read(
    ep: *mut BriskEndpoint,
    connection_handle: u64,
    stream: u64,
    buf: *mut u8,
    cap: usize,
    read_out: *mut usize,
    fin_out: *mut bool,
) -> BriskStatus {
    let func = "brisk_stream_read";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        non_null(buf, func, "buf")?;
        non_null(read_out, func, "read_out")?;
        non_null(fin_out, func, "fin_out")?;
        // SAFETY: non-NULL; `cap` writable bytes by the caller's promise.
        let dest = unsafe { std::slice::from_raw_parts_mut(buf, cap) };
        let r = connection(ep, connection_handle, func)?
            .read(StreamId(stream), dest)
            .map_err(|e| stream_failed(func, connection_handle, e))?;
        // SAFETY: non-NULL and writable by the caller's promise.
        unsafe { read_out.write(r.bytes) };
        // SAFETY: as above.
        unsafe { fin_out.write(r.fin) };
        Ok(if r.bytes == 0 && !r.fin {
            BriskStatus::Done
        } else {
            BriskStatus::Ok
        })
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}

/// Closes `connection` with an application error code (0: all is well);
/// the peer learns at the next `brisk_poll_transmit`, and `CLOSED` follows
/// once the closing period ends.
///
/// # Safety
/// `ep` as for every call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_connection_close(
    ep: *mut BriskEndpoint,
    now_ns: u64,
    connection_handle: u64,
    error_code: u64,
) -> BriskStatus {
    let func = "brisk_connection_close";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        connection(ep, connection_handle, func)?.close(
            Instant::from_nanos(now_ns),
            error_code,
            b"",
        );
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}
