//! The endpoint object and its I/O: datagrams in, datagrams out, the timer.
//!
//! The application owns the UDP socket and the clock. Its event loop does,
//! whenever the socket is readable or the timer fires:
//! 1. `brisk_handle_datagram` for each datagram read (`brisk_handle_timeout`
//!    when the timer fired);
//! 2. `brisk_poll_event` until `BRISK_STATUS_DONE`, acting on each event;
//! 3. `brisk_poll_transmit` until `BRISK_STATUS_DONE`, sending each datagram;
//! 4. `brisk_poll_timeout` to arm the timer, then sleeps in poll/epoll/kqueue
//!    (or a `CFRunLoop` / `Looper` source) on the socket and that deadline.
//!
//! Times are nanoseconds from any fixed epoch the application picks (a
//! monotonic clock), always non-decreasing.

use std::ffi::c_char;

use brisk_proto::crypto::{KEY_LEN, Keypair};
use brisk_proto::{ClientConfig, ConnectionHandle, Endpoint, ServerConfig, Transmit};
use brisk_time::Instant;
use brisk_wire::Ecn;

use crate::addr::BriskAddr;
use crate::status::{BriskStatus, fail, guard, set_last_error};

/// One Brisk endpoint (client, or server and client) behind one UDP
/// socket the application owns. Opaque to C.
pub struct BriskEndpoint {
    pub(crate) inner: Endpoint,
    /// The next datagram to hand out, kept when the caller's buffer was too
    /// small for it.
    pending: Option<Transmit>,
    out: Vec<u8>,
    /// Set once a panic was caught: the endpoint's state may be torn.
    poisoned: bool,
}

/// A datagram to send, as `brisk_poll_transmit` describes it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BriskTransmit {
    /// Where to send it.
    pub destination: BriskAddr,
    /// The ECN codepoint for the IP header (IP_TOS / IPV6_TCLASS low two
    /// bits): 0 not ECN-capable, 1 ECT(1), 2 ECT(0), 3 CE.
    pub ecn: u8,
    /// Bytes written to the caller's buffer; on `BRISK_STATUS_BUFFER_TOO_SMALL`,
    /// the size the buffer needs.
    pub len: usize,
}

/// Fails with [`BriskStatus::NullArgument`] when `p` is NULL.
pub(crate) fn non_null<T>(p: *const T, func: &str, what: &str) -> Result<(), BriskStatus> {
    if p.is_null() {
        Err(fail(
            BriskStatus::NullArgument,
            format!("{func}: {what} must not be NULL"),
        ))
    } else {
        Ok(())
    }
}

/// Runs `body` on the endpoint behind `ep`: checks it is not NULL and not
/// broken by an earlier panic, and catches a panic of its own.
///
/// # Safety
/// `ep` is NULL or a live pointer from [`brisk_endpoint_new`] that no other
/// thread uses during the call.
pub(crate) unsafe fn with_endpoint(
    ep: *mut BriskEndpoint,
    func: &str,
    body: impl FnOnce(&mut BriskEndpoint) -> Result<BriskStatus, BriskStatus>,
) -> BriskStatus {
    if let Err(status) = non_null(ep, func, "the endpoint") {
        return status;
    }
    // SAFETY: non-NULL, and the caller promises it is live and not shared.
    let ep = unsafe { &mut *ep };
    if ep.poisoned {
        return fail(
            BriskStatus::Internal,
            format!("{func}: the endpoint is unusable after an internal error; free it"),
        );
    }
    let status = guard(|| body(ep).unwrap_or_else(|failed| failed));
    if status == BriskStatus::Internal {
        ep.poisoned = true;
    }
    status
}

/// The ECN codepoint named by the low two bits of a TOS / traffic class
/// byte.
pub(crate) fn ecn_from(bits: u8, func: &str) -> Result<Ecn, BriskStatus> {
    if bits > 3 {
        return Err(fail(
            BriskStatus::InvalidArgument,
            format!("{func}: ECN codepoint {bits} is not 0-3 (pass the TOS byte's low two bits)"),
        ));
    }
    Ok(Ecn::from_bits(bits))
}

/// Reads a 32-byte key the caller passed.
///
/// # Safety
/// `key` is non-NULL and points at 32 readable bytes.
unsafe fn read_key(key: *const u8) -> [u8; KEY_LEN] {
    let mut out = [0u8; KEY_LEN];
    // SAFETY: the caller promises 32 readable bytes.
    out.copy_from_slice(unsafe { std::slice::from_raw_parts(key, KEY_LEN) });
    out
}

/// Computes the 32-byte X25519 public key of a private key, for the
/// server to hand to its clients (who pin it).
///
/// # Safety
/// `private_key` points at 32 readable bytes, `public_key_out` at 32
/// writable bytes (either may be NULL, which is reported).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_public_key(
    private_key: *const u8,
    public_key_out: *mut u8,
) -> BriskStatus {
    guard(|| {
        let func = "brisk_public_key";
        if let Err(s) = non_null(private_key, func, "private_key")
            .and_then(|()| non_null(public_key_out, func, "public_key_out"))
        {
            return s;
        }
        // SAFETY: non-NULL; the caller promises 32 readable bytes.
        let public = Keypair::from_private(unsafe { read_key(private_key) }).public();
        // SAFETY: non-NULL; the caller promises 32 writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(public.as_ptr(), public_key_out, KEY_LEN) };
        BriskStatus::Ok
    })
}

