//! `brisk tcp doctor`: the sysctls that cost latency, what to change and
//! why. Reading is separate from judging: [`Snapshot::read`] collects the
//! values, [`examine`] is a pure function of them.

use std::time::Duration;

use serde::Serialize;

use crate::fastopen::bits as tfo_bits;
use crate::sysctl::Sysctls;
use crate::tuning::{self, BufferLimits, BufferPlan, Direction};

/// The sysctls the doctor reads, as raw strings (`None` when missing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// `kernel.osrelease`.
    pub kernel: Option<String>,
    /// `net.ipv4.tcp_slow_start_after_idle` (1 shrinks the congestion window
    /// after one RTO of idleness, which slows bursty senders).
    pub slow_start_after_idle: Option<String>,
    /// `net.ipv4.tcp_notsent_lowat`, bytes (the default `TCP_NOTSENT_LOWAT`).
    pub notsent_lowat: Option<String>,
    /// `net.ipv4.tcp_fastopen` bits: 1 client, 2 server.
    pub fastopen: Option<String>,
    /// `net.ipv4.tcp_ecn`: 0 off, 1 request and accept, 2 accept only.
    pub ecn: Option<String>,
    /// `net.core.default_qdisc`.
    pub default_qdisc: Option<String>,
    /// `net.ipv4.tcp_no_metrics_save`.
    pub no_metrics_save: Option<String>,
    /// `net.ipv4.tcp_congestion_control`: the default controller.
    pub congestion_control: Option<String>,
    /// `net.ipv4.tcp_available_congestion_control`: the loaded controllers.
    pub available_congestion_control: Option<String>,
    /// `net.ipv4.tcp_window_scaling` (RFC 7323).
    pub window_scaling: Option<String>,
    /// `net.ipv4.tcp_wmem`: min, default, max send buffer in bytes.
    pub wmem: Option<String>,
    /// `net.ipv4.tcp_rmem`: min, default, max receive buffer in bytes.
    pub rmem: Option<String>,
    /// `net.core.wmem_max`: largest `SO_SNDBUF` an application may set, bytes.
    pub wmem_max: Option<String>,
    /// `net.core.rmem_max`: largest `SO_RCVBUF` an application may set, bytes.
    pub rmem_max: Option<String>,
}

impl Snapshot {
    /// Reads every key; one that cannot be read is `None`, not an error.
    pub fn read(sysctls: &Sysctls) -> Self {
        let get = |key: &str| sysctls.read(key).ok();
        Snapshot {
            kernel: get("kernel.osrelease"),
            slow_start_after_idle: get("net.ipv4.tcp_slow_start_after_idle"),
            notsent_lowat: get("net.ipv4.tcp_notsent_lowat"),
            fastopen: get("net.ipv4.tcp_fastopen"),
            ecn: get("net.ipv4.tcp_ecn"),
            default_qdisc: get("net.core.default_qdisc"),
            no_metrics_save: get("net.ipv4.tcp_no_metrics_save"),
            congestion_control: get("net.ipv4.tcp_congestion_control"),
            available_congestion_control: get("net.ipv4.tcp_available_congestion_control"),
            window_scaling: get("net.ipv4.tcp_window_scaling"),
            wmem: get("net.ipv4.tcp_wmem"),
            rmem: get("net.ipv4.tcp_rmem"),
            wmem_max: get("net.core.wmem_max"),
            rmem_max: get("net.core.rmem_max"),
        }
    }
}

/// How a setting looks for latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Fine for latency as set.
    Good,
    /// Worth changing for latency-sensitive hosts.
    Advice,
    /// Costs latency or throughput as set.
    Warn,
    /// Missing or unreadable here.
    Unknown,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The dotted sysctl name the line is about.
    pub key: &'static str,
    /// Its current value; `None` when it could not be read.
    pub value: Option<String>,
    /// How it looks for latency.
    pub status: Status,
    /// Why, in one or two sentences.
    pub why: String,
    /// The command that applies the recommendation (runtime only; persist
    /// it in /etc/sysctl.d to survive a reboot).
    pub fix: Option<String>,
}

/// The path the buffer checks size for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Target {
    /// Path rate in bits per second.
    pub rate_bps: u64,
    /// Path round-trip time.
    pub rtt: Duration,
}

