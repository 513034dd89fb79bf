//! Goodput under random loss, live (OK.ru's "TCP is dead" table, seed
//! 003): a 1 Mbit/s link with a 50-packet FIFO and 5% random loss on the
//! data direction, one download at a time, kernel TCP and Brisk. The slide
//! measured TCP at 99% without loss, 74% at 5%/20 ms, 45% at 5%/220 ms;
//! the Mathis model (rate = MSS / RTT * 1.22 / sqrt(p)) predicts
//! 1448 B / 220 ms * 1.22 / sqrt(0.05) = 0.29 Mbit/s, 29%, at 220 ms.
//! Brisk BBR, when this build has it, must keep most of the link there;
//! Brisk CUBIC reads loss as congestion as kernel CUBIC does.

mod common;

use brisk_live::recipes::loss::{self, LossExperiment, LossOutcome, Transport};
use std::time::Duration;

/// Long enough for BBR's start-up at 220 ms on a 1 Mbit/s link to pass.
const SECS: u64 = 15;
/// Without loss at 20 ms every sender fills the link within a second, but
/// Brisk CUBIC, which leaves its first slow start only on loss, overflows
/// the FIFO and spends up to 0.8 s repairing it (85% of a 5 s run in CI):
/// 8 s keeps that start-up within the check's margin.
const CLEAN_SECS: u64 = 8;

fn measure(rtt_ms: u64, loss_pct: u64, transports: Vec<Transport>, secs: u64) -> LossOutcome {
    let one_way = rtt_ms / 2;
    let loss_line = if loss_pct > 0 {
        format!("loss = \"{loss_pct}%\"\n")
    } else {
        String::new()
    };
    let lab = common::lab(&format!(
        "[link.down]\nrate = \"1Mbit\"\ndelay = \"{one_way}ms\"\n{loss_line}\
         [link.up]\nrate = \"1Mbit\"\ndelay = \"{one_way}ms\"\n\
         [queue.fifo]\nlimit_packets = 50\n"
    ));
    let exp = LossExperiment {
        transports,
        duration: Duration::from_secs(secs),
    };
    let outcome = loss::run(&lab, &exp, 1_000_000).expect("transfers run");
    let results = lab.finish(None, None).expect("lab finishes");
    for r in &outcome.runs {
        eprintln!(
            "{:>12} rtt {rtt_ms:>3} ms loss {loss_pct}%: utilization {:>5.1}% \
             (goodput {:.3} Mbit/s, retransmitted or lost {}, srtt {:.0} ms)",
            r.transport.to_string(),
            r.utilization * 100.0,
            r.goodput_mbps,
            r.retransmitted_or_lost,
            r.srtt_ms
        );
    }
    for (t, why) in &outcome.skipped {
        eprintln!("{t}: skipped: {why}");
    }
    eprintln!("link losses {}", results.link.lost_packets);
    outcome
}

#[test]
fn brisk_keeps_goodput_under_random_loss_where_kernel_cubic_collapses() {
    let Some(_g) =
        common::lab_guard("brisk_keeps_goodput_under_random_loss_where_kernel_cubic_collapses")
    else {
        return;
    };
    let all = LossExperiment::okru(Duration::ZERO).transports;
    let clean = measure(20, 0, all.clone(), CLEAN_SECS);
    let long = measure(220, 5, all, SECS);
    let u = |o: &LossOutcome, t: Transport| o.utilization(&t);
    let tcp_cubic = Transport::kernel("cubic");
    let brisk_cubic = Transport::brisk("cubic");
    // Without loss every sender fills the link (less its headers).
    for r in &clean.runs {
        assert!(
            r.utilization > 0.85 && r.utilization < 1.0,
            "{} {}",
            r.transport,
            r.utilization
        );
    }
    // Kernel CUBIC collapses at 5% and 220 ms: the seed's 45% is an upper
    // bound here, Mathis predicts about 29%.
    let cubic = u(&long, tcp_cubic).expect("kernel cubic ran");
    assert!(cubic < 0.5, "kernel cubic at 5%/220 ms: {cubic}");
    assert!(cubic > 0.02, "kernel cubic at 5%/220 ms: {cubic}");
    // Brisk CUBIC reads loss as congestion too.
    let bc = u(&long, brisk_cubic).expect("brisk cubic ran");
    assert!(bc < 0.6, "brisk cubic at 5%/220 ms: {bc}");
    match u(&long, Transport::brisk("bbr")) {
        Some(bbr) => {
            assert!(bbr > 0.7, "brisk bbr at 5%/220 ms: {bbr}");
            assert!(
                bbr > 2.0 * cubic,
                "brisk bbr {bbr} against kernel cubic {cubic}"
            );
        }
        None => eprintln!("brisk bbr: not in this build of brisk-proto; its check is skipped"),
    }
}
