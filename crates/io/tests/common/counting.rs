//! A global allocator that counts live heap bytes per side of a test:
//! each thread says which side it works for ([`set_side`]), and every
//! allocation and free it makes is booked to that side. The server and
//! the clients of a test run on threads of their own, each with its own
//! runtime, so what one side allocates the same side frees; the total
//! over all sides is exact either way.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

/// Whom a thread's allocations are booked to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The test harness and anything not set.
    Other = 0,
    Server = 1,
    Client = 2,
}

pub struct Counting;

static LIVE: [AtomicI64; 3] = [AtomicI64::new(0), AtomicI64::new(0), AtomicI64::new(0)];

thread_local! {
    // Constant-initialised and without a destructor, so reading it from
    // inside the allocator neither allocates nor fails during teardown.
    static SIDE: Cell<usize> = const { Cell::new(0) };
}

fn book(bytes: usize, sign: i64) {
    let side = SIDE.try_with(Cell::get).unwrap_or(0);
    LIVE[side].fetch_add(sign * bytes as i64, Ordering::Relaxed);
}

// SAFETY: every call goes to the system allocator with the caller's own
// arguments and returns its answer unchanged; the counters only watch.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            book(layout.size(), 1);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            book(layout.size(), 1);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        book(layout.size(), -1);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            book(layout.size(), -1);
            book(new_size, 1);
        }
        p
    }
}

/// Books this thread's allocations and frees to `side` from now on.
pub fn set_side(side: Side) {
    SIDE.with(|s| s.set(side as usize));
}

/// Live heap bytes booked to `side`.
pub fn live(side: Side) -> i64 {
    LIVE[side as usize].load(Ordering::Relaxed)
}
