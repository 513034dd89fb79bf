//! Live heap bytes of this process, counted by a global allocator.
//!
//! The resident set (`/proc/self/statm`) also holds what the allocator
//! keeps after a free and the pages it never returned, so it cannot tell
//! whether memory came back after connections closed; the count of bytes
//! allocated and not yet freed can. The `brisk-netbench` binary installs
//! [`CountingAllocator`]; a process without it reads `None`.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// The system allocator, counting the bytes it hands out and takes back.
#[derive(Debug, Default, Clone, Copy)]
pub struct CountingAllocator;

static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call goes to the system allocator with the caller's own
// arguments and returns its answer unchanged; the counter only watches.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
            LIVE_BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        }
        p
    }
}

/// Heap bytes allocated and not yet freed; `None` when this process does
/// not run on [`CountingAllocator`] (nothing was ever counted, which a
/// running Rust program with it cannot show: `main`'s arguments alone are
/// on the heap).
pub fn live_bytes() -> Option<u64> {
    match LIVE_BYTES.load(Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// The process's resident set size in bytes (`/proc/self/statm`).
pub fn resident_bytes() -> std::io::Result<u64> {
    let text = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| std::io::Error::other("/proc/self/statm: no resident field"))?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages * u64::try_from(page).unwrap_or(4096))
}