impl Default for Target {
    /// 100 Mbit/s at 250 ms: the long-RTT case of the seeds (OK.ru's
    /// video test and H2O's Tokyo-Ireland benchmark).
    fn default() -> Self {
        Target {
            rate_bps: 100_000_000,
            rtt: Duration::from_millis(250),
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// `kernel.osrelease`, when readable.
    pub kernel: Option<String>,
    /// One line per setting checked.
    pub findings: Vec<Finding>,
    /// The path the buffer checks were sized for.
    pub target: Target,
    /// Buffer sizes each direction needs for [`Report::target`].
    pub buffers: Vec<BufferPlan>,
}

impl Report {
    /// The worst status found.
    pub fn worst(&self) -> Status {
        self.findings
            .iter()
            .map(|f| f.status)
            .filter(|s| *s != Status::Unknown)
            .max()
            .unwrap_or(Status::Good)
    }
}

fn finding(
    key: &'static str,
    value: &Option<String>,
    judge: impl FnOnce(&str) -> (Status, String, Option<String>),
) -> Finding {
    match value {
        None => Finding {
            key,
            value: None,
            status: Status::Unknown,
            why: "not readable here (not Linux, an older kernel, or /proc/sys missing)".into(),
            fix: None,
        },
        Some(v) => {
            let (status, why, fix) = judge(v);
            Finding {
                key,
                value: Some(v.clone()),
                status,
                why,
                fix,
            }
        }
    }
}

fn sysctl_fix(key: &str, value: impl std::fmt::Display) -> Option<String> {
    Some(format!("sysctl -w {key}={value}"))
}

/// Judges a snapshot for latency; buffers are planned for `target`.
pub fn examine(snap: &Snapshot, target: Target) -> Report {
    let mut findings = Vec::new();

    let key = "net.ipv4.tcp_slow_start_after_idle";
    findings.push(finding(key, &snap.slow_start_after_idle, |v| match v {
        "0" => (
            Status::Good,
            "an idle connection keeps its congestion window".into(),
            None,
        ),
        _ => (
            Status::Warn,
            "after one RTO of idleness the congestion window collapses to the initial window, \
             so a reused connection (an API call every few seconds) pays slow start again; \
             OK.ru's recipe disables it"
                .into(),
            sysctl_fix(key, 0),
        ),
    }));

    let key = "net.ipv4.tcp_notsent_lowat";
    findings.push(finding(key, &snap.notsent_lowat, |v| {
        match v.parse::<i64>() {
            Ok(0) => (
                Status::Warn,
                "0 is known to stall applications that expect to write (H2O's notes: sshd hangs); \
             use a small positive mark"
                    .into(),
                sysctl_fix(key, 16_384),
            ),
            Ok(n) if (1..=131_072).contains(&n) => (
                Status::Good,
                format!("at most {n} unsent bytes wait in the kernel per socket"),
                None,
            ),
            Ok(_) => (
                Status::Advice,
                "unsent data may fill the whole send buffer, and anything written later waits \
             behind it (WWDC 2015: 120 KB draining at 50 KB/s is 2.4 s); 16 KB keeps the \
             kernel fed without the backlog. Applications can also set TCP_NOTSENT_LOWAT \
             themselves (brisk tcp serve --lowat)"
                    .into(),
                sysctl_fix(key, 16_384),
            ),
            Err(_) => (Status::Unknown, "not an integer".into(), None),
        }
    }));

    let key = "net.ipv4.tcp_fastopen";
    findings.push(finding(key, &snap.fastopen, |v| match v.parse::<i64>() {
        Ok(n)
            if n & (tfo_bits::CLIENT | tfo_bits::SERVER) == tfo_bits::CLIENT | tfo_bits::SERVER =>
        {
            (
                Status::Good,
                "Fast Open on for clients and servers: repeat connections send their request in \
             the SYN and save a round trip"
                    .into(),
                None,
            )
        }
        Ok(n) => {
            let missing = match n & 3 {
                0 => "clients and listeners",
                1 => "listeners",
                _ => "clients",
            };
            (
                Status::Advice,
                format!(
                    "Fast Open is off for {missing}; with it a repeat connection carries its \
                     (idempotent) request in the SYN and saves one RTT"
                ),
                sysctl_fix(key, n | 3),
            )
        }
        Err(_) => (Status::Unknown, "not an integer".into(), None),
    }));

    let key = "net.ipv4.tcp_ecn";
    findings.push(finding(key, &snap.ecn, |v| match v {
        "1" => (
            Status::Good,
            "connections request ECN: AQM routers can mark instead of dropping".into(),
            None,
        ),
        "2" => (
            Status::Advice,
            "ECN is accepted when a peer asks but never requested, so this host's own \
             connections lose to drops where a CoDel/L4S queue could have marked (Apple \
             turned client ECN on by default in 2015); per route instead: \
             `ip route change ... features ecn`"
                .into(),
            sysctl_fix(key, 1),
        ),
        _ => (
            Status::Warn,
            "ECN is off: congestion is only ever signalled by loss".into(),
            sysctl_fix(key, 1),
        ),
    }));

    let key = "net.core.default_qdisc";
    findings.push(finding(key, &snap.default_qdisc, |v| match v {
        "fq_codel" | "fq" | "cake" | "fq_pie" | "dualpi2" => (
            Status::Good,
            format!("{v} keeps per-flow queues short, so small flows do not wait behind bulk ones"),
            None,
        ),
        _ => (
            Status::Warn,
            format!(
                "{v} is a plain FIFO: a bulk transfer fills it and every interactive packet \
                 waits behind the backlog (the bufferbloat in WWDC 2015's tcptrace plots); \
                 fq_codel fixes that (fq suits BBR senders). New interfaces pick it up; \
                 existing ones need `tc qdisc replace dev DEV root fq_codel`"
            ),
            sysctl_fix(key, "fq_codel"),
        ),
    }));

    let key = "net.ipv4.tcp_no_metrics_save";
    findings.push(finding(key, &snap.no_metrics_save, |v| match v {
        "1" => (
            Status::Good,
            "new connections start fresh instead of inheriting a closed one's ssthresh".into(),
            None,
        ),
        _ => (
            Status::Advice,
            "the kernel caches ssthresh and RTT per destination when connections close; one \
             lossy connection then makes the next ones to that host leave slow start early. \
             Servers facing changing mobile clients often set 1 (Fast Open cookies are kept \
             either way)"
                .into(),
            sysctl_fix(key, 1),
        ),
    }));

    let key = "net.ipv4.tcp_congestion_control";
    let available = snap
        .available_congestion_control
        .clone()
        .unwrap_or_default();
    findings.push(finding(key, &snap.congestion_control, |v| {
        let choice = format!(
            "OK.ru picks per network and workload: cubic for high-bandwidth long-RTT stability, \
             bbr for lossy mobile paths and video (+6% watch time), set per socket with \
             TCP_CONGESTION (brisk tcp serve --cc); available here: {available}"
        );
        match v {
            "reno" => (
                Status::Advice,
                format!("reno grows slowly on long fat paths; {choice}"),
                sysctl_fix(key, "cubic"),
            ),
            _ => (Status::Good, format!("{v}; {choice}"), None),
        }
    }));

    let key = "net.ipv4.tcp_window_scaling";
    findings.push(finding(key, &snap.window_scaling, |v| match v {
        "1" => (Status::Good, "windows may exceed 64 KB".into(), None),
        _ => (
            Status::Warn,
            "without window scaling a connection never has more than 64 KB in flight: \
             2 Mbit/s at 250 ms"
                .into(),
            sysctl_fix(key, 1),
        ),
    }));

    let bdp = tuning::bdp_bytes(target.rate_bps, target.rtt);
    let mut buffers = Vec::new();
    for (direction, tcp, core) in [
        (Direction::Send, &snap.wmem, &snap.wmem_max),
        (Direction::Recv, &snap.rmem, &snap.rmem_max),
    ] {
        if let Some(limits) = parse_limits(direction, tcp, core) {
            buffers.push(tuning::plan_buffer(bdp, &limits));
        }
    }
    Report {
        kernel: snap.kernel.clone(),
        findings,
        target,
        buffers,
    }
}

fn parse_limits(
    direction: Direction,
    tcp: &Option<String>,
    core: &Option<String>,
) -> Option<BufferLimits> {
    let nums: Vec<u64> = tcp
        .as_deref()?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    Some(BufferLimits {
        direction,
        tcp_bytes: <[u64; 3]>::try_from(nums).ok()?,
        core_max_bytes: core.as_deref()?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    /// This lab machine's values at the time of writing (Linux 6.18).
    fn stock_linux() -> Snapshot {
        Snapshot {
            kernel: s("6.18.44"),
            slow_start_after_idle: s("1"),
            notsent_lowat: s("4294967295"),
            fastopen: s("1"),
            ecn: s("2"),
            default_qdisc: s("pfifo_fast"),
            no_metrics_save: s("0"),
            congestion_control: s("cubic"),
            available_congestion_control: s("reno bbr cubic"),
            window_scaling: s("1"),
            wmem: s("4096\t16384\t4194304"),
            rmem: s("4096\t131072\t33554432"),
            wmem_max: s("4194304"),
            rmem_max: s("4194304"),
        }
    }

    fn status(report: &Report, key: &str) -> Status {
        report
            .findings
            .iter()
            .find(|f| f.key == key)
            .map(|f| f.status)
            .unwrap()
    }

    #[test]
    fn stock_defaults_get_the_seed_recipes() {
        let r = examine(&stock_linux(), Target::default());
        assert_eq!(
            status(&r, "net.ipv4.tcp_slow_start_after_idle"),
            Status::Warn
        );
        assert_eq!(status(&r, "net.ipv4.tcp_notsent_lowat"), Status::Advice);
        assert_eq!(status(&r, "net.ipv4.tcp_fastopen"), Status::Advice);
        assert_eq!(status(&r, "net.ipv4.tcp_ecn"), Status::Advice);
        assert_eq!(status(&r, "net.core.default_qdisc"), Status::Warn);
        assert_eq!(status(&r, "net.ipv4.tcp_congestion_control"), Status::Good);
        assert_eq!(r.worst(), Status::Warn);
        let fixes: Vec<String> = r.findings.iter().filter_map(|f| f.fix.clone()).collect();
        assert!(fixes.contains(&"sysctl -w net.ipv4.tcp_slow_start_after_idle=0".to_string()));
        assert!(fixes.contains(&"sysctl -w net.ipv4.tcp_fastopen=3".to_string()));
        assert!(fixes.contains(&"sysctl -w net.ipv4.tcp_notsent_lowat=16384".to_string()));
        // 100 Mbit/s at 250 ms is a 3.125 MB BDP: the 4 MB send ceiling
        // is short of the 6.25 MB the kernel needs, the receive side is not.
        assert_eq!(r.buffers.len(), 2);
        assert!(!r.buffers[0].autotuning_suffices);
        assert!(r.buffers[1].autotuning_suffices);
    }

    #[test]
    fn tuned_host_is_all_good() {
        let tuned = Snapshot {
            slow_start_after_idle: s("0"),
            notsent_lowat: s("16384"),
            fastopen: s("3"),
            ecn: s("1"),
            default_qdisc: s("fq_codel"),
            no_metrics_save: s("1"),
            wmem: s("4096 16384 8388608"),
            ..stock_linux()
        };
        let r = examine(&tuned, Target::default());
        assert_eq!(r.worst(), Status::Good, "{r:#?}");
    }

    #[test]
    fn missing_values_are_unknown_not_errors() {
        let r = examine(&Snapshot::default(), Target::default());
        assert!(r.findings.iter().all(|f| f.status == Status::Unknown));
        assert!(r.buffers.is_empty());
        assert_eq!(r.worst(), Status::Good);
    }

    #[test]
    fn zero_lowat_and_disabled_ecn_warn() {
        let snap = Snapshot {
            notsent_lowat: s("0"),
            ecn: s("0"),
            fastopen: s("2"),
            ..stock_linux()
        };
        let r = examine(&snap, Target::default());
        assert_eq!(status(&r, "net.ipv4.tcp_notsent_lowat"), Status::Warn);
        assert_eq!(status(&r, "net.ipv4.tcp_ecn"), Status::Warn);
        let tfo = r
            .findings
            .iter()
            .find(|f| f.key == "net.ipv4.tcp_fastopen")
            .unwrap();
        assert!(tfo.why.contains("off for clients"));
        assert_eq!(
            tfo.fix.as_deref(),
            Some("sysctl -w net.ipv4.tcp_fastopen=3")
        );
    }

    #[test]
    fn reads_a_sysctl_tree() {
        let root = crate::sysctl::fixture::tree(
            "doctor",
            &[
                ("net.ipv4.tcp_slow_start_after_idle", "0"),
                ("net.ipv4.tcp_ecn", "1"),
            ],
        );
        let snap = Snapshot::read(&Sysctls::at(&root));
        assert_eq!(snap.slow_start_after_idle.as_deref(), Some("0"));
        assert_eq!(snap.ecn.as_deref(), Some("1"));
        assert_eq!(snap.fastopen, None);
        let _ = std::fs::remove_dir_all(root);
    }
}
