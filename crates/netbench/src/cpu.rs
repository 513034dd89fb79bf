//! Process CPU time (user + system) from `getrusage(RUSAGE_SELF)`.
//!
//! Both ends of a test run in this process, so the process total is the
//! CPU cost of the whole transfer: client, server, and any helper threads a
//! transport library spawns.

#![allow(unsafe_code)]

use std::io;
use std::time::Duration;

/// User plus system CPU time consumed by this process so far.
pub fn process_cpu() -> io::Result<Duration> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage`; getrusage only writes it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getrusage returned 0, so it filled the struct (and it was
    // zeroed before, so every field is initialised either way).
    let usage = unsafe { usage.assume_init() };
    Ok(timeval(usage.ru_utime) + timeval(usage.ru_stime))
}

fn timeval(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u64::try_from(tv.tv_usec).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        let before = process_cpu().unwrap();
        // Spin until 5 ms of CPU show up; on a busy machine that may take
        // longer in wall time, so only give up after two seconds.
        let start = std::time::Instant::now();
        let mut x = 1u64;
        let mut after = before;
        while after - before < Duration::from_millis(5) && start.elapsed() < Duration::from_secs(2)
        {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            after = process_cpu().unwrap();
        }
        assert!(
            after - before >= Duration::from_millis(5),
            "{before:?} -> {after:?}"
        );
        // Never more CPU than wall time on one thread (plus a tick of slack).
        assert!(after - before <= start.elapsed() + Duration::from_millis(20));
    }

    #[test]
    fn timeval_conversion() {
        let tv = libc::timeval {
            tv_sec: 2,
            tv_usec: 500_000,
        };
        assert_eq!(timeval(tv), Duration::from_millis(2500));
        let negative = libc::timeval {
            tv_sec: -1,
            tv_usec: -1,
        };
        assert_eq!(timeval(negative), Duration::ZERO);
    }
}
