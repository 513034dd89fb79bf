//! Memory per connection, counted by a global allocator that tracks live
//! heap bytes: an idle established connection must cost at most 20 KB on
//! each side, and a server that saw many connections come and go must
//! hold no more than before once they have drained.
//!
//! The harness joins one client endpoint holding many connections to one
//! server endpoint with no delay, in virtual time. One test function only:
//! the allocator's counter is shared by the whole test binary.

use brisk_proto::crypto::Keypair;
use brisk_proto::{ClientConfig, ConnectionHandle, Endpoint, Event, RetryPolicy, ServerConfig};
use brisk_time::Instant;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::alloc::{GlobalAlloc, Layout, System};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Live heap bytes of the whole test binary.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes straight to the system allocator with the same
// arguments; the counter only watches.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live_bytes() -> usize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// The goal for an idle connection, per side.
const IDLE_CONNECTION_BYTES: usize = 20_000;
const CONNECTIONS: usize = 200;

struct Net {
    now: Instant,
    client: Endpoint,
    server: Endpoint,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    connected: usize,
    closed: usize,
}

impl Net {
    /// Delivers everything both sides send, at once, until both are quiet;
    /// then runs the timers due at `now`.
    fn settle(&mut self) {
        loop {
            let mut moved = false;
            let mut d = Vec::new();
            while let Some(t) = self.client.poll_transmit(self.now, 1, &mut d) {
                moved = true;
                self.server
                    .handle_datagram(self.now, self.client_addr, t.ecn, &d);
                d.clear();
            }
            while let Some(t) = self.server.poll_transmit(self.now, 1, &mut d) {
                moved = true;
                self.client
                    .handle_datagram(self.now, self.server_addr, t.ecn, &d);
                d.clear();
            }
            while self.server.accept().is_some() {}
            for ep in [&mut self.client, &mut self.server] {
                while let Some((_, e)) = ep.poll_event() {
                    match e {
                        Event::Connected => self.connected += 1,
                        Event::Closed => self.closed += 1,
                        _ => {}
                    }
                }
            }
            if !moved {
                return;
            }
        }
    }

    /// Jumps to the next deadline of either side, up to `until`.
    fn run_until(&mut self, until: Instant) {
        loop {
            self.settle();
            let next = [self.client.poll_timeout(), self.server.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(t) if t <= until => {
                    self.now = self.now.max(t);
                    self.client.handle_timeout(self.now);
                    self.server.handle_timeout(self.now);
                }
                _ => {
                    self.now = self.now.max(until);
                    return;
                }
            }
        }
    }
}

fn idle_connections_stay_small_and_are_freed_after_draining(client_addr: &str, server_addr: &str) {
    let (client_addr, server_addr): (SocketAddr, SocketAddr) =
        (client_addr.parse().unwrap(), server_addr.parse().unwrap());
    let keys = Keypair::generate(&mut ChaCha8Rng::seed_from_u64(7));
    let public = keys.public();
    let before = live_bytes();
    let mut net = Net {
        now: Instant::ZERO,
        client: Endpoint::new(1, None),
        server: Endpoint::new(2, Some(server_config(keys))),
        client_addr,
        server_addr,
        connected: 0,
        closed: 0,
    };
    let mut handles: Vec<ConnectionHandle> = Vec::new();
    for _ in 0..CONNECTIONS {
        let h = net
            .client
            .connect(net.now, server_addr, ClientConfig::new(Some(public)))
            .expect("connect");
        handles.push(h);
    }
    net.run_until(Instant::from_millis(1_000));
    assert_eq!(net.connected, 2 * CONNECTIONS, "every handshake completes");
    // Idle: no data moves, every ACK has gone, the connections wait for
    // their idle timeout.
    let both = live_bytes().saturating_sub(before);
    let Net {
        client,
        server,
        now,
        ..
    } = net;
    let with_server = live_bytes();
    drop(client);
    let client_bytes = with_server.saturating_sub(live_bytes());
    let server_bytes = both.saturating_sub(client_bytes);
    let (per_client, per_server) = (client_bytes / CONNECTIONS, server_bytes / CONNECTIONS);
    println!(
        "{CONNECTIONS} idle connections over {server_addr}: {per_client} B per client side, \
         {per_server} B per server side (goal {IDLE_CONNECTION_BYTES} B)"
    );
    assert!(
        per_client <= IDLE_CONNECTION_BYTES && per_server <= IDLE_CONNECTION_BYTES,
        "client {per_client} B, server {per_server} B per idle connection"
    );

    // The server's half alone: the peers vanish, the idle timeout closes
    // every connection, and after that nothing of them is left.
    let mut net = Net {
        now,
        client: Endpoint::new(3, None),
        server,
        client_addr,
        server_addr,
        connected: 0,
        closed: 0,
    };
    net.run_until(now + std::time::Duration::from_secs(600));
    assert_eq!(net.closed, CONNECTIONS, "every server connection closes");
    assert!(net.server.handles().next().is_none());
    let left = live_bytes().saturating_sub(before);
    drop(net);
    let endpoint_only = live_bytes().saturating_sub(before);
    println!("after the idle timeout: {left} B held with the endpoints, {endpoint_only} B without");
    // What remains is the endpoints' own tables, not a connection's worth.
    assert!(
        left <= IDLE_CONNECTION_BYTES * 2,
        "{left} B still held after every connection closed"
    );
}

#[test]
fn memory_per_idle_connection_ipv4_then_ipv6() {
    idle_connections_stay_small_and_are_freed_after_draining(
        "192.0.2.1:40000",
        "198.51.100.7:4433",
    );
    idle_connections_stay_small_and_are_freed_after_draining(
        "[2001:db8::1]:40000",
        "[2001:db8:1::7]:4433",
    );
}

/// A server that lets every one of the test's connections handshake at
/// once: the flood defences (Retry under load, the handshake burst) would
/// otherwise spread the test's own burst of clients over several round
/// trips, which is beside what this test measures.
fn server_config(keys: Keypair) -> ServerConfig {
    let mut config = ServerConfig::new(keys);
    config.admission.retry = RetryPolicy::Never;
    config.admission.handshake_burst = 2 * CONNECTIONS as u64;
    config.admission.max_half_open = 2 * CONNECTIONS;
    config
}
