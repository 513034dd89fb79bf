//! A phone uploading over Wi-Fi whose link stalls for good (the stalled
//! Wi-Fi case Apple's WWDC 2015 networking talk asks apps to survive), on
//! IPv4 and IPv6. With a cellular path as well, the connection notices the
//! stall after one probe timeout, validates the cellular path and
//! finishes there, every byte checked; the receiver waits at most one
//! Wi-Fi probe timeout and two cellular round trips (the task's aim, one
//! round trip, is printed beside it). Without it (the baseline, same run)
//! the transfer never finishes: the connection waits out its idle
//! timeout.

use brisk_netmodel::Network;
use brisk_sim::scenario::IpFamily;
use brisk_sim::two_path::{TwoPathOutcome, TwoPathRun, run_two_path};
use brisk_time::Instant;
use std::time::Duration;

/// Wi-Fi: 20 Mbit/s, 20 ms round trip, a 60-packet FIFO each way (a
/// download's data queues in the up direction, the server's side), dead
/// both ways from 1.5 s on.
const WIFI: &str = r#"
[link.down]
rate = "20Mbit"
delay = "10ms"
outages = [{ start = "1500ms", duration = "1000s" }]
[link.up]
rate = "20Mbit"
delay = "10ms"
outages = [{ start = "1500ms", duration = "1000s" }]
[queue.fifo]
limit_packets = 60
[queue_up.fifo]
limit_packets = 60
"#;

/// Cellular: 8 Mbit/s, 60 ms round trip, a 100-packet FIFO each way.
const CELLULAR: &str = r#"
[link.down]
rate = "8Mbit"
delay = "30ms"
[link.up]
rate = "8Mbit"
delay = "30ms"
[queue.fifo]
limit_packets = 100
[queue_up.fifo]
limit_packets = 100
"#;

const BYTES: u64 = 6_000_000;

