//! A UDP echo through the router measures the configured delay, on both
//! address families.

mod common;

use brisk_live::echo::{self, EchoServer, PingConfig};
use brisk_live::{IpMode, Lab, LabConfig};
use std::net::SocketAddr;
use std::time::Duration;

fn ping_through(mode: IpMode) {
    let Some(_g) = common::lab_guard("ping_measures_configured_delay") else {
        return;
    };
    // 20 ms down, 10 ms up: 30 ms plus serialization of two small packets
    // at 10 Mbit/s (92-byte v4 / 112-byte v6 datagrams: ~0.2 ms).
    let mut config = LabConfig::new(common::scenario(
        "[link.down]\nrate = \"10Mbit\"\ndelay = \"20ms\"\n[link.up]\nrate = \"10Mbit\"\ndelay = \"10ms\"\n",
    ));
    config.ip = mode;
    common::within_attempts(&format!("ping {mode:?}"), || ping_once(&config, mode));
}

/// One ping run: structural facts are asserted, timing bounds returned.
fn ping_once(config: &LabConfig, mode: IpMode) -> Result<(), String> {
    let lab = Lab::up(config.clone()).expect("lab comes up");
    let server = SocketAddr::new(lab.server_bind_addr(), echo::ECHO_PORT);
    let _echo = EchoServer::start(lab.server_ns(), server).expect("echo server");
    let report = echo::ping(
        lab.client_ns(),
        SocketAddr::new(lab.server_addr(), echo::ECHO_PORT),
        PingConfig {
            interval: Duration::from_millis(10),
            count: 100,
            ..PingConfig::default()
        },
    )
    .expect("ping runs");
    let results = lab.finish(None, None).expect("lab finishes");
    let header = if mode == IpMode::V4 { 28 } else { 48 };
    let len_bits = (64 + header) as f64 * 8.0;
    let expected_ms = 30.0 + 2.0 * len_bits / 10e6 * 1000.0;
    let ms = |q| report.quantile(q).as_secs_f64() * 1000.0;
    let (p50, p90, p99) = (ms(0.5), ms(0.9), ms(0.99));
    let f = &results.driver.fidelity;
    eprintln!(
        "{mode:?}: {} of {} replies; rtt p50 {p50:.3} ms p90 {p90:.3} ms p99 {p99:.3} ms; \
         model {expected_ms:.3} ms; router delay error p99 down {:.3} ms up {:.3} ms; \
         p50 down {:.3} ms up {:.3} ms; timer lateness p99 {:.3} ms",
        report.received,
        report.sent,
        f.down.delay_error_ms.p99,
        f.up.delay_error_ms.p99,
        f.down.delay_error_ms.p50,
        f.up.delay_error_ms.p50,
        f.timer_lateness_ms.p99,
    );
    assert_eq!(report.received, report.sent, "no probe may be lost");
    // No host delay can make a probe faster than the model.
    assert!(
        p50 >= expected_ms,
        "faster than the model: {p50} < {expected_ms}"
    );
    // The router saw one UDP flow of every probe.
    let udp: Vec<_> = results.flows.iter().filter(|f| f.kind == "udp").collect();
    assert_eq!(udp.len(), 1, "{:?}", results.flows);
    assert_eq!(udp[0].delivered_packets, 100);
    // The median is the router plus two host stacks and two application
    // wake-ups (0.4-0.65 ms over the model on an idle 2-core VM, whose
    // cores wake slowly); the tail also holds whatever else the machine
    // was doing. A busy machine delays the router and the applications
    // alike: the router measures its own lateness (the p99 of its delay
    // error, both ways, printed above), and the bounds allow that much
    // more.
    let late = common::router_lateness_ms(f);
    common::bound(p50 - expected_ms < 1.0 + late, || {
        format!("p50 {p50} vs model {expected_ms}, router late {late}")
    })?;
    common::bound(p90 - expected_ms < 2.0 + late, || {
        format!("p90 {p90} vs model {expected_ms}, router late {late}")
    })?;
    common::bound(
        f.down.delay_error_ms.p50 < 0.2 && f.up.delay_error_ms.p50 < 0.2,
        || format!("router delay error {f:?}"),
    )?;
    common::bound((udp[0].one_way_delay_ms.p50 - 10.0).abs() < 0.5, || {
        format!("one-way delay {:?}", udp[0])
    })
}

#[test]
fn ping_measures_configured_delay_v4() {
    ping_through(IpMode::V4);
}

#[test]
fn ping_measures_configured_delay_v6() {
    ping_through(IpMode::V6);
}
