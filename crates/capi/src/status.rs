//! What every function returns, the message behind a failure, and the
//! guard that keeps a Rust panic from crossing into the caller's C code.
//!
//! Errors are codes so that C, Swift and Kotlin (through JNI) can switch on
//! them; the human text goes into a per-thread slot that
//! [`brisk_last_error`] reads, as `errno` and `strerror` do.

use std::cell::RefCell;
use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The outcome of a call. Zero and positive values are not failures.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BriskStatus {
    /// The call did what it was asked; outputs are filled in.
    Ok = 0,
    /// Nothing to hand out right now (no datagram to send, no event, no
    /// timer, no new connection or stream): wait for the socket or the
    /// timer. Outputs are left alone.
    Done = 1,
    /// A pointer argument that must not be NULL was NULL.
    NullArgument = -1,
    /// An argument was out of range or malformed (an address, a family,
    /// an ECN value, a stream the connection does not have).
    InvalidArgument = -2,
    /// The caller's buffer cannot hold the datagram waiting to be sent;
    /// it stays queued and the length it needs is reported.
    BufferTooSmall = -3,
    /// No connection has this handle (never opened, or already closed and
    /// forgotten after its `BRISK_EVENT_KIND_CLOSED` event).
    UnknownConnection = -4,
    /// The stream refused the call (its state, the peer's limits).
    StreamError = -5,
    /// The connection could not be started.
    ConnectError = -6,
    /// A bug inside the library: a panic was caught at the boundary. The
    /// endpoint that raised it is unusable; free it.
    Internal = -100,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Stores `message` as this thread's last error and returns `status`.
pub(crate) fn fail(status: BriskStatus, message: impl Into<String>) -> BriskStatus {
    set_last_error(message.into());
    status
}

/// Stores `message` as this thread's last error.
pub(crate) fn set_last_error(message: String) {
    // A message with an interior NUL is cut there rather than lost.
    let bytes: Vec<u8> = message
        .into_bytes()
        .into_iter()
        .take_while(|&b| b != 0)
        .collect();
    let text = CString::new(bytes).unwrap_or_default();
    LAST_ERROR.with(|slot| *slot.borrow_mut() = text);
}

/// Runs `body`, turning a panic into [`BriskStatus::Internal`] with the
/// panic's message, so that no unwinding reaches C (where it would abort
/// the whole app).
pub(crate) fn guard(body: impl FnOnce() -> BriskStatus) -> BriskStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(status) => status,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            fail(
                BriskStatus::Internal,
                format!("internal error in the Brisk library: {what}"),
            )
        }
    }
}

/// The message of the last call on this thread that failed, or an empty
/// string. Valid until the next failing call on the same thread; copy it
/// to keep it.
#[unsafe(no_mangle)]
pub extern "C" fn brisk_last_error() -> *const c_char {
    LAST_ERROR.with(|slot| slot.borrow().as_ptr())
}

/// A fixed, human-readable name for a status code (never NULL).
#[unsafe(no_mangle)]
pub extern "C" fn brisk_status_name(status: i32) -> *const c_char {
    let name: &'static [u8] = match status {
        0 => b"ok\0",
        1 => b"done: nothing to hand out now\0",
        -1 => b"a required pointer was NULL\0",
        -2 => b"invalid argument\0",
        -3 => b"buffer too small\0",
        -4 => b"unknown connection\0",
        -5 => b"stream error\0",
        -6 => b"connect error\0",
        -100 => b"internal error\0",
        _ => b"unknown status\0",
    };
    name.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last_error() -> String {
        // SAFETY: brisk_last_error returns this thread's live, NUL-ended slot.
        unsafe { CStr::from_ptr(brisk_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let status = guard(|| panic!("the ring overflowed"));
        assert_eq!(status, BriskStatus::Internal);
        assert_eq!(
            last_error(),
            "internal error in the Brisk library: the ring overflowed"
        );
        let formatted = guard(|| panic!("{} packets", 3));
        assert_eq!(formatted, BriskStatus::Internal);
        assert!(last_error().ends_with("3 packets"), "{}", last_error());
    }

    #[test]
    fn a_message_with_a_nul_is_cut_there() {
        fail(BriskStatus::InvalidArgument, "bad\0tail");
        assert_eq!(last_error(), "bad");
    }

    #[test]
    fn every_status_has_a_name() {
        for s in [-100, -6, -5, -4, -3, -2, -1, 0, 1] {
            // SAFETY: brisk_status_name returns a static NUL-ended string.
            let name = unsafe { CStr::from_ptr(brisk_status_name(s)) };
            assert_ne!(name.to_bytes(), b"unknown status", "status {s}");
        }
    }
}
