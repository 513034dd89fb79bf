//! Virtual time for the reference controller.
//!
//! `udp_prague`'s `PragueCC` reads the process's monotonic clock itself
//! (`std::time::Instant::now`, through libc's `clock_gettime`) and takes
//! no time argument, so in the simulator it would see the wall clock race
//! past while virtual time crawls, or the reverse. This module gives it the
//! simulator's clock instead: [`at`] runs a closure with the calling
//! thread's `CLOCK_MONOTONIC` reading replaced by a virtual one, and this
//! crate's own `clock_gettime` (which the executable's references bind to
//! ahead of libc's) answers from it. Every other clock, every other thread
//! and every call outside [`at`] goes on to libc's function unchanged.
//!
//! Virtual readings are [`BASE_NS`] plus the simulator's time: far beyond
//! any real monotonic reading, so the crate's process-wide start time
//! (taken on its first call, wherever that happens) never lies after a
//! virtual reading, and the elapsed time it computes moves exactly with
//! the simulator's. [`is_virtual`] tells whether the substitution is in
//! force (a static build against another libc would bypass it); a flow
//! refuses to run without it rather than mixing the two clocks.

#![allow(unsafe_code)]

use brisk_time::Instant;
use std::cell::Cell;
use std::sync::OnceLock;

/// 2^62 ns, about 146 years: above any `CLOCK_MONOTONIC` reading (time
/// since boot) a real machine gives.
const BASE_NS: u64 = 1 << 62;

thread_local! {
    /// The reading `CLOCK_MONOTONIC` gives on this thread, while set.
    static VIRTUAL_NS: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Runs `f` with this thread's monotonic clock reading `now`.
pub(crate) fn at<R>(now: Instant, f: impl FnOnce() -> R) -> R {
    let previous = VIRTUAL_NS.replace(Some(BASE_NS + now.as_nanos()));
    let out = f();
    VIRTUAL_NS.set(previous);
    out
}

/// Whether [`at`] really moves the clock the standard library reads.
pub(crate) fn is_virtual() -> bool {
    static CHECKED: OnceLock<bool> = OnceLock::new();
    *CHECKED.get_or_init(|| {
        let probe = Instant::from_millis(1234);
        let (a, b) = at(probe, || {
            (std::time::Instant::now(), std::time::Instant::now())
        });
        // Equal readings at the virtual instant; a real clock would have
        // moved (or be nowhere near 2^62 ns).
        let later = at(Instant::from_millis(1235), std::time::Instant::now);
        a == b && later.duration_since(a) == std::time::Duration::from_millis(1)
    })
}

type ClockGettime = unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> libc::c_int;

/// libc's own `clock_gettime` (the next definition after this one), or
/// `None` if the dynamic linker has none to give.
fn libc_clock_gettime() -> Option<ClockGettime> {
    static NEXT: OnceLock<Option<ClockGettime>> = OnceLock::new();
    *NEXT.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks
        // the symbol up.
        let symbol = unsafe { libc::dlsym(libc::RTLD_NEXT, c"clock_gettime".as_ptr()) };
        // SAFETY: the symbol libc exports under this name has this type.
        (!symbol.is_null())
            .then(|| unsafe { std::mem::transmute::<*mut libc::c_void, ClockGettime>(symbol) })
    })
}

/// The clock the whole process reads: the virtual reading for
/// `CLOCK_MONOTONIC` inside [`at`], libc's answer otherwise.
///
/// # Safety
/// As libc's `clock_gettime`: `tp` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clock_gettime(
    clock: libc::clockid_t,
    tp: *mut libc::timespec,
) -> libc::c_int {
    if clock == libc::CLOCK_MONOTONIC
        && !tp.is_null()
        && let Some(ns) = VIRTUAL_NS.try_with(Cell::get).ok().flatten()
    {
        // SAFETY: the caller passes a timespec to fill (checked non-null).
        unsafe {
            (*tp).tv_sec = (ns / 1_000_000_000) as libc::time_t;
            (*tp).tv_nsec = (ns % 1_000_000_000) as libc::c_long;
        }
        return 0;
    }
    match libc_clock_gettime() {
        // SAFETY: the same arguments, to the function they were meant for.
        Some(next) => unsafe { next(clock, tp) },
        // SAFETY: the kernel's call takes the same arguments.
        None => unsafe { libc::syscall(libc::SYS_clock_gettime, clock, tp) as libc::c_int },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monotonic_clock_follows_virtual_time_only_inside() {
        assert!(is_virtual());
        let a = at(Instant::from_millis(5_000), std::time::Instant::now);
        let b = at(Instant::from_millis(7_000), std::time::Instant::now);
        assert_eq!(b - a, std::time::Duration::from_secs(2));
        // Outside, the real clock: nowhere near 2^62 ns.
        let real = std::time::Instant::now();
        assert!(a > real && a - real > std::time::Duration::from_secs(1 << 30));
        // Nested calls restore the outer reading.
        at(Instant::from_millis(1_000), || {
            let inner = at(Instant::from_millis(2_000), std::time::Instant::now);
            assert_eq!(
                std::time::Instant::now() + std::time::Duration::from_secs(1),
                inner
            );
        });
    }
}