/// A new endpoint. With `server_private_key` NULL it only connects out;
/// with a 32-byte private key it also accepts connections, under that
/// static identity. All of its randomness (connection IDs, ephemeral
/// keys) comes from `seed`: take it from the system's random source.
/// Returns NULL on failure, with the reason in `brisk_last_error`.
///
/// # Safety
/// `server_private_key` is NULL or points at 32 readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_endpoint_new(
    seed: u64,
    server_private_key: *const u8,
) -> *mut BriskEndpoint {
    let mut made = None;
    let status = guard(|| {
        let server = (!server_private_key.is_null()).then(|| {
            // SAFETY: non-NULL; the caller promises 32 readable bytes.
            ServerConfig::new(Keypair::from_private(unsafe {
                read_key(server_private_key)
            }))
        });
        made = Some(Box::new(BriskEndpoint {
            inner: Endpoint::new(seed, server),
            pending: None,
            out: Vec::with_capacity(2048),
            poisoned: false,
        }));
        BriskStatus::Ok
    });
    match (status, made) {
        (BriskStatus::Ok, Some(ep)) => Box::into_raw(ep),
        _ => std::ptr::null_mut(),
    }
}

/// Frees an endpoint and every connection in it, without telling peers
/// (close connections first for that). NULL is ignored.
///
/// # Safety
/// `ep` is NULL or a pointer from [`brisk_endpoint_new`] not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_endpoint_free(ep: *mut BriskEndpoint) {
    if ep.is_null() {
        return;
    }
    // SAFETY: the caller promises this came from brisk_endpoint_new and
    // is freed once. A panic while dropping is caught and dropped.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(unsafe { Box::from_raw(ep) })
    }));
}

/// Starts a connection to `remote`. With `server_public_key` (32 bytes) the
/// client pins the server's identity and the handshake takes one round
/// trip (Noise IK); with NULL it accepts any server (Noise XX). The new
/// connection's handle goes to `*connection_out`; its first datagram
/// leaves at the next `brisk_poll_transmit`.
///
/// # Safety
/// `ep` as for every call; `remote` readable; `server_public_key` NULL or
/// 32 readable bytes; `connection_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_connect(
    ep: *mut BriskEndpoint,
    now_ns: u64,
    remote: *const BriskAddr,
    server_public_key: *const u8,
    connection_out: *mut u64,
) -> BriskStatus {
    let func = "brisk_connect";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        non_null(remote, func, "remote")?;
        non_null(connection_out, func, "connection_out")?;
        // SAFETY: non-NULL and readable by the caller's promise.
        let remote = unsafe { remote.read() }
            .to_socket_addr()
            .map_err(|e| fail(BriskStatus::InvalidArgument, format!("{func}: {e}")))?;
        let key = (!server_public_key.is_null()).then(|| {
            // SAFETY: non-NULL; 32 readable bytes by the caller's promise.
            unsafe { read_key(server_public_key) }
        });
        let h = ep
            .inner
            .connect(Instant::from_nanos(now_ns), remote, ClientConfig::new(key))
            .map_err(|e| {
                fail(
                    BriskStatus::ConnectError,
                    format!("{func} to {remote}: {e}"),
                )
            })?;
        // SAFETY: non-NULL and writable by the caller's promise.
        unsafe { connection_out.write(h.0) };
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}

/// The next connection a client opened to this server, into
/// `*connection_out`; `BRISK_STATUS_DONE` when none waits. A
/// `BRISK_EVENT_KIND_CONNECTED` event follows once its handshake is done.
///
/// # Safety
/// `ep` as for every call; `connection_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_accept(
    ep: *mut BriskEndpoint,
    connection_out: *mut u64,
) -> BriskStatus {
    let func = "brisk_accept";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        non_null(connection_out, func, "connection_out")?;
        let Some(h) = ep.inner.accept() else {
            return Ok(BriskStatus::Done);
        };
        // SAFETY: non-NULL and writable by the caller's promise.
        unsafe { connection_out.write(h.0) };
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}

