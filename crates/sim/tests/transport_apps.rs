//! Brisk's applications on the scenario files in `scenarios/`: the
//! send-buffer experiment of WWDC 2015 and H2O (a full 120 KB buffer at
//! 50 KB/s is 2.4 s of delay; a low-water mark keeps messages fresh), and a
//! feed page fetched over multiplexed, prioritized streams.

use brisk_sim::flows::TransportReport;
use brisk_sim::results::FlowResults;
use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{Run, RunOptions, run};
use std::path::Path;

const FAMILIES: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

fn run_file(file: &str, ip: IpFamily) -> Run {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(file);
    let s = Scenario::load(&path).unwrap();
    run(
        &s,
        RunOptions {
            ip: Some(ip),
            ..Default::default()
        },
    )
}

fn flow<'r>(run: &'r Run, name: &str) -> &'r FlowResults {
    run.results.flows.iter().find(|f| f.name == name).unwrap()
}

fn transport(run: &Run, index: usize) -> TransportReport {
    run.outcome.reports()[index].transport.clone().unwrap()
}

#[test]
fn a_full_send_buffer_delays_every_message_and_a_low_water_mark_does_not() {
    for ip in FAMILIES {
        let classic = run_file("brisk-sendbuf-classic.toml", ip);
        let lowat = run_file("brisk-sendbuf-lowat.toml", ip);
        let latency = |r: &Run| {
            flow(r, "screen")
                .brisk
                .as_ref()
                .unwrap()
                .message_latency_ms
                .unwrap()
        };
        let (c, l) = (latency(&classic), latency(&lowat));
        // 120 KB ahead of each message at 50 KB/s: 2.4 s, plus the trip.
        let drain_s = 120_000.0 / 50_000.0;
        assert!(
            c.p50 > 1000.0 * drain_s && c.p50 < 1000.0 * (drain_s + 0.5),
            "{ip:?} {c:?}"
        );
        // 16 KiB unsent plus a window in flight: a fifth of that.
        assert!(l.p50 < c.p50 / 4.0 && l.p99 < 1000.0, "{ip:?} {l:?}");
        // Freshness costs nothing: the same bytes cross the link.
        let (cb, lb) = (
            flow(&classic, "screen").delivered_bytes,
            flow(&lowat, "screen").delivered_bytes,
        );
        assert!(
            (cb as f64 - lb as f64).abs() < 0.05 * cb as f64,
            "{ip:?} {cb} {lb}"
        );
        assert!(classic.results.link.utilization > 0.95);
        // The network is not the problem: a ping crosses it in tens of ms.
        assert!(flow(&classic, "ping").rtt_ms.p50 < 60.0, "{ip:?}");
        for r in [&classic, &lowat] {
            assert!(
                flow(r, "screen")
                    .brisk
                    .as_ref()
                    .unwrap()
                    .transport
                    .data_intact
            );
            assert_eq!(transport(r, 0).integrity.corrupt_bytes, 0);
        }
    }
}

