//! A report piped into `head` or `less` that quits early.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe comes back as an
//! error and `println!` panics on it ("failed printing to stdout"). The
//! commands that only print results take the Unix default instead: the
//! process ends quietly, as `cat` or `grep` would. Commands that talk on
//! sockets or drive other programs keep Rust's setting, so a peer that
//! goes away surfaces as an error they handle.
#![allow(unsafe_code)]

/// Ends the process quietly when standard output's reader goes away.
pub fn end_quietly_on_closed_pipe() {
    // SAFETY: setting a signal's disposition to its default has no
    // preconditions; no handler of ours is replaced.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
