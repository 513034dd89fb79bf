//! The glue's bookkeeping of touched ends (and its cached timers), and
//! driving established connections outside their endpoints, must change
//! nothing: every Brisk scenario of the repository gives the same results
//! with them as with every connection left in its endpoint and every end
//! asked about everything after every call, on both families. The cached
//! timers are checked against the endpoints' own on every `poll_timeout`
//! of these runs. Asking an end
//! more often polls its connection at moments it had nothing to send;
//! that must leave no trace (the pacer once kept one, and fired a
//! nanosecond early on one path and not on the other).

use super::ASK_EVERY_END;
use super::host::NEVER_DETACH;
use crate::scenario::{IpFamily, Scenario};
use crate::{RunOptions, run};
use std::path::Path;
use std::time::Duration;

/// `scenario`'s results over `ip` as JSON; if `reference`, every
/// connection stays in its endpoint and every end is asked about
/// everything.
fn results(scenario: &Scenario, ip: IpFamily, reference: bool) -> String {
    ASK_EVERY_END.set(reference);
    NEVER_DETACH.set(reference);
    let options = RunOptions {
        ip: Some(ip),
        ..Default::default()
    };
    let r = run(scenario, options).results;
    ASK_EVERY_END.set(false);
    NEVER_DETACH.set(false);
    serde_json::to_string(&r).unwrap()
}

#[test]
fn skipping_untouched_ends_and_driving_connections_directly_changes_no_result() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("brisk-") && n.ends_with(".toml"))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "found {files:?}");
    for path in files {
        let mut s = Scenario::load(&path).unwrap();
        s.duration = s.duration.min(Duration::from_secs(3));
        for ip in [IpFamily::V4, IpFamily::V6] {
            assert_eq!(
                results(&s, ip, false),
                results(&s, ip, true),
                "{} over {ip:?}",
                path.display()
            );
        }
    }
}
