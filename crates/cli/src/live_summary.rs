//! What `brisk live` prints after a run: both directions of the path (a
//! download queues in one, an upload such as iperf3's default test in the
//! other), the flows with the direction their data went, and a warning for
//! each direction whose measured traffic crossed a queue the scenario left
//! at its default.

use brisk_live::LiveResults;
use brisk_netmodel::network::QueueTables;
use brisk_sim::results::{LinkResults, QueueResults};

/// One direction of the path, named for a reader.
struct Side<'a> {
    name: &'static str,
    way: &'static str,
    link: &'a LinkResults,
    queue: &'a QueueResults,
    configured: Option<&'a str>,
}

fn sides<'a>(r: &'a LiveResults, tables: &'a QueueTables) -> [Side<'a>; 2] {
    [
        Side {
            name: "down",
            way: "server to client",
            link: &r.link,
            queue: &r.queue,
            configured: tables.down.as_deref(),
        },
        Side {
            name: "up",
            way: "client to server",
            link: &r.link_up,
            queue: &r.queue_up,
            configured: tables.up.as_deref(),
        },
    ]
}

/// The text printed on stdout.
pub fn summary(r: &LiveResults, tables: &QueueTables) -> String {
    let mut out = String::new();
    let name = if r.scenario.is_empty() {
        "live"
    } else {
        &r.scenario
    };
    out += &format!("{name} ({}, {:.1} s)\n", r.ip, r.duration_s);
    out += &format!(
        "{:<24} {:<9} {:>13} {:>6} {:>21} {:>7} {:>7}\n",
        "direction", "queue", "throughput", "busy", "queue delay p50/p99", "drops", "marks"
    );
    for s in sides(r, tables) {
        let kind = if s.configured.is_some() {
            s.queue.kind.to_string()
        } else {
            format!("{}*", s.queue.kind)
        };
        out += &format!(
            "{:<24} {:<9} {:>8.3} Mb/s {:>5.1}% {:>9.2}/{:.2} ms {:>7} {:>7}\n",
            format!("{} ({})", s.name, s.way),
            kind,
            s.link.throughput_mbps,
            s.link.utilization * 100.0,
            s.queue.delay_ms.p50,
            s.queue.delay_ms.p99,
            s.queue.drops,
            s.queue.marks
        );
    }
    if tables.down.is_none() || tables.up.is_none() {
        out += "* the scenario does not configure this queue: the default 1000-packet FIFO\n";
    }
    out += &format!(
        "{:<44} {:>4} {:>12} {:>7} {:>6} {:>9} {:>9} {:>9}\n",
        "flow", "dir", "goodput", "loss", "CE", "rtt p50", "rtt p99", "queue p99"
    );
    for (i, f) in r.flows.iter().enumerate() {
        out += &format!(
            "{:<44} {:>4} {:>7.2} Mb/s {:>6.2}% {:>5.1}% {:>6.1} ms {:>6.1} ms {:>6.1} ms\n",
            f.name,
            r.driver.flow_directions.get(i).copied().unwrap_or("?"),
            f.goodput_mbps,
            f.loss_rate * 100.0,
            f.ce_fraction * 100.0,
            f.rtt_ms.p50,
            f.rtt_ms.p99,
            f.queue_delay_ms.p99
        );
    }
    out
}

/// Flows whose data went each way (down, up) and the bytes they delivered.
pub fn traffic(r: &LiveResults) -> [(usize, u64); 2] {
    let mut t = [(0, 0); 2];
    for (f, d) in r.flows.iter().zip(&r.driver.flow_directions) {
        if f.sent_bytes > 0 {
            let side = &mut t[usize::from(*d == "up")];
            side.0 += 1;
            side.1 += f.delivered_bytes;
        }
    }
    t
}

/// One warning per direction whose flows carried data through a queue the
/// scenario does not configure: it names the direction, the queue the
/// traffic got (`kinds`: down, up), and the table that would configure it.
pub fn unconfigured_queue_warnings(
    traffic: [(usize, u64); 2],
    kinds: [&str; 2],
    tables: &QueueTables,
) -> Vec<String> {
    let sides = [
        ("down", "server to client", "queue", tables.down.as_deref()),
        ("up", "client to server", "queue_up", tables.up.as_deref()),
    ];
    let mut warnings = Vec::new();
    for (i, (name, way, table, configured)) in sides.into_iter().enumerate() {
        let (flows, bytes) = traffic[i];
        if configured.is_some() || flows == 0 {
            continue;
        }
        let (other, other_way, other_table, other_kind) = sides[1 - i];
        let why = match other_kind {
            Some(kind) => format!(
                "[{other_table}.{kind}] applies only to the {other} direction ({other_way})"
            ),
            None => "the scenario has no queue table".to_string(),
        };
        let wanted = other_kind.unwrap_or("KIND");
        warnings.push(format!(
            "{flows} flow{} sent {bytes} bytes {name} ({way}) through a {} queue the scenario \
             does not configure (the default 1000-packet FIFO): {why}; add a [{table}.{wanted}] \
             table to choose the {name} queue",
            if flows == 1 { "" } else { "s" },
            kinds[i],
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(down: Option<&str>, up: Option<&str>) -> QueueTables {
        QueueTables {
            down: down.map(String::from),
            up: up.map(String::from),
        }
    }

    #[test]
    fn an_upload_through_the_default_up_queue_is_named() {
        let w = unconfigured_queue_warnings(
            [(0, 0), (1, 5_000_000)],
            ["fq_codel", "fifo"],
            &tables(Some("fq_codel"), None),
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("up (client to server)"), "{}", w[0]);
        assert!(w[0].contains("through a fifo queue"), "{}", w[0]);
        assert!(w[0].contains("[queue.fq_codel] applies only to the down direction"));
        assert!(w[0].contains("add a [queue_up.fq_codel] table"), "{}", w[0]);
    }

    #[test]
    fn configured_or_idle_directions_give_no_warning() {
        let both = tables(Some("fq_codel"), Some("fq_codel"));
        assert!(unconfigured_queue_warnings([(2, 9), (1, 9)], ["fq_codel"; 2], &both).is_empty());
        let down_only = tables(Some("codel"), None);
        assert!(
            unconfigured_queue_warnings([(1, 9), (0, 0)], ["codel", "fifo"], &down_only).is_empty()
        );
    }

    #[test]
    fn a_download_without_any_queue_table_is_named() {
        let w = unconfigured_queue_warnings([(1, 9), (0, 0)], ["fifo"; 2], &tables(None, None));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("down (server to client)"), "{}", w[0]);
        assert!(w[0].contains("no queue table"), "{}", w[0]);
        assert!(w[0].contains("[queue.KIND]"), "{}", w[0]);
    }
}
