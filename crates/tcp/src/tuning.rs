//! Per-socket and per-host tuning from the OK.ru recipes: congestion
//! control per network, buffers sized to the bandwidth-delay product, ECN.
//!
//! A window-limited TCP connection moves at most one buffer per round trip:
//! OK.ru's example is a 128 KB buffer at 250 ms RTT capping a 400 Mbit/s
//! path at 4 Mbit/s. Buffers must cover the bandwidth-delay product (BDP),
//! and no more on the sending side, where the excess only queues (see
//! [`crate::lowat`]).
//!
//! # How Linux sizes socket buffers
//!
//! - `setsockopt(SO_SNDBUF, n)` stores `2 * min(n, net.core.wmem_max)`; the
//!   second half pays for the kernel's per-packet bookkeeping, so asking
//!   for the BDP leaves room for about a BDP of payload. `SO_RCVBUF` works
//!   the same with `net.core.rmem_max`, and the receive window advertised is
//!   roughly half of the stored value, again about the BDP.
//! - Setting either option turns off autotuning for that socket. Without it
//!   the kernel grows buffers itself up to `net.ipv4.tcp_wmem[2]` and
//!   `tcp_rmem[2]` (which are *not* capped by the `core` limits). Raising
//!   those ceilings is usually better than fixing a size per socket.
//! - `SO_RCVBUF` must be set before `connect`/`listen`: the window scale is
//!   chosen from it during the handshake.

use std::time::Duration;

use serde::Serialize;

use crate::sockopt::{self, AsSocket, SockoptError};
use crate::sysctl::{SysctlError, Sysctls};

/// Congestion controls the kernel can use now
/// (`net.ipv4.tcp_available_congestion_control`).
pub fn available_congestion_controls(sysctls: &Sysctls) -> Result<Vec<String>, SysctlError> {
    sysctls.read_list("net.ipv4.tcp_available_congestion_control")
}

/// The host-wide default (`net.ipv4.tcp_congestion_control`).
pub fn default_congestion_control(sysctls: &Sysctls) -> Result<String, SysctlError> {
    sysctls.read("net.ipv4.tcp_congestion_control")
}

pub use crate::sockopt::{congestion, set_congestion};

/// Bytes in flight needed to fill a path: `rate * rtt`.
pub fn bdp_bytes(rate_bps: u64, rtt: Duration) -> u64 {
    (rate_bps as f64 / 8.0 * rtt.as_secs_f64()).round() as u64
}

/// The fastest a window of `buffer_bytes` can move over `rtt`.
pub fn window_limited_rate_bps(buffer_bytes: u64, rtt: Duration) -> f64 {
    if rtt.is_zero() {
        return f64::INFINITY;
    }
    buffer_bytes as f64 * 8.0 / rtt.as_secs_f64()
}

/// How long `queued_bytes` take to drain at `rate_bps`: the delay data
/// waiting in a send buffer adds ([`Duration::MAX`] if it never drains or
/// would take longer than a duration holds).
pub fn drain_time(queued_bytes: u64, rate_bps: u64) -> Duration {
    if rate_bps == 0 {
        return Duration::MAX;
    }
    Duration::try_from_secs_f64(queued_bytes as f64 * 8.0 / rate_bps as f64)
        .unwrap_or(Duration::MAX)
}

/// Which buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The send buffer (`SO_SNDBUF`, `tcp_wmem`).
    Send,
    /// The receive buffer (`SO_RCVBUF`, `tcp_rmem`).
    Recv,
}

impl Direction {
    fn keys(self) -> (&'static str, &'static str) {
        match self {
            Direction::Send => ("net.ipv4.tcp_wmem", "net.core.wmem_max"),
            Direction::Recv => ("net.ipv4.tcp_rmem", "net.core.rmem_max"),
        }
    }
}

/// The kernel limits that apply to one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BufferLimits {
    /// The buffer these limits are for.
    pub direction: Direction,
    /// `tcp_wmem` or `tcp_rmem`: min, default, autotuning ceiling.
    pub tcp_bytes: [u64; 3],
    /// `core.wmem_max` or `core.rmem_max`: the cap on explicit requests.
    pub core_max_bytes: u64,
}

impl BufferLimits {
    /// Reads the direction's `tcp_*mem` triple and `core.*mem_max`; a missing
    /// or malformed key is an error.
    pub fn read(sysctls: &Sysctls, direction: Direction) -> Result<Self, SysctlError> {
        let (tcp, core) = direction.keys();
        Ok(BufferLimits {
            direction,
            tcp_bytes: sysctls.read_triple(tcp)?,
            core_max_bytes: u64::try_from(sysctls.read_int(core)?).unwrap_or(0),
        })
    }
}

