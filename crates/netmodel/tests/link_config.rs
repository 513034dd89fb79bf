//! Link settings as a scenario writes them: `[link.down]` and `[link.up]`
//! tables, and errors that name the field and line.

use brisk_netmodel::LinkConfig;
use brisk_netmodel::link::{EcnRewrite, Jitter, LossModel, RateModel, ReorderDepth, profiles};
use std::time::Duration;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    link: Links,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Links {
    #[serde(default)]
    down: LinkConfig,
    #[serde(default)]
    up: LinkConfig,
}

fn parse(text: &str) -> Result<Scenario, String> {
    toml::from_str(text).map_err(|e| e.to_string())
}

#[test]
fn both_directions_from_a_scenario() {
    let s = parse(
        r#"
[link.down]
rate = "10Mbit"
delay = "10ms"
jitter = "2ms"
loss = "1%"
reorder = { probability = "1%", depth_packets = 30 }
duplicate = "0.1%"
outages = [{ start = "5s", duration = "2s" }]
ecn = "bleach"

[link.up]
rate = { mahimahi = "traces/lte.up" }
delay = "12ms"
"#,
    )
    .unwrap();
    let down = &s.link.down;
    assert_eq!(down.rate, RateModel::Constant { bps: 10_000_000 });
    assert_eq!(down.jitter, Some(Jitter::Uniform(Duration::from_millis(2))));
    assert_eq!(down.loss, Some(LossModel::Random { probability: 0.01 }));
    assert_eq!(
        down.reorder.map(|r| r.depth),
        Some(ReorderDepth::Packets(30))
    );
    assert_eq!(down.ecn, EcnRewrite::Bleach);
    assert!(!down.outage_drops && !down.reorder_on_jitter);
    let mut up = s.link.up;
    assert_eq!(
        up.trace_path().and_then(|p| p.to_str()),
        Some("traces/lte.up")
    );
    up.load_trace("3\n6\n").unwrap();
    assert!(up.validate().is_ok());
}

#[test]
fn an_omitted_direction_is_the_default_link() {
    let s = parse("[link.down]\ndelay = \"5ms\"\n").unwrap();
    assert_eq!(s.link.up, LinkConfig::default());
    assert_eq!(s.link.down.delay, Duration::from_millis(5));
}

/// Each bad value, the line it is on, and words the error must contain.
#[test]
fn bad_values_name_field_and_line() {
    let cases: &[(&str, usize, &[&str])] = &[
        ("rate = \"fast\"", 3, &["rate", "fast"]),
        ("delay = \"-5ms\"", 3, &["delay", "negative"]),
        ("loss = \"150%\"", 3, &["loss", "150%"]),
        (
            "jitter = { gaussian = \"2ms\" }",
            3,
            &["jitter", "gaussian", "normal"],
        ),
        ("jitter = { normal = \"2\" }", 3, &["jitter", "\"2\""]),
        (
            "loss = { gilbert_elliott = { loss = \"60%\", burst_packets = 1 } }",
            3,
            &["loss", "too high"],
        ),
        (
            "loss = { gilbert_elliott = { loss = \"2%\" } }",
            3,
            &["burst_packets"],
        ),
        (
            "reorder = { probability = \"1%\" }",
            3,
            &["reorder", "depth_packets"],
        ),
        (
            "reorder = { probability = \"1%\", depth_packets = 0 }",
            3,
            &["reorder", "at least 1"],
        ),
        ("duplicate = \"often\"", 3, &["duplicate", "often"]),
        (
            "outages = [{ start = \"5s\", lasts = \"2s\" }]",
            3,
            &["outages", "lasts"],
        ),
        (
            "outage_every = { period = \"1s\", duration = \"2s\" }",
            3,
            &["outage_every", "shorter"],
        ),
        (
            "rate = { schedule = [[\"5s\", \"1Mbit\"], [\"1s\", \"2Mbit\"]] }",
            3,
            &["rate", "increase"],
        ),
        (
            "rate = { schedule = [[\"0s\", \"lots\"]] }",
            3,
            &["rate", "lots"],
        ),
        (
            "rate = { constant = \"1Mbit\", mahimahi = \"x\" }",
            3,
            &["rate", "only one"],
        ),
        ("ecn = \"paint\"", 3, &["ecn", "paint", "bleach"]),
        ("dealy = \"10ms\"", 3, &["dealy", "delay"]),
        ("outage_drops = \"yes\"", 3, &["outage_drops"]),
    ];
    for (line_text, line, words) in cases {
        let text = format!("[link.up]\n\n{line_text}\n");
        let err = parse(&text).unwrap_err();
        assert!(err.contains(&format!("line {line}")), "{line_text}: {err}");
        for w in *words {
            assert!(err.contains(w), "{line_text}: missing {w:?} in {err}");
        }
        // The same text in the other direction fails the same way.
        let other = parse(&text.replace("[link.up]", "[link.down]")).unwrap_err();
        assert!(other.contains(&format!("line {line}")), "{other}");
    }
}

#[test]
fn malformed_trace_files_name_the_line() {
    let mut c: LinkConfig = toml::from_str("rate = { mahimahi = \"t\" }").unwrap();
    let err = c.load_trace("1\n2\n\n3 ms\n").unwrap_err().to_string();
    assert!(err.contains("line 4") && err.contains("3 ms"), "{err}");
    let err = c.load_trace("10\n20\n15\n").unwrap_err().to_string();
    assert!(err.contains("line 3") && err.contains("15"), "{err}");
    assert!(c.validate().is_err(), "still unloaded after failures");
}

#[test]
fn profiles_yield_both_directions() {
    let names: Vec<&str> = profiles::all().iter().map(|p| p.name).collect();
    for want in ["edge", "3g", "lte", "wifi"] {
        assert!(names.contains(&want), "{names:?}");
    }
    let three_g = profiles::by_name("3G").unwrap();
    assert_eq!(three_g.down().delay, Duration::from_millis(275));
    assert_eq!(three_g.up().delay, Duration::from_millis(275));
    assert_eq!(three_g.down().rate, RateModel::Constant { bps: 1_000_000 });
    assert!(!three_g.source.is_empty());
}