#[test]
fn a_feed_page_loads_its_api_response_first_and_every_image_intact() {
    for ip in FAMILIES {
        let r = run_file("brisk-feed.toml", ip);
        let f = flow(&r, "feed");
        let b = f.brisk.as_ref().unwrap();
        let sizes: u64 = [4_000, 60_000, 60_000, 80_000, 120_000, 200_000]
            .iter()
            .sum();
        assert_eq!(f.delivered_bytes, sizes);
        assert!(b.transport.data_intact && b.transport.error.is_none());
        let t = transport(&r, 0);
        assert_eq!(t.latencies.len(), 6);
        // The API response takes about one round trip (220 ms) once
        // connected; the images follow, sharing the path.
        let rtt_ms = b.transport.min_rtt_ms;
        let api_ms = t.latencies[0].as_secs_f64() * 1000.0;
        assert!(api_ms < 2.0 * rtt_ms, "{ip:?} api {api_ms} rtt {rtt_ms}");
        assert!(t.latencies[1..].iter().all(|l| *l > t.latencies[0]));
        // The first object is read before the page is whole, and no sooner
        // than the handshake's and the request's round trips allow.
        let first_ms = t.first_object().unwrap().as_secs_f64() * 1000.0;
        let page_ms = t.completion().unwrap().as_secs_f64() * 1000.0;
        assert!(
            first_ms > 1.5 * rtt_ms && first_ms < page_ms,
            "{ip:?} first {first_ms} rtt {rtt_ms} page {page_ms}"
        );
        // At 2 Mbit/s the bytes alone take 2.1 s; handshake and the API
        // round trip add two RTTs; slow start and losses a little more.
        let floor_s = sizes as f64 * 8.0 / 2e6 + 2.0 * rtt_ms / 1000.0;
        let done = b.completion_time_s.unwrap();
        assert!(
            done > floor_s && done < 1.5 * floor_s,
            "{ip:?} {done} floor {floor_s}"
        );
    }
}

/// A page of a 1 KB API response and four 2 KB images on a clean
/// 10 Mbit/s, 100 ms path, fetched `client`-style. The page fits in the
/// initial window, so round trips, not slow start, set its load time.
fn feed_page(client: &str, ip: IpFamily) -> Run {
    let text = format!(
        "duration = \"10s\"\n\
         [link.down]\nrate = \"10Mbit\"\ndelay = \"25ms\"\n\
         [link.up]\nrate = \"10Mbit\"\ndelay = \"25ms\"\n\
         [[flows]]\nname = \"feed\"\nkind = \"brisk\"\ncc = \"cubic\"\nrtt = \"100ms\"\n\
         app = \"feed\"\nobjects = [\"1kB\", \"2kB\", \"2kB\", \"2kB\", \"2kB\"]\n{client}"
    );
    let s = Scenario::parse(&text, "feed-page").unwrap();
    run(
        &s,
        RunOptions {
            ip: Some(ip),
            ..Default::default()
        },
    )
}

#[test]
fn a_sequential_client_with_handshake_round_trips_loads_the_page_later() {
    for ip in FAMILIES {
        let multiplexed = feed_page("", ip);
        let classic = feed_page("sequential = true\nsetup_round_trips = 3\n", ip);
        let page_ms = |r: &Run| {
            let t = transport(r, 0);
            assert_eq!(t.latencies.len(), 5, "{ip:?}: the page's objects only");
            assert_eq!(t.integrity.corrupt_bytes, 0);
            let b = flow(r, "feed").brisk.as_ref().unwrap();
            assert!(b.transport.data_intact && b.transport.error.is_none());
            assert_eq!(flow(r, "feed").delivered_bytes, 1_000 + 4 * 2_000);
            (
                t.first_object().unwrap().as_secs_f64() * 1000.0,
                t.completion().unwrap().as_secs_f64() * 1000.0,
                b.transport.min_rtt_ms,
            )
        };
        let (m_first, m_page, rtt_ms) = page_ms(&multiplexed);
        let (c_first, c_page, _) = page_ms(&classic);
        assert!((100.0..110.0).contains(&rtt_ms), "{ip:?} rtt {rtt_ms}");
        // Three handshake round trips delay the first response...
        assert!(
            c_first - m_first > 0.9 * 3.0 * rtt_ms,
            "{ip:?} first: classic {c_first} multiplexed {m_first}"
        );
        // ...and each image after the first waits one more round trip.
        let extra = 3.0 + 3.0;
        assert!(
            c_page - m_page > 0.9 * extra * rtt_ms,
            "{ip:?} page: classic {c_page} multiplexed {m_page}"
        );
        // And no more than those round trips (the bytes take under 10 ms).
        assert!(
            c_page < m_page + (extra + 1.0) * rtt_ms,
            "{ip:?} page: classic {c_page} multiplexed {m_page}"
        );
    }
}
