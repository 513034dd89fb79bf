//! Prague on classic-ECN bottlenecks (RFC 3168 AQMs that mark ECT(1) as
//! they would ECT(0)). RFC 9331 §4.3 asks an L4S sender to notice and to
//! answer such marks like Reno: an alpha-scaled cut is far too gentle for
//! an AQM that marks with the square-root law, and after a rate drop the
//! standing queue would last many seconds.

mod l4s_common;

use brisk_sim::scenario::IpFamily;
use l4s_common::{FAMILIES, bulk, dumbbell, rate_mbps, run_series, series};
use std::time::Duration;

const STEP_AT: Duration = Duration::from_secs(10);

/// When, after the rate step, Prague's RTT last exceeded `base + 100 ms`
/// (zero if never), through an RFC 3168 FQ-CoDel whose rate drops from 50
/// to 1 Mbit/s, and the worst RTT seen.
fn recovery_after_step(cc: &str, ip: IpFamily) -> (Duration, Duration) {
    recovery_after_step_at(cc, STEP_AT, ip)
}

/// [`recovery_after_step`] with the step at `step_at` (the run lasts 6 s
/// past it).
fn recovery_after_step_at(cc: &str, step_at: Duration, ip: IpFamily) -> (Duration, Duration) {
    let base_ms = 20;
    let s = dumbbell(
        &format!(
            "{{ schedule = [[\"0s\", \"50Mbit\"], [\"{}s\", \"1Mbit\"]] }}",
            step_at.as_secs_f64()
        ),
        "[queue.fq_codel]",
        "",
        &[bulk("flow", cc, base_ms)],
        step_at.as_secs() + 6,
    );
    let (_, all) = run_series(&s, ip);
    let rtt = &series(&all, "flow").rtt;
    let step = brisk_time::Instant::ZERO + step_at;
    let limit = Duration::from_millis(base_ms + 100);
    let last_high = rtt
        .iter()
        .filter(|(t, r)| *t >= step && *r > limit)
        .map(|(t, _)| *t - step)
        .max()
        .unwrap_or_default();
    let worst = rtt.iter().map(|(_, r)| *r).max().unwrap_or_default();
    (last_high, worst)
}

#[test]
fn prague_recovers_from_a_rate_drop_in_a_classic_fq_codel_within_2s() {
    for ip in FAMILIES {
        let (recovered, worst) = recovery_after_step("prague", ip);
        assert!(
            recovered <= Duration::from_secs(2),
            "{ip:?}: RTT above base + 100 ms until {recovered:?} after the step (worst {worst:?})"
        );
        // The step did build a queue: the bound is not met by accident.
        assert!(
            worst > Duration::from_millis(500),
            "{ip:?}: worst {worst:?}"
        );
    }
}

/// The same step at other moments of the sawtooth, seeded: 3.75 s, and
/// 4.25 and 4.75 s, where the sender used to pace its small window over a
/// smoothed RTT still near a second after the queue had drained and left
/// the link idle (3.64 s to recover on IPv4 at 4.25 s, 4.11 s and 4.55 s
/// at 4.75 s).
#[test]
fn prague_recovers_within_2s_wherever_the_step_falls() {
    for ip in FAMILIES {
        for ms in [3750, 4250, 4750] {
            let at = Duration::from_millis(ms);
            let (recovered, worst) = recovery_after_step_at("prague", at, ip);
            assert!(
                recovered <= Duration::from_secs(2),
                "{ip:?}, step at {at:?}: RTT above base + 100 ms until {recovered:?} after the step (worst {worst:?})"
            );
            assert!(
                worst > Duration::from_millis(500),
                "{ip:?}, step at {at:?}: worst {worst:?}"
            );
        }
    }
}

/// Prague's share of a classic single-queue CoDel (RFC 3168 marking)
/// beside CUBIC, and NewReno's in its place; `rewrite` is the hop's ECN
/// rewrite.
fn shares(rewrite: &str, ip: IpFamily) -> (f64, f64, String) {
    let secs = 20;
    let run = |cc: &str| {
        let s = dumbbell(
            "\"10Mbit\"",
            "[queue.codel]",
            rewrite,
            &[bulk("l", cc, 20), bulk("cubic", "cubic", 20)],
            secs,
        );
        let (r, all) = run_series(&s, ip);
        let (from, to) = (Duration::from_secs(secs / 2), Duration::from_secs(secs));
        let (a, b) = (
            rate_mbps(series(&all, "l"), from, to),
            rate_mbps(series(&all, "cubic"), from, to),
        );
        let t = &r.flows[0].brisk.as_ref().unwrap().transport;
        (a / (a + b), format!("{} {}", t.ecn_state, t.ecn_codepoint))
    };
    let (prague, ecn) = run("prague");
    let (reno, _) = run("newreno");
    (prague, reno, ecn)
}

/// ECT(1) reaches the classic CoDel intact: nothing but the marks and the
/// queue behind them tells Prague the AQM is classic.
#[test]
fn prague_detects_a_classic_aqm_marking_ect1_and_shares_like_reno() {
    for ip in FAMILIES {
        let (prague, reno, ecn) = shares("", ip);
        assert_eq!(ecn, "capable ect1", "{ip:?}");
        assert!(
            (prague - reno).abs() < 0.1 && prague < 0.65,
            "{ip:?}: prague's share {prague:.2}, newreno's {reno:.2}"
        );
    }
}

/// A hop after the queue rewrites ECT(1) to ECT(0): ECN validation falls
/// back to classic ECN, and Prague is told so.
#[test]
fn prague_behind_an_ect1_to_ect0_rewrite_answers_marks_like_reno() {
    for ip in FAMILIES {
        let (prague, reno, ecn) = shares("ecn = \"ect1_to_ect0\"", ip);
        assert_eq!(ecn, "capable ect0", "{ip:?}");
        assert!(
            (prague - reno).abs() < 0.1 && prague < 0.65,
            "{ip:?}: prague's share {prague:.2}, newreno's {reno:.2}"
        );
    }
}

/// Measured numbers for the report (run with `--ignored --nocapture`).
#[test]
#[ignore = "prints numbers; run it by hand"]
fn report() {
    for cc in ["prague", "cubic", "newreno"] {
        let (recovered, worst) = recovery_after_step(cc, IpFamily::V4);
        println!(
            "{cc}: 50 -> 1 Mbit/s FQ-CoDel step: RTT above base + 100 ms until {recovered:?}, worst {worst:?}"
        );
    }
    for rewrite in ["", "ecn = \"ect1_to_ect0\""] {
        let (p, r, e) = shares(rewrite, IpFamily::V4);
        println!("codel {rewrite:?}: prague share {p:.3} ({e}), newreno share {r:.3}");
    }
}

/// Recovery with the step anywhere from 3 to 6 s in quarter seconds (the
/// window the step catches varies along the sawtooth), printed.
#[test]
#[ignore = "prints a table; run it by hand"]
fn drop_times() {
    println!("family | step at s | recovery s | worst RTT ms");
    for ip in FAMILIES {
        for quarter in 12..=24 {
            let at = Duration::from_millis(quarter * 250);
            let (recovered, worst) = recovery_after_step_at("prague", at, ip);
            println!(
                "{ip:?} | {:.2} | {:.2} | {:.0}",
                at.as_secs_f64(),
                recovered.as_secs_f64(),
                worst.as_secs_f64() * 1e3
            );
        }
    }
}