/// What to do to give one direction a BDP of buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BufferPlan {
    /// The buffer this plan is for.
    pub direction: Direction,
    /// The bandwidth-delay product the buffer should hold, bytes.
    pub bdp_bytes: u64,
    /// The kernel's own growth reaches the BDP: leave the option alone.
    pub autotuning_suffices: bool,
    /// The value to pass to `setsockopt` if setting it anyway.
    pub request_bytes: u64,
    /// What the kernel will store: twice the request after the core cap.
    pub effective_bytes: u64,
    /// The request exceeds `core.*mem_max` and will be cut down.
    pub capped: bool,
    /// What to change, in words and commands.
    pub advice: String,
}

/// Plans a buffer of one BDP under `limits`.
pub fn plan_buffer(bdp_bytes: u64, limits: &BufferLimits) -> BufferPlan {
    let (tcp_key, core_key) = limits.direction.keys();
    let needed_stored = bdp_bytes.saturating_mul(2);
    let autotuning_suffices = limits.tcp_bytes[2] >= needed_stored;
    let capped = bdp_bytes > limits.core_max_bytes;
    let effective_bytes = bdp_bytes.min(limits.core_max_bytes).saturating_mul(2);
    let advice = if autotuning_suffices {
        format!(
            "autotuning can grow to {} bytes (>= 2 x BDP {}): leave the socket option unset",
            limits.tcp_bytes[2], bdp_bytes
        )
    } else if !capped {
        format!(
            "raise the autotuning ceiling: sysctl -w {tcp_key}=\"{} {} {needed_stored}\" \
             (or set the option to {bdp_bytes} on this socket, which disables autotuning)",
            limits.tcp_bytes[0], limits.tcp_bytes[1]
        )
    } else {
        format!(
            "raise the ceilings: sysctl -w {tcp_key}=\"{} {} {needed_stored}\"; an explicit \
             request is capped at {core_key} = {} (sysctl -w {core_key}={bdp_bytes})",
            limits.tcp_bytes[0], limits.tcp_bytes[1], limits.core_max_bytes
        )
    };
    BufferPlan {
        direction: limits.direction,
        bdp_bytes,
        autotuning_suffices,
        request_bytes: bdp_bytes,
        effective_bytes,
        capped,
        advice,
    }
}

/// Sets the planned buffer on `sock`; returns what the kernel stored.
pub fn apply_buffer<S: AsSocket>(sock: &S, plan: &BufferPlan) -> Result<usize, SockoptError> {
    let request = usize::try_from(plan.request_bytes).unwrap_or(usize::MAX);
    match plan.direction {
        Direction::Send => {
            sockopt::set_send_buffer(sock, request)?;
            sockopt::send_buffer(sock)
        }
        Direction::Recv => {
            sockopt::set_recv_buffer(sock, request)?;
            sockopt::recv_buffer(sock)
        }
    }
}

/// `net.ipv4.tcp_ecn`: whether this host's TCP asks for ECN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMode {
    /// 0: never.
    Off,
    /// 1: request ECN on outgoing connections and accept it on incoming.
    On,
    /// 2 (Linux default): accept when the peer asks, never ask.
    AcceptOnly,
}

impl EcnMode {
    /// The mode for a `net.ipv4.tcp_ecn` value; `None` for values other than
    /// 0, 1 and 2.
    pub fn from_sysctl(v: i64) -> Option<Self> {
        match v {
            0 => Some(EcnMode::Off),
            1 => Some(EcnMode::On),
            2 => Some(EcnMode::AcceptOnly),
            _ => None,
        }
    }

    /// Reads `net.ipv4.tcp_ecn`; `Ok(None)` for a value this code does not
    /// know.
    pub fn read(sysctls: &Sysctls) -> Result<Option<Self>, SysctlError> {
        Ok(Self::from_sysctl(sysctls.read_int("net.ipv4.tcp_ecn")?))
    }

    /// Whether connections this host opens request ECN.
    pub fn requests(self) -> bool {
        self == EcnMode::On
    }

    /// Whether connections to this host can use ECN when the peer asks.
    pub fn accepts(self) -> bool {
        self != EcnMode::Off
    }
}

/// Turns on ECN for connections this host opens (`net.ipv4.tcp_ecn=1`).
/// Linux has no per-socket switch: the setting is per network namespace,
/// or per route with [`route_ecn_hint`]. Congestion controls that need ECN
/// (dctcp) enable it for their own sockets.
pub fn enable_ecn(sysctls: &Sysctls) -> Result<(), SysctlError> {
    sysctls.write("net.ipv4.tcp_ecn", "1")
}

