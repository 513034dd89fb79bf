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

/// Size classes of [`live_by_class`].
pub const SIZE_CLASSES: usize = 48;

/// Live bytes by size class: class `k` holds allocations of 2^(k-1) + 1
/// to 2^k bytes, so a pool of same-sized buffers that kept its peak shows
/// up as one class that grew.
static BY_CLASS: [AtomicU64; SIZE_CLASSES] = [const { AtomicU64::new(0) }; SIZE_CLASSES];

fn class(size: usize) -> usize {
    (usize::BITS - size.saturating_sub(1).leading_zeros()).min(SIZE_CLASSES as u32 - 1) as usize
}

fn add(size: usize) {
    LIVE_BYTES.fetch_add(size as u64, Ordering::Relaxed);
    BY_CLASS[class(size)].fetch_add(size as u64, Ordering::Relaxed);
}

fn sub(size: usize) {
    LIVE_BYTES.fetch_sub(size as u64, Ordering::Relaxed);
    BY_CLASS[class(size)].fetch_sub(size as u64, Ordering::Relaxed);
}

/// Live bytes by size class: entry `k` counts allocations of
/// 2^(k-1) + 1 to 2^k bytes.
pub fn live_by_class() -> [u64; SIZE_CLASSES] {
    std::array::from_fn(|k| BY_CLASS[k].load(Ordering::Relaxed))
}

/// The size class whose live bytes grew most from `before` to `after`:
/// its largest allocation size in bytes and the growth in bytes; `None`
/// if no class grew.
pub fn largest_growth(
    before: &[u64; SIZE_CLASSES],
    after: &[u64; SIZE_CLASSES],
) -> Option<(u64, u64)> {
    (0..SIZE_CLASSES)
        .map(|k| (1u64 << k, after[k].saturating_sub(before[k])))
        .filter(|&(_, grew)| grew > 0)
        .max_by_key(|&(_, grew)| grew)
}

// SAFETY: every call goes to the system allocator with the caller's own
// arguments and returns its answer unchanged; the counter only watches.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) };
        sub(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            sub(layout.size());
            add(new_size);
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
