//! Ctrl-C and SIGTERM end a run cleanly: the handler only sets a flag,
//! which the lab's wait loop reads; teardown then runs as on a normal exit.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicI32, Ordering};

/// The last stop signal received, or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    RECEIVED.store(sig, Ordering::SeqCst);
}

/// Routes SIGINT, SIGTERM and SIGHUP to the flag read by [`received`].
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; the sigaction struct is fully initialized.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// The stop signal received since [`install`], if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Forgets a received signal (for an interactive shell, where Ctrl-C is
/// the shell's business).
pub fn clear(sig: i32) {
    let _ = RECEIVED.compare_exchange(sig, 0, Ordering::SeqCst, Ordering::SeqCst);
}
