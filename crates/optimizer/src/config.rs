//! [`Config`]: the optimizer's limits and gains, each with its unit.

use std::time::Duration;

/// Settings of one optimizer. The defaults follow the figures of the
/// production system the design comes from: 20 kB per millisecond of
/// pacing, a per-subscriber in-flight budget of a small gain over the
/// measured bandwidth-delay product, and buffers bounded per connection
/// and in total.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Most connections tracked at once (optimized, in handshake or
    /// remembered as pass-through); a SYN beyond it is passed untouched.
    pub max_connections: usize,
    /// Most datagram bytes one connection may hold undelivered; a segment
    /// beyond it is not acknowledged early and the connection falls back to
    /// pass-through once what it holds is delivered.
    pub max_connection_buffer_bytes: usize,
    /// Most datagram bytes all connections together may hold undelivered.
    pub max_total_buffer_bytes: usize,
    /// A connection with no packet in either direction for this long is
    /// forgotten (whatever it still holds is dropped: its client is gone).
    pub idle_timeout: Duration,
    /// The subscriber budget before any measurement, in bytes in flight.
    pub initial_budget_bytes: usize,
    /// The smallest budget the measurement may set, in bytes.
    pub min_budget_bytes: usize,
    /// The largest budget, in bytes.
    pub max_budget_bytes: usize,
    /// Budget = gain x delivery rate x min RTT; above 1 so the radio never
    /// runs dry, close to 1 so the per-user queue stays short.
    pub budget_gain: f64,
    /// How long a delivery-rate sample counts toward the windowed maximum.
    pub rate_window: Duration,
    /// How long a min-RTT sample counts toward the windowed minimum.
    pub min_rtt_window: Duration,
    /// Pacing: bytes one subscriber may send back to back (two segments).
    pub pacing_burst_bytes: usize,
    /// Pacing: the fastest rate, bits per second (20 kB per 1 ms is
    /// 160 Mbit/s); the measured delivery rate times
    /// [`Config::pacing_gain`] slows it, never below
    /// [`Config::min_pacing_rate_bps`].
    pub max_pacing_rate_bps: u64,
    /// Pacing floor, bits per second.
    pub min_pacing_rate_bps: u64,
    /// Pacing rate = this gain x the measured delivery rate (capped).
    pub pacing_gain: f64,
    /// RACK reordering window before any RTT is known.
    pub initial_reorder_window: Duration,
    /// RACK reordering window ceiling (mobile reordering reaches 50 ms).
    pub max_reorder_window: Duration,
    /// Tail-loss probe timeout before any RTT is known.
    pub initial_probe_timeout: Duration,
    /// Ceiling of the probe timeout as probes back off during a radio freeze.
    pub max_probe_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_connections: 100_000,
            max_connection_buffer_bytes: 4 << 20,
            max_total_buffer_bytes: 256 << 20,
            idle_timeout: Duration::from_secs(120),
            initial_budget_bytes: 64 * 1024,
            min_budget_bytes: 8 * 1500,
            max_budget_bytes: 16 << 20,
            budget_gain: 1.25,
            rate_window: Duration::from_secs(2),
            min_rtt_window: Duration::from_secs(10),
            pacing_burst_bytes: 3_000,
            max_pacing_rate_bps: 160_000_000,
            min_pacing_rate_bps: 1_000_000,
            pacing_gain: 1.25,
            initial_reorder_window: Duration::from_millis(10),
            max_reorder_window: Duration::from_millis(50),
            initial_probe_timeout: Duration::from_millis(500),
            max_probe_timeout: Duration::from_secs(4),
        }
    }
}