/// Hands the endpoint one UDP payload that arrived from `from`, with the
/// ECN codepoint of its IP header (0-3; 0 if the platform cannot read it).
/// The bytes are copied; the buffer can be reused at once.
///
/// # Safety
/// `ep` as for every call; `from` readable; `data` NULL only with `len` 0,
/// else `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_handle_datagram(
    ep: *mut BriskEndpoint,
    now_ns: u64,
    from: *const BriskAddr,
    ecn: u8,
    data: *const u8,
    len: usize,
) -> BriskStatus {
    let func = "brisk_handle_datagram";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        non_null(from, func, "from")?;
        if len > 0 {
            non_null(data, func, "data")?;
        }
        // SAFETY: non-NULL and readable by the caller's promise.
        let from = unsafe { from.read() }
            .to_socket_addr()
            .map_err(|e| fail(BriskStatus::InvalidArgument, format!("{func}: {e}")))?;
        let ecn = ecn_from(ecn, func)?;
        let bytes: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: non-NULL; `len` readable bytes by the caller's promise.
            unsafe { std::slice::from_raw_parts(data, len) }
        };
        ep.inner
            .handle_datagram(Instant::from_nanos(now_ns), from, ecn, bytes);
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}

/// Writes the next datagram to send into `buf` (up to `cap` bytes) and
/// describes it in `*out`; `BRISK_STATUS_DONE` when nothing is due now.
/// A buffer of 1,500 bytes always suffices for the default packet size;
/// if `cap` is too small the datagram stays queued, `out->len` says what
/// it needs, and the call returns `BRISK_STATUS_BUFFER_TOO_SMALL`.
///
/// # Safety
/// `ep` as for every call; `buf` `cap` writable bytes; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_poll_transmit(
    ep: *mut BriskEndpoint,
    now_ns: u64,
    buf: *mut u8,
    cap: usize,
    out: *mut BriskTransmit,
) -> BriskStatus {
    let func = "brisk_poll_transmit";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        non_null(buf, func, "buf")?;
        non_null(out, func, "out")?;
        let transmit = match ep.pending.take() {
            Some(t) => t,
            None => {
                ep.out.clear();
                match ep
                    .inner
                    .poll_transmit(Instant::from_nanos(now_ns), 1, &mut ep.out)
                {
                    Some(t) => t,
                    None => return Ok(BriskStatus::Done),
                }
            }
        };
        let described = BriskTransmit {
            destination: BriskAddr::from_socket_addr(transmit.destination),
            ecn: transmit.ecn.bits(),
            len: ep.out.len(),
        };
        // SAFETY: non-NULL and writable by the caller's promise.
        unsafe { out.write(described) };
        if ep.out.len() > cap {
            ep.pending = Some(transmit);
            return Err(fail(
                BriskStatus::BufferTooSmall,
                format!(
                    "{func}: the datagram needs {} bytes, the buffer holds {cap}",
                    ep.out.len()
                ),
            ));
        }
        // SAFETY: `buf` holds `cap` >= len writable bytes by the caller's promise.
        unsafe { std::ptr::copy_nonoverlapping(ep.out.as_ptr(), buf, ep.out.len()) };
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}

/// The time (same clock as `now_ns`) at which `brisk_handle_timeout` has
/// work, into `*deadline_ns_out`; `BRISK_STATUS_DONE` when no timer is
/// armed. Ask again after every other call: deadlines move.
///
/// # Safety
/// `ep` as for every call; `deadline_ns_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_poll_timeout(
    ep: *mut BriskEndpoint,
    deadline_ns_out: *mut u64,
) -> BriskStatus {
    let func = "brisk_poll_timeout";
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        non_null(deadline_ns_out, func, "deadline_ns_out")?;
        // A datagram waiting for a bigger buffer is due at once.
        let deadline = match ep.pending {
            Some(_) => Some(0),
            None => ep.inner.poll_timeout().map(Instant::as_nanos),
        };
        let Some(t) = deadline else {
            return Ok(BriskStatus::Done);
        };
        // SAFETY: non-NULL and writable by the caller's promise.
        unsafe { deadline_ns_out.write(t) };
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, func, body) }
}

/// Runs the timers that are due at `now_ns` (retransmissions, ACK delays,
/// pacing, idle timeouts).
///
/// # Safety
/// `ep` as for every call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn brisk_handle_timeout(ep: *mut BriskEndpoint, now_ns: u64) -> BriskStatus {
    let body = |ep: &mut BriskEndpoint| -> Result<BriskStatus, BriskStatus> {
        ep.inner.handle_timeout(Instant::from_nanos(now_ns));
        Ok(BriskStatus::Ok)
    };
    // SAFETY: forwarded caller promise.
    unsafe { with_endpoint(ep, "brisk_handle_timeout", body) }
}

/// The library's version, e.g. "0.1.0" (static, never NULL).
#[unsafe(no_mangle)]
pub extern "C" fn brisk_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The connection handle as the endpoint knows it, or a failure naming it.
pub(crate) fn connection<'a>(
    ep: &'a mut BriskEndpoint,
    conn: u64,
    func: &str,
) -> Result<&'a mut brisk_proto::Connection, BriskStatus> {
    ep.inner
        .connection_mut(ConnectionHandle(conn))
        .ok_or_else(|| {
            fail(
                BriskStatus::UnknownConnection,
                format!("{func}: no connection {conn}"),
            )
        })
}

/// Notes why a connection ended for `brisk_last_error`.
pub(crate) fn note_reason(conn: u64, reason: impl std::fmt::Display) {
    set_last_error(format!("connection {conn}: {reason}"));
}