/// The command that requests ECN only towards `destination` (a prefix such
/// as `192.0.2.0/24` or `default`), leaving the host default alone.
pub fn route_ecn_hint(destination: &str) -> String {
    format!(
        "ip route change {destination} <via GATEWAY dev DEVICE as now> features ecn \
         (see `ip route show {destination}` for the current via/dev)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysctl::fixture;

    #[test]
    fn ok_ru_buffer_example() {
        // 128 KB at 250 ms RTT: about 4 Mbit/s whatever the link.
        let rate = window_limited_rate_bps(128 * 1024, Duration::from_millis(250));
        assert!((rate - 4_194_304.0).abs() < 1.0, "{rate}");
        assert_eq!(bdp_bytes(4_000_000, Duration::from_millis(250)), 125_000);
        // Filling 400 Mbit/s at 250 ms takes 12.5 MB.
        assert_eq!(
            bdp_bytes(400_000_000, Duration::from_millis(250)),
            12_500_000
        );
    }

    #[test]
    fn wwdc_send_buffer_delay() {
        // 120 KB of send buffer draining at 50 KB/s: about 2.4 s of delay
        // ("about 2.5 seconds" in the talk); a 16 KB mark cuts it to 0.3 s.
        let rate_bps = 50 * 1024 * 8;
        assert_eq!(
            drain_time(120 * 1024, rate_bps),
            Duration::from_millis(2400)
        );
        assert_eq!(drain_time(16 * 1024, rate_bps), Duration::from_millis(320));
        assert_eq!(drain_time(1, 0), Duration::MAX);
        // Longer than a Duration holds: the longest one, not a panic.
        assert_eq!(drain_time(u64::MAX, 1), Duration::MAX);
    }

    fn limits(direction: Direction, ceiling: u64, core: u64) -> BufferLimits {
        BufferLimits {
            direction,
            tcp_bytes: [4096, 131_072, ceiling],
            core_max_bytes: core,
        }
    }

    #[test]
    fn plan_prefers_autotuning_when_the_ceiling_is_high_enough() {
        // This host's receive ceiling (32 MB) covers 100 Mbit/s at 250 ms.
        let bdp = bdp_bytes(100_000_000, Duration::from_millis(250));
        let plan = plan_buffer(bdp, &limits(Direction::Recv, 33_554_432, 4_194_304));
        assert!(plan.autotuning_suffices);
        assert_eq!(plan.request_bytes, 3_125_000);
        assert_eq!(plan.effective_bytes, 6_250_000);
        assert!(!plan.capped);
    }

    #[test]
    fn plan_explains_the_core_cap_and_doubling() {
        // 400 Mbit/s at 250 ms against a 4 MB send ceiling and core max.
        let bdp = bdp_bytes(400_000_000, Duration::from_millis(250));
        let plan = plan_buffer(bdp, &limits(Direction::Send, 4_194_304, 4_194_304));
        assert!(!plan.autotuning_suffices);
        assert!(plan.capped);
        assert_eq!(plan.effective_bytes, 2 * 4_194_304);
        assert!(plan.advice.contains("net.core.wmem_max"));
        assert!(
            plan.advice
                .contains("net.ipv4.tcp_wmem=\"4096 131072 25000000\"")
        );
    }

    #[test]
    fn limits_and_ecn_from_sysctls() {
        let root = fixture::tree(
            "tuning",
            &[
                ("net.ipv4.tcp_rmem", "4096 131072 33554432"),
                ("net.core.rmem_max", "4194304"),
                ("net.ipv4.tcp_ecn", "2"),
                (
                    "net.ipv4.tcp_available_congestion_control",
                    "reno bbr cubic",
                ),
            ],
        );
        let s = Sysctls::at(&root);
        let l = BufferLimits::read(&s, Direction::Recv).unwrap();
        assert_eq!(l.tcp_bytes[2], 33_554_432);
        assert_eq!(l.core_max_bytes, 4_194_304);
        let mode = EcnMode::read(&s).unwrap().unwrap();
        assert!(mode.accepts() && !mode.requests());
        enable_ecn(&s).unwrap();
        assert_eq!(EcnMode::read(&s).unwrap(), Some(EcnMode::On));
        assert_eq!(
            available_congestion_controls(&s).unwrap(),
            ["reno", "bbr", "cubic"]
        );
        assert_eq!(EcnMode::from_sysctl(7), None);
        let _ = std::fs::remove_dir_all(root);
    }
}
