//! A phone that starts a download while its Wi-Fi is stalled from the
//! start (associated, passing nothing: the case Apple's WWDC 2015
//! networking talk describes), on IPv4 and IPv6. Racing its paths (a
//! cellular attempt after a 250 ms attempt delay), its first response
//! byte arrives within the delay plus two cellular round trips (the
//! handshake's and the request's), every byte checked, and the abandoned
//! Wi-Fi attempt never reached the server. The same phone falling back
//! only when its connect call times out (5 s, brisk-io's default) waits
//! that timeout first; both are printed. With a healthy Wi-Fi the race
//! never starts a cellular attempt.

use brisk_netmodel::Network;
use brisk_sim::race::{DEFAULT_ATTEMPT_DELAY, RaceOutcome, RaceRun, run_race};
use brisk_sim::scenario::IpFamily;
use std::time::Duration;

/// Wi-Fi: 20 Mbit/s, 20 ms round trip, dead both ways from the start.
const STALLED_WIFI: &str = r#"
[link.down]
rate = "20Mbit"
delay = "10ms"
outages = [{ start = "0ms", duration = "1000s" }]
[link.up]
rate = "20Mbit"
delay = "10ms"
outages = [{ start = "0ms", duration = "1000s" }]
"#;

/// The same Wi-Fi, healthy.
const WIFI: &str = r#"
[link.down]
rate = "20Mbit"
delay = "10ms"
[link.up]
rate = "20Mbit"
delay = "10ms"
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

/// A small object: its transfer is a few cellular round trips.
const BYTES: u64 = 100_000;

/// What a client that does not race waits before its fallback: brisk-io's
/// default handshake timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

fn run(wifi: &str, ip: IpFamily, seed: u64, attempt_delay: Duration) -> RaceOutcome {
    run_race(&RaceRun {
        first: Network::parse(wifi).unwrap(),
        second: Network::parse(CELLULAR).unwrap(),
        attempt_delay,
        ip,
        seed,
        bytes: BYTES,
        duration: Duration::from_secs(30),
    })
}

fn ms(d: Option<Duration>) -> f64 {
    d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
}

#[test]
fn racing_paths_under_stalled_wifi_answers_within_the_attempt_delay_and_two_cellular_rtts() {
    for ip in [IpFamily::V4, IpFamily::V6] {
        for seed in 1..=2 {
            let raced = run(STALLED_WIFI, ip, seed, DEFAULT_ATTEMPT_DELAY);
            let fallback = run(STALLED_WIFI, ip, seed, CONNECT_TIMEOUT);
            let rtt = raced.full_size_rtts[1];
            let bound = DEFAULT_ATTEMPT_DELAY + 2 * rtt;
            eprintln!(
                "{ip:?} seed {seed}: first response byte after {:.1} ms racing (attempt delay \
                 {:.0} ms + 2 cellular RTT {:.1} ms = {:.1} ms), {:.1} ms falling back after a \
                 {:.0} s connect timeout; {BYTES} bytes done at {:.1} ms / {:.1} ms; abandoned \
                 Wi-Fi attempt's datagrams at the server: {}",
                ms(raced.time_to_first_byte()),
                ms(Some(DEFAULT_ATTEMPT_DELAY)),
                ms(Some(2 * rtt)),
                ms(Some(bound)),
                ms(fallback.time_to_first_byte()),
                CONNECT_TIMEOUT.as_secs_f64(),
                ms(raced.completed_at.map(|t| t - brisk_time::Instant::ZERO)),
                ms(fallback.completed_at.map(|t| t - brisk_time::Instant::ZERO)),
                raced.loser_datagrams_at_server,
            );
            assert!(raced.intact(BYTES), "{ip:?} seed {seed}");
            assert_eq!(raced.winner.map(|w| w.0), Some(1), "{ip:?} seed {seed}");
            assert_eq!(
                raced.started[1].map(|t| t - brisk_time::Instant::ZERO),
                Some(DEFAULT_ATTEMPT_DELAY)
            );
            assert_eq!(raced.loser_datagrams_at_server, 0, "{ip:?} seed {seed}");
            let first = raced.time_to_first_byte().unwrap();
            assert!(first <= bound, "{ip:?} seed {seed}: {first:?} > {bound:?}");
            // The fallback's cost: the whole timeout on the dead path.
            assert!(fallback.intact(BYTES), "{ip:?} seed {seed}");
            let late = fallback.time_to_first_byte().unwrap();
            assert!(late >= CONNECT_TIMEOUT && late <= CONNECT_TIMEOUT + 2 * rtt);
        }
    }
}

#[test]
fn racing_paths_over_healthy_wifi_never_starts_a_cellular_attempt() {
    for ip in [IpFamily::V4, IpFamily::V6] {
        let raced = run(WIFI, ip, 1, DEFAULT_ATTEMPT_DELAY);
        let rtt = raced.full_size_rtts[0];
        eprintln!(
            "{ip:?}: healthy Wi-Fi, first response byte after {:.1} ms (2 Wi-Fi RTT {:.1} ms); \
             cellular attempt started: {:?}",
            ms(raced.time_to_first_byte()),
            ms(Some(2 * rtt)),
            raced.started[1],
        );
        assert!(raced.intact(BYTES), "{ip:?}");
        assert_eq!(raced.winner.map(|w| w.0), Some(0), "{ip:?}");
        assert_eq!(raced.started[1], None, "{ip:?}");
        assert!(raced.time_to_first_byte().unwrap() <= 2 * rtt, "{ip:?}");
    }
}