fn run(ip: IpFamily, seed: u64, use_second: bool, download: bool) -> TwoPathOutcome {
    run_two_path(&TwoPathRun {
        first: Network::parse(WIFI).unwrap(),
        second: Network::parse(CELLULAR).unwrap(),
        use_second,
        ip,
        seed,
        bytes: BYTES,
        download,
        duration: Duration::from_secs(60),
        linger: Duration::ZERO,
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[test]
fn an_upload_over_stalled_wifi_moves_to_cellular_within_a_probe_timeout() {
    for ip in [IpFamily::V4, IpFamily::V6] {
        for seed in 1..=3 {
            let two = run(ip, seed, true, false);
            let one = run(ip, seed, false, false);
            let (stall, bound, goal) = (two.stall(), two.stall_bound(), two.stall_goal());
            let pto = two.failovers.first().map(|f| f.pto);
            eprintln!(
                "{ip:?} seed {seed}: two paths: {} of {BYTES} bytes intact {}, done at {:.3} s; \
                 moved {:.1} ms after the last bytes over Wi-Fi (Wi-Fi PTO {:.1} ms); stall \
                 {:.1} ms, bound PTO + 2 cellular RTT {:.1} ms, aim PTO + 1 cellular RTT \
                 {:.1} ms; paths validated {}. Wi-Fi only: {} bytes, done {:?}, gave up at \
                 {:.1} s: {:?}",
                two.delivered_bytes,
                two.intact(BYTES),
                two.completed_at.map_or(f64::NAN, |t| t.as_secs_f64()),
                two.detection().map_or(f64::NAN, ms),
                pto.map_or(f64::NAN, ms),
                stall.map_or(f64::NAN, ms),
                bound.map_or(f64::NAN, ms),
                goal.map_or(f64::NAN, ms),
                two.paths_validated,
                one.delivered_bytes,
                one.completed_at,
                one.end.as_secs_f64(),
                one.error,
            );
            assert!(two.intact(BYTES), "{ip:?} seed {seed}");
            assert_eq!(two.failovers.len(), 1, "{ip:?} seed {seed}");
            assert!(two.paths_validated >= 1, "{ip:?} seed {seed}");
            let (stall, bound) = (stall.unwrap(), bound.unwrap());
            assert!(stall <= bound, "{ip:?} seed {seed}: {stall:?} > {bound:?}");
            // The move itself: one probe timeout after the last bytes, and
            // the few ms the sender went on sending into the dead path.
            let (detection, pto) = (two.detection().unwrap(), pto.unwrap());
            assert!(
                detection <= pto + two.base_rtts[0],
                "{ip:?} seed {seed}: moved {detection:?} after the last bytes, PTO {pto:?}"
            );
            // The baseline: stuck behind the dead Wi-Fi until the idle
            // timeout closes the connection.
            assert!(one.completed_at.is_none(), "{ip:?} seed {seed}");
            assert!(one.delivered_bytes < BYTES, "{ip:?} seed {seed}");
            assert!(one.failovers.is_empty() && one.first_on_second.is_none());
            let error = one.error.clone().unwrap_or_default();
            assert!(error.contains("timed out"), "{ip:?} seed {seed}: {error}");
        }
    }
}

/// A phone that only downloads: once its request is acknowledged it sends
/// only ACKs, so without the receiver's watch (one PING a round trip on its
/// ACKs while a response arrives) nothing of its own goes unanswered when
/// the Wi-Fi dies. With it, the phone notices the stall within one probe
/// timeout of its last bytes over Wi-Fi, the server resends its flight at
/// once when the phone turns up on cellular (less what the ACK on the
/// phone's first packet there shows it got), and the receiver waits at
/// most one Wi-Fi probe timeout and one cellular round trip of a
/// full-size packet each way.
#[test]
fn a_download_over_stalled_wifi_moves_to_cellular_within_a_probe_timeout_and_a_round_trip() {
    for ip in [IpFamily::V4, IpFamily::V6] {
        let seed = 1;
        {
            let two = run(ip, seed, true, true);
            let (stall, goal) = (two.stall(), two.stall_goal());
            let pto = two.failovers.first().map(|f| f.pto);
            eprintln!(
                "{ip:?} seed {seed}: download over two paths: {} of {BYTES} bytes intact {}, \
                 done at {:.3} s; moved {:.1} ms after the last bytes over Wi-Fi (phone's \
                 Wi-Fi PTO {:.1} ms); receiver's stall {:.1} ms, goal PTO + 1 cellular RTT \
                 {:.1} ms; stalls reported {}, paths validated {}, server resent its flight \
                 {} time(s)",
                two.delivered_bytes,
                two.intact(BYTES),
                two.completed_at.map_or(f64::NAN, |t| t.as_secs_f64()),
                two.detection().map_or(f64::NAN, ms),
                pto.map_or(f64::NAN, ms),
                stall.map_or(f64::NAN, ms),
                goal.map_or(f64::NAN, ms),
                two.path_stalls,
                two.paths_validated,
                two.peer_failovers,
            );
            assert!(two.intact(BYTES), "{ip:?} seed {seed}");
            assert_eq!(two.failovers.len(), 1, "{ip:?} seed {seed}");
            assert!(two.paths_validated >= 1, "{ip:?} seed {seed}");
            assert_eq!(two.peer_failovers, 1, "{ip:?} seed {seed}");
            let (detection, pto) = (two.detection().unwrap(), pto.unwrap());
            assert!(
                detection <= pto,
                "{ip:?} seed {seed}: moved {detection:?} after the last bytes, PTO {pto:?}"
            );
            let (stall, goal) = (stall.unwrap(), goal.unwrap());
            assert!(stall <= goal, "{ip:?} seed {seed}: {stall:?} > {goal:?}");
        }
    }
}

/// Wi-Fi clean until the response is whole, then dead from 6 s on while
/// the connection sits idle for 10 s with nothing outstanding: the
/// downloading phone's PINGs are answered in the server's data packets, and
/// a dead path under an idle connection is no stall (nobody waits on it).
/// The phone never moves.
#[test]
fn a_download_over_clean_wifi_and_an_idle_connection_never_fail_over() {
    for ip in [IpFamily::V4, IpFamily::V6] {
        let seed = 1;
        {
            let clean = WIFI.replace("start = \"1500ms\"", "start = \"6s\"");
            assert_ne!(clean, WIFI);
            let two = run_two_path(&TwoPathRun {
                first: Network::parse(&clean).unwrap(),
                second: Network::parse(CELLULAR).unwrap(),
                use_second: true,
                ip,
                seed,
                bytes: BYTES / 3,
                download: true,
                duration: Duration::from_secs(60),
                linger: Duration::from_secs(10),
            });
            eprintln!(
                "{ip:?} seed {seed}: download, Wi-Fi dead from 6 s on: intact {}, done at {:.3} s, run \
                 ended at {:.3} s; stalls reported {}, moves {}",
                two.intact(BYTES / 3),
                two.completed_at.map_or(f64::NAN, |t| t.as_secs_f64()),
                two.end.as_secs_f64(),
                two.path_stalls,
                two.failovers.len(),
            );
            assert!(two.intact(BYTES / 3), "{ip:?} seed {seed}");
            let done = two.completed_at.unwrap();
            assert!(
                done < Instant::from_millis(6_000),
                "{ip:?} seed {seed}: done at {done:?}"
            );
            assert!(
                two.end >= done + Duration::from_secs(10),
                "{ip:?} seed {seed}"
            );
            assert_eq!(two.path_stalls, 0, "{ip:?} seed {seed}");
            assert!(two.failovers.is_empty(), "{ip:?} seed {seed}");
            assert!(two.first_on_second.is_none(), "{ip:?} seed {seed}");
        }
    }
}
