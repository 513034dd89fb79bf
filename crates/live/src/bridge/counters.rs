//! What the bridge counts beside the optimizer's own totals, and the
//! lines an operator reads: one every report interval and one summary at
//! the end, in words and units rather than field names.

use brisk_optimizer::Stats;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

/// Frames the bridge handled, by what happened to them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames read from the radio interface.
    pub frames_from_radio: u64,
    /// Frames read from the internet interface.
    pub frames_from_internet: u64,
    /// Frames passed as they came without a look at the optimizer: not
    /// IPv4 or IPv6 (ARP, VLAN-tagged, LLDP, ...) or an IP header that
    /// does not add up.
    pub passed_not_ip: u64,
    /// IP frames of clients outside the optimized subscribers (or of every
    /// client when the optimizer is off, or of new address pairs once the
    /// bridge remembers as many as twice the optimizer's connection limit),
    /// passed as they came.
    pub passed_other_subscribers: u64,
    /// Datagrams the optimizer sent toward a pair of addresses whose
    /// Ethernet addresses the bridge had forgotten (dropped).
    pub dropped_no_ethernet_header: u64,
    /// Frames larger than the other interface carries (dropped): receive
    /// coalescing or segmentation offload is on somewhere.
    pub dropped_too_large: u64,
    /// Frames the outgoing interface's queue refused (dropped), as a full
    /// radio queue drops them.
    pub dropped_queue_full: u64,
}

/// Bytes in the units people read: B, kB, MB, GB (powers of 1000).
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    if n < 1e3 {
        format!("{n} B")
    } else if n < 1e6 {
        format!("{:.1} kB", n / 1e3)
    } else if n < 1e9 {
        format!("{:.1} MB", n / 1e6)
    } else {
        format!("{:.2} GB", n / 1e9)
    }
}

fn reasons(map: &BTreeMap<brisk_optimizer::Reason, u64>) -> String {
    if map.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = map
        .iter()
        .map(|(r, n)| format!("{} {n}", reason(*r)))
        .collect();
    format!(" ({})", parts.join(", "))
}

/// A reason in words.
fn reason(r: brisk_optimizer::Reason) -> &'static str {
    use brisk_optimizer::Reason::*;
    match r {
        UnknownSynOption => "unknown SYN option or data in SYN",
        SynSeenTwice => "SYN seen twice",
        AsymmetricRouting => "only one direction seen",
        WrongSide => "packet on the wrong interface",
        NoSack => "no SACK",
        TableFull => "table full",
        Overlap => "resegmented data",
        BufferFull => "buffer full",
        UnexpectedAck => "client acknowledged unsent data",
        Requested => "stopped on request",
        Closed => "closed",
    }
}

/// The optimizer's part of a bridge's state, as the lines below read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptimizerView<'a> {
    /// Its totals.
    pub stats: &'a Stats,
    /// Connections tracked now.
    pub tracked: usize,
    /// Bytes held undelivered now.
    pub held_bytes: usize,
}

/// One report: what the bridge and the optimizer did since the start.
pub fn report_line(elapsed: Duration, c: &Counters, o: Option<&OptimizerView<'_>>) -> String {
    let mut line = format!("[{:>6.1} s] ", elapsed.as_secs_f64());
    if let Some(o) = o {
        let s = o.stats;
        let resent_pct = if s.segments_sent == 0 {
            0.0
        } else {
            100.0 * s.retransmissions as f64 / s.segments_sent as f64
        };
        let _ = write!(
            line,
            "connections: {} tracked now, {} optimized, {} left alone{}, {} stopped{}; \
             local ACKs sent to servers {}; segments sent toward the radio {}, resent {} \
             ({resent_pct:.2}%); held {}; ",
            o.tracked,
            s.optimized_connections,
            s.refused.values().sum::<u64>(),
            reasons(&s.refused),
            s.stopped.values().sum::<u64>(),
            reasons(&s.stopped),
            s.local_acks,
            s.segments_sent,
            s.retransmissions,
            bytes(o.held_bytes as u64),
        );
    } else {
        line.push_str("optimizer off; ");
    }
    let _ = write!(
        line,
        "frames in: {} from the internet, {} from the radio; passed as they came: {} not IP, {} of other subscribers",
        c.frames_from_internet, c.frames_from_radio, c.passed_not_ip, c.passed_other_subscribers
    );
    let dropped = [
        (c.dropped_queue_full, "refused by a full interface queue"),
        (c.dropped_too_large, "larger than the MTU (offloads on?)"),
        (
            c.dropped_no_ethernet_header,
            "without a known Ethernet address",
        ),
    ];
    for (n, what) in dropped {
        if n > 0 {
            let _ = write!(line, "; dropped {n} {what}");
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use brisk_optimizer::Reason;

    #[test]
    fn a_report_says_what_happened_in_words_and_units() {
        let mut stats = Stats {
            optimized_connections: 3,
            local_acks: 1_234,
            segments_sent: 2_000,
            retransmissions: 10,
            ..Stats::default()
        };
        stats.refused.insert(Reason::NoSack, 2);
        stats.stopped.insert(Reason::Closed, 3);
        let c = Counters {
            frames_from_internet: 5_000,
            frames_from_radio: 3_000,
            passed_not_ip: 4,
            dropped_queue_full: 7,
            ..Counters::default()
        };
        let view = OptimizerView {
            stats: &stats,
            tracked: 1,
            held_bytes: 1_500_000,
        };
        let line = report_line(Duration::from_millis(10_000), &c, Some(&view));
        for want in [
            "[  10.0 s]",
            "1 tracked now, 3 optimized, 2 left alone (no SACK 2), 3 stopped (closed 3)",
            "local ACKs sent to servers 1234",
            "resent 10 (0.50%)",
            "held 1.5 MB",
            "5000 from the internet, 3000 from the radio",
            "4 not IP",
            "dropped 7 refused by a full interface queue",
        ] {
            assert!(line.contains(want), "{want:?} in {line}");
        }
        assert!(!line.contains("MTU"), "{line}");
        let off = report_line(Duration::ZERO, &c, None);
        assert!(off.contains("optimizer off"), "{off}");
    }

    #[test]
    fn bytes_read_in_decimal_units() {
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_500), "1.5 kB");
        assert_eq!(bytes(4_200_000), "4.2 MB");
        assert_eq!(bytes(3_000_000_000), "3.00 GB");
    }
}
