//! The CPU time of the calling thread, shared by the transport's benchmarks
//! so that a loaded machine cannot inflate their figures.

use std::time::Duration;

/// CPU time this thread has run (`CLOCK_THREAD_CPUTIME_ID`, exact to the
/// nanosecond; Linux's schedstat can lag by a scheduler tick, too coarse
/// for transfers of a few tens of milliseconds), or `None` where it cannot
/// be read.
#[cfg(unix)]
pub fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(unix))]
pub fn thread_cpu_time() -> Option<Duration> {
    None
}
