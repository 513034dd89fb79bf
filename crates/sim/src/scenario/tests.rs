//! Scenario parsing and validation: every error names field and line.

use super::*;
use brisk_proto::congestion::CcAlgorithm;

const GOOD: &str = r#"
name = "demo"
duration = "10s"
[link.down]
rate = "10Mbit"
delay = "10ms"
[link.up]
rate = "10Mbit"
delay = "10ms"
[queue.fifo]
limit_packets = 200

[[flows]]
kind = "cbr"
rate = "12Mbit"
ecn = "ect0"

[[flows]]
kind = "ping"
interval = "100ms"
rtt = "40ms"
"#;

#[test]
fn parses_a_good_file() {
    let s = Scenario::parse(GOOD, "demo.toml").unwrap();
    assert_eq!(s.duration, Duration::from_secs(10));
    assert_eq!(s.flows.len(), 2);
    assert!(matches!(
        s.flows[0].traffic,
        Traffic::Cbr(Source {
            rate_bps: 12_000_000,
            size_bytes: DEFAULT_SOURCE_SIZE,
            ecn: EcnSpec::Ect0,
            send_jitter: None,
        })
    ));
    assert_eq!(s.flows[0].line, 13);
    assert_eq!(s.flows[1].label(1), "ping-1");
    assert_eq!(s.seed, 1);
}

/// `[optimizer]` is `brisk live`'s (brisk-live reads it); the simulator
/// accepts the table rather than calling it unknown.
#[test]
fn an_optimizer_table_is_accepted() {
    let text = format!("{GOOD}\n[optimizer]\nconnection_buffer = \"1MiB\"\n");
    let s = Scenario::parse(&text, "demo.toml").unwrap();
    assert_eq!(s.flows.len(), 2);
}

fn err(text: &str) -> String {
    Scenario::parse(text, "bad.toml").unwrap_err().to_string()
}

#[test]
fn serde_errors_name_field_and_line() {
    let e = err("duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"lots\"\n");
    assert!(
        e.contains("line 4") && e.contains("rate") && e.contains("lots"),
        "{e}"
    );
    let e = err("duration = \"10s\"\nspeed = 3\n");
    assert!(e.contains("line 2") && e.contains("speed"), "{e}");
    let e = err("duration = \"10s\"\n[[flows]]\nkind = \"tcp\"\n");
    assert!(e.contains("line 3") && e.contains("tcp"), "{e}");
    let e = err("[[flows]]\nkind = \"ping\"\n");
    assert!(e.contains("duration"), "{e}");
}

#[test]
fn inputs_that_would_hang_or_exhaust_memory_are_refused_with_field_and_line() {
    // A rate with a wrong unit: the source alone would be billions of
    // datagrams.
    let e = err("duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1e30bit\"\n");
    assert!(e.contains("line 4") && e.contains("rate"), "{e}");
    let e = err("duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1000Gbit\"\n");
    assert!(
        e.contains("line 2") && e.contains("lower `rate`") && e.contains("100000000"),
        "{e}"
    );
    let e = err("duration = \"10s\"\n[[flows]]\nkind = \"ping\"\ninterval = \"10ns\"\n");
    assert!(e.contains("line 2") && e.contains("`interval`"), "{e}");
    // The same sources over a short run are fine.
    assert!(
        Scenario::parse(
            "duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"10Gbit\"\n",
            "ok.toml"
        )
        .is_ok()
    );
    let e = err(
        "duration = \"1s\"\n[link.down]\noutage_every = { period = \"2ns\", duration = \"1ns\" }\n[[flows]]\nkind = \"ping\"\n",
    );
    assert!(
        e.contains("line 3") && e.contains("outage period") && e.contains("floor"),
        "{e}"
    );
    let e = err("\nduration = \"1000000min\"\n[[flows]]\nkind = \"ping\"\n");
    assert!(
        e.contains("line 2") && e.contains("`duration`") && e.contains("24 h"),
        "{e}"
    );
    assert!(
        Scenario::parse(
            "duration = \"1440min\"\n[[flows]]\nkind = \"ping\"\n",
            "ok.toml"
        )
        .is_ok()
    );
    let mut text = String::from("duration = \"1s\"\n");
    for _ in 0..=MAX_FLOWS {
        text.push_str("[[flows]]\nkind = \"ping\"\n");
    }
    // Unnamed flows get distinct labels, so only the count is wrong.
    let e = err(&text);
    let line = 2 + 2 * MAX_FLOWS;
    assert!(
        e.contains(&format!("line {line}")) && e.contains("1001 flows"),
        "{e}"
    );
}

/// `prague_small_datagrams` follows the transport's default (on) unless a
/// brisk flow sets it; a value that is not a boolean is refused with the
/// field's line.
#[test]
fn brisk_flows_may_set_prague_small_datagrams() {
    let flow = |extra: &str| format!("duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\n{extra}");
    let small = |text: &str| match &Scenario::parse(text, "s.toml").unwrap().flows[0].traffic {
        Traffic::Brisk(b) => b.prague_small_datagrams,
        other => panic!("{other:?}"),
    };
    let default = brisk_proto::congestion::CcConfig::default().prague_small_datagrams;
    assert!(default);
    assert_eq!(small(&flow("")), default);
    assert!(small(&flow("prague_small_datagrams = true\n")));
    assert!(!small(&flow("prague_small_datagrams = false\n")));
    let e = err(&flow("prague_small_datagrams = \"yes\"\n"));
    assert!(
        e.contains("line 4") && e.contains("prague_small_datagrams"),
        "{e}"
    );
}

/// `prague_burst_floor` is on unless a brisk flow turns it off; a value
/// that is not a boolean is refused with the field's line.
#[test]
fn brisk_flows_may_turn_off_prague_burst_floor() {
    let flow = |extra: &str| format!("duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\n{extra}");
    let floor = |text: &str| match &Scenario::parse(text, "s.toml").unwrap().flows[0].traffic {
        Traffic::Brisk(b) => b.prague_burst_floor,
        other => panic!("{other:?}"),
    };
    assert!(floor(&flow("")));
    assert!(!floor(&flow("prague_burst_floor = false\n")));
    let e = err(&flow("prague_burst_floor = 1\n"));
    assert!(
        e.contains("line 4") && e.contains("prague_burst_floor"),
        "{e}"
    );
}

/// `prague_pipe_cap` follows the transport's default unless a brisk flow
/// sets it; a value that is not a boolean is refused with the field's line.
#[test]
fn brisk_flows_may_set_prague_pipe_cap() {
    let flow = |extra: &str| format!("duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\n{extra}");
    let cap = |text: &str| match &Scenario::parse(text, "s.toml").unwrap().flows[0].traffic {
        Traffic::Brisk(b) => b.prague_pipe_cap,
        other => panic!("{other:?}"),
    };
    let default = brisk_proto::congestion::CcConfig::default().prague_pipe_cap;
    assert_eq!(cap(&flow("")), default);
    assert!(cap(&flow("prague_pipe_cap = true\n")));
    assert!(!cap(&flow("prague_pipe_cap = false\n")));
    let e = err(&flow("prague_pipe_cap = 1\n"));
    assert!(e.contains("line 4") && e.contains("prague_pipe_cap"), "{e}");
}

#[test]
fn brisk_flows_take_their_fields_per_app() {
    let s = Scenario::parse(
        "duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\ncc = \"cubic\"\napp = \"feed\"\nobjects = [\"4kB\", \"60KiB\"]\necn = false\n",
        "b.toml",
    )
    .unwrap();
    let Traffic::Brisk(b) = &s.flows[0].traffic else {
        panic!("{:?}", s.flows[0])
    };
    assert_eq!(
        (b.cc, b.ecn, b.ack_frequency),
        (CcAlgorithm::Cubic, false, true)
    );
    assert_eq!(
        b.app,
        BriskWorkloadSpec::Feed {
            objects: vec![4000, 61_440],
            sequential: false,
            setup_round_trips: 0,
            early_data: None,
            replay_first_flight: None,
        }
    );
    let s = Scenario::parse(
        "duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\napp = \"messages\"\nmessage_size = \"2kB\"\ninterval = \"10ms\"\nsend_buffer = \"120kB\"\n",
        "m.toml",
    )
    .unwrap();
    let Traffic::Brisk(b) = &s.flows[0].traffic else {
        panic!("{:?}", s.flows[0])
    };
    assert_eq!(
        b.app,
        BriskWorkloadSpec::Messages {
            size_bytes: 2000,
            interval: Some(Duration::from_millis(10)),
            limit: Some(SendLimit::SendBuffer(120_000)),
        }
    );
    let brisk = |body: &str| {
        err(&format!(
            "duration = \"1s\"\n\n[[flows]]\nkind = \"brisk\"\n{body}"
        ))
    };
    // A field of another application names its own line.
    let e = brisk("fps = 30\n");
    assert!(
        e.contains("line 5") && e.contains("`fps`") && e.contains("\"bulk\""),
        "{e}"
    );
    let e = brisk("app = \"video\"\nbytes = \"1MB\"\n");
    assert!(e.contains("`bytes`") && e.contains("\"video\""), "{e}");
    let e = brisk("app = \"feed\"\n");
    assert!(e.contains("`objects` is required"), "{e}");
    let e = brisk("app = \"messages\"\nsend_buffer = \"1kB\"\nlow_water_mark = \"1kB\"\n");
    assert!(e.contains("pick one"), "{e}");
    let e = brisk("ecn = \"ect1\"\n");
    assert!(e.contains("`ecn`"), "{e}");
    let e = brisk("app = \"messages\"\nmessage_size = \"10B\"\n");
    assert!(e.contains("`message_size`"), "{e}");
    let e = brisk("app = \"video\"\nfps = 0\n");
    assert!(e.contains("`fps`"), "{e}");
    let e = brisk("rate = \"1Mbit\"\n");
    assert!(e.contains("`rate` does not apply"), "{e}");
    let e = brisk("fec = \"maybe\"\n");
    assert!(
        e.contains("line 5") && e.contains("maybe") && e.contains("`adaptive`"),
        "{e}"
    );
    let e = err("duration = \"1s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1Mbit\"\nfec = \"on\"\n");
    assert!(e.contains("`fec`"), "{e}");
    let e = brisk("cc = \"vegas\"\n");
    assert!(e.contains("line 5") && e.contains("vegas"), "{e}");
    let e = brisk("app = \"feed\"\nobjects = [\"4kB\", \"lots\"]\n");
    assert!(e.contains("line 6") && e.contains("lots"), "{e}");
    let e = brisk("ecn = true\n");
    assert!(e.contains("ecn"), "{e}");
    let e = brisk("app = \"video\"\nsequential = true\n");
    assert!(e.contains("`sequential`") && e.contains("\"video\""), "{e}");
    let e = brisk("setup_round_trips = 3\n");
    assert!(
        e.contains("`setup_round_trips`") && e.contains("\"bulk\""),
        "{e}"
    );
    let e = brisk("app = \"feed\"\nobjects = [\"4kB\"]\nsetup_round_trips = 11\n");
    assert!(e.contains("`setup_round_trips` must be 0..10"), "{e}");
    let e = brisk("app = \"feed\"\nobjects = [\"4kB\"]\nsetup_round_trips = -1\n");
    assert!(e.contains("setup_round_trips"), "{e}");
    let s = Scenario::parse(
        "duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\napp = \"feed\"\nobjects = [\"4kB\"]\nsequential = true\nsetup_round_trips = 3\n",
        "c.toml",
    )
    .unwrap();
    let Traffic::Brisk(b) = &s.flows[0].traffic else {
        panic!("{:?}", s.flows[0])
    };
    assert_eq!(
        b.app,
        BriskWorkloadSpec::Feed {
            objects: vec![4000],
            sequential: true,
            setup_round_trips: 3,
            early_data: None,
            replay_first_flight: None,
        }
    );
    // Early data: feed only, a boolean, its replay only with it, and no
    // moving sender (the sender host is then the server).
    let s = Scenario::parse(
        "duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\napp = \"feed\"\nobjects = [\"4kB\"]\nearly_data = true\nreplay_first_flight = \"500ms\"\n",
        "e.toml",
    )
    .unwrap();
    let Traffic::Brisk(b) = &s.flows[0].traffic else {
        panic!("{:?}", s.flows[0])
    };
    assert!(matches!(
        b.app,
        BriskWorkloadSpec::Feed {
            early_data: Some(true),
            replay_first_flight: Some(d),
            ..
        } if d == std::time::Duration::from_millis(500)
    ));
    let e = brisk("app = \"bulk\"\nearly_data = true\n");
    assert!(e.contains("`early_data`") && e.contains("\"bulk\""), "{e}");
    let e = brisk("app = \"feed\"\nobjects = [\"4kB\"]\nearly_data = \"yes\"\n");
    assert!(e.contains("early_data") && e.contains("line"), "{e}");
    let e = brisk("app = \"feed\"\nobjects = [\"4kB\"]\nreplay_first_flight = \"1s\"\n");
    assert!(e.contains("needs `early_data = true`"), "{e}");
    let e = brisk(
        "app = \"feed\"\nobjects = [\"4kB\"]\nearly_data = true\nreplay_first_flight = \"0s\"\n",
    );
    assert!(e.contains("`replay_first_flight`"), "{e}");
    let e =
        brisk("app = \"feed\"\nobjects = [\"4kB\"]\nearly_data = true\nmigrate_every = \"5s\"\n");
    assert!(
        e.contains("`migrate_every`") && e.contains("early_data"),
        "{e}"
    );
    // Raw sources take `false` as "not_ect", and no brisk field.
    let e =
        err("duration = \"1s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1Mbit\"\ncc = \"prague\"\n");
    assert!(e.contains("`cc` does not apply"), "{e}");
    let s = Scenario::parse(
        "duration = \"1s\"\n[[flows]]\nkind = \"ping\"\necn = false\n",
        "p",
    )
    .unwrap();
    assert_eq!(s.flows[0].traffic.source_ecn(), Some(EcnSpec::NotEct));
}

#[test]
fn the_reference_kind_says_how_to_build_it_when_missing() {
    let text = "duration = \"1s\"\n[[flows]]\nkind = \"udp_prague\"\n";
    let parsed = Scenario::parse(text, "t.toml");
    if cfg!(feature = "reference-prague") {
        assert!(parsed.is_ok(), "{parsed:?}");
    } else {
        let e = parsed.unwrap_err().to_string();
        assert!(
            e.contains("reference-prague") && e.contains("GPL-2.0") && e.contains("flows[0]"),
            "{e}"
        );
    }
}

#[test]
fn profiles_set_both_links() {
    let s = Scenario::parse("duration = \"1s\"\nprofile = \"lte\"\n", "p.toml").unwrap();
    assert_eq!(
        s.network.link.down.delay + s.network.link.up.delay,
        Duration::from_millis(220)
    );
    let e = err("duration = \"1s\"\nprofile = \"lte\"\n[link.down]\nrate = \"1Mbit\"\n");
    assert!(e.contains("profile"), "{e}");
    let e = err("duration = \"1s\"\n\nprofile = \"6g\"\n");
    assert!(e.contains("line 3") && e.contains("lte"), "{e}");
}

#[test]
fn queue_tables_are_read_per_direction() {
    let text = "duration = \"1s\"\n[queue.fq_codel]\n[queue_up.fifo]\nlimit_packets = 10\n";
    let tables = |down: Option<&str>, up: Option<&str>| brisk_netmodel::network::QueueTables {
        down: down.map(String::from),
        up: up.map(String::from),
    };
    assert_eq!(
        Scenario::parse(text, "t.toml")
            .unwrap()
            .network
            .queue_tables,
        tables(Some("fq_codel"), Some("fifo"))
    );
    let only_down = "duration = \"1s\"\n[queue.fq_codel]\n";
    assert_eq!(
        Scenario::parse(only_down, "t.toml")
            .unwrap()
            .network
            .queue_tables,
        tables(Some("fq_codel"), None)
    );
}

#[test]
fn traces_are_read_through_the_callback() {
    let text = "duration = \"1s\"\n[link.down]\nrate = { mahimahi = \"t.down\" }\n";
    let s = Scenario::parse_with_traces(text, "t.toml", |p| {
        assert_eq!(p, Path::new("t.down"));
        Ok("1\n2\n".into())
    })
    .unwrap();
    assert!(s.network.link.down.validate().is_ok());
    let e = Scenario::parse(text, "t.toml").unwrap_err().to_string();
    assert!(e.contains("t.down") && e.contains("line 2"), "{e}");
    let e = Scenario::parse_with_traces(text, "t.toml", |_| Ok("x\n".into()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("t.down"), "{e}");
}

#[test]
fn validation_errors_name_flow_field_and_line() {
    // A field of another kind names its own line; a missing one the flow's.
    let e = err("duration = \"10s\"\n\n[[flows]]\nkind = \"ping\"\nrate = \"1Mbit\"\n");
    assert!(
        e.contains("line 5") && e.contains("flows[0] (ping)") && e.contains("`rate`"),
        "{e}"
    );
    let e = err("duration = \"10s\"\n[[flows]]\nkind = \"cbr\"\n");
    assert!(e.contains("`rate` is required"), "{e}");
    let e = err(
        "duration = \"10s\"\n[link.down]\ndelay = \"30ms\"\n[[flows]]\nkind = \"ping\"\nrtt = \"20ms\"\n",
    );
    assert!(e.contains("below the bottleneck"), "{e}");
    let e = err("duration = \"0s\"\n");
    assert!(e.contains("duration"), "{e}");
    let e = err("duration = \"1s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1Mbit\"\nsize = \"10B\"\n");
    assert!(e.contains("`size`"), "{e}");
}

/// A link with both directions, for the checks below.
const LINKS: &str = "[link.down]\nrate = \"10Mbit\"\n[link.up]\nrate = \"10Mbit\"\n";

#[test]
fn an_ambiguous_probability_is_refused_with_field_and_line() {
    for field in ["loss = \"1\"", "loss = 1", "duplicate = 1.0"] {
        let e = err(&format!("duration = \"1s\"\n[link.down]\n{field}\n"));
        let key = field.split(' ').next().unwrap_or_default();
        assert!(e.contains("line 3") && e.contains(key), "{e}");
        assert!(e.contains("ambiguous") && e.contains("100%"), "{e}");
    }
    let s = Scenario::parse("duration = \"1s\"\n[link.down]\nloss = \"100%\"\n", "l").unwrap();
    assert!(s.network.link.down.loss.is_some());
}

#[test]
fn rates_tools_disagree_on_name_field_and_line() {
    let e = err("duration = \"1s\"\n\n[link.down]\nrate = \"1MBps\"\n");
    assert!(e.contains("line 4") && e.contains("rate"), "{e}");
    assert!(e.contains("\"8Mbit\"") || e.contains("\"1Mbit\""), "{e}");
    assert!(e.contains("\"1MB/s\""), "{e}");
    let e = err("duration = \"1s\"\n[[flows]]\nkind = \"cbr\"\nrate = \"1MB\"\n");
    assert!(
        e.contains("line 4") && e.contains("size, not a rate"),
        "{e}"
    );
}

#[test]
fn duplicate_flow_names_are_refused() {
    let e = err(&format!(
        "duration = \"1s\"\n{LINKS}[[flows]]\nkind = \"ping\"\nname = \"a\"\n\n[[flows]]\nkind = \"ping\"\nname = \"a\"\n"
    ));
    assert!(e.contains("line 10") && e.contains("flows[1]"), "{e}");
    assert!(e.contains("\"a\"") && e.contains("line 6"), "{e}");
    // A name may not take another flow's default label either.
    let e = err(&format!(
        "duration = \"1s\"\n{LINKS}[[flows]]\nkind = \"ping\"\n[[flows]]\nkind = \"ping\"\nname = \"ping-0\"\n"
    ));
    assert!(
        e.contains("\"ping-0\"") && e.contains("already used"),
        "{e}"
    );
}

#[test]
fn flows_outside_the_run_are_refused() {
    let flow = |timing: &str| {
        err(&format!(
            "duration = \"10s\"\n{LINKS}[[flows]]\nkind = \"ping\"\n{timing}\n"
        ))
    };
    for timing in ["start = \"10s\"", "start = \"1min\""] {
        let e = flow(timing);
        assert!(e.contains("line 6") && e.contains("`start`"), "{e}");
        assert!(e.contains("end of the run"), "{e}");
    }
    for timing in ["stop = \"0s\"", "start = \"2s\"\nstop = \"1s\""] {
        let e = flow(timing);
        assert!(e.contains("line 6") && e.contains("`stop`"), "{e}");
        assert!(e.contains("after `start`"), "{e}");
    }
    let s = Scenario::parse(
        &format!("duration = \"10s\"\n{LINKS}[[flows]]\nkind = \"ping\"\nstop = \"20s\"\n"),
        "s",
    )
    .unwrap();
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(s.warnings[0].contains("line 6") && s.warnings[0].contains("`stop`"));
}

#[test]
fn missing_link_tables_are_warned_about() {
    let s = Scenario::parse(GOOD, "g").unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let s = Scenario::parse("duration = \"1s\"\nprofile = \"lte\"\n", "p").unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let s = Scenario::parse("duration = \"1s\"\n[link.up]\n", "u").unwrap();
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(s.warnings[0].contains("[link.down]"), "{:?}", s.warnings);
    let s = Scenario::parse("duration = \"1s\"\n", "n").unwrap();
    assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
    assert!(s.warnings[1].contains("[link.up]"), "{:?}", s.warnings);
    let s = Scenario::parse("duration = \"1s\"\nlink = { down = {}, up = {} }\n", "i").unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

#[test]
fn a_scenario_without_flows_cannot_be_simulated() {
    let s = Scenario::parse(&format!("duration = \"1s\"\n{LINKS}"), "empty.toml").unwrap();
    let e = s.require_flows("empty.toml").unwrap_err().to_string();
    assert!(e.contains("empty.toml") && e.contains("[[flows]]"), "{e}");
    assert!(
        Scenario::parse(GOOD, "g")
            .unwrap()
            .require_flows("g")
            .is_ok()
    );
}

#[test]
fn two_queues_for_one_direction_are_named() {
    let e = err("duration = \"1s\"\n[queue.fifo]\n\n[queue.codel]\n");
    assert!(e.contains("line 4") && e.contains("only one queue"), "{e}");
    assert!(
        e.contains("codel and fifo") || e.contains("fifo and codel"),
        "{e}"
    );
    let e = err("duration = \"1s\"\n[queue.fifo]\n[queue_up.pie]\n[queue_up.codel]\n");
    assert!(e.contains("line 4") && e.contains("queue_up"), "{e}");
}

#[test]
fn values_out_of_range_say_so() {
    let e = err("duration = \"1e400s\"\n");
    assert!(
        e.contains("line 1") && e.contains("too large (at most"),
        "{e}"
    );
    let e = err("duration = \"1s\"\n[link.down]\ndelay = \"1e30s\"\n");
    assert!(e.contains("line 3") && e.contains("too large"), "{e}");
    let e =
        err("duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\napp = \"video\"\nfps = 5000000000\n");
    assert!(
        e.contains("line 5") && e.contains("fps") && e.contains("too large"),
        "{e}"
    );
    let e = err("duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\nbytes = \"1e30GB\"\n");
    assert!(e.contains("line 4") && e.contains("too large"), "{e}");
}

#[test]
fn misplaced_and_unknown_flow_fields_name_field_and_line() {
    let flow = |body: &str| err(&format!("duration = \"1s\"\n[[flows]]\n{body}"));
    // A brisk field on a raw source, at its own line.
    let e = flow("kind = \"cbr\"\nrate = \"1Mbit\"\n\napp = \"video\"\n");
    assert!(
        e.contains("line 6") && e.contains("`app`") && e.contains("kind \"cbr\""),
        "{e}"
    );
    // The first misplaced field in the file is the one named.
    let e = flow("kind = \"ping\"\non = \"1s\"\ncc = \"cubic\"\n");
    assert!(e.contains("line 4") && e.contains("`on`"), "{e}");
    // A field no brisk flow has, before the application's own complaints.
    let e = flow("kind = \"brisk\"\ncc = \"cubic\"\nsend_jitter = \"1ms\"\nfps = 0\n");
    assert!(
        e.contains("line 5") && e.contains("`send_jitter`") && e.contains("kind \"brisk\""),
        "{e}"
    );
    // A video field on a bulk flow under CUBIC.
    let e = flow("kind = \"brisk\"\ncc = \"cubic\"\nbytes = \"1MB\"\nfps = 25\n");
    assert!(
        e.contains("line 6") && e.contains("`fps`") && e.contains("app \"bulk\""),
        "{e}"
    );
    // A field no kind has is serde's error, with field and line.
    let e = flow("kind = \"brisk\"\napp = \"video\"\nframe_rate = 30\n");
    assert!(e.contains("line 5") && e.contains("frame_rate"), "{e}");
    // Missing fields name the field and the flow's line.
    let e = flow("kind = \"on_off\"\nrate = \"1Mbit\"\non = \"1s\"\n");
    assert!(
        e.contains("line 2") && e.contains("`off` is required"),
        "{e}"
    );
    let e = flow("kind = \"on_off\"\nrate = \"1Mbit\"\non = \"0s\"\noff = \"1s\"\n");
    assert!(
        e.contains("line 5") && e.contains("`on` must be greater"),
        "{e}"
    );
}

#[test]
fn errors_are_typed() {
    let e = Scenario::parse(
        "duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\napp = \"video\"\nbytes = \"1MB\"\n",
        "t",
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            ScenarioError::Flow {
                line: 5,
                index: 0,
                kind: FlowKind::Brisk,
                error: FlowError::NotForApp {
                    field: "bytes",
                    app: BriskApp::Video
                },
                ..
            }
        ),
        "{e:?}"
    );
    let e = Scenario::parse("duration = \"0s\"\n", "t").unwrap_err();
    assert!(
        matches!(
            e,
            ScenarioError::Run {
                line: 1,
                error: RunError::ZeroDuration,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn video_delivery_defaults_to_datagrams_and_send_limits_need_streams() {
    let video = |body: &str| {
        Scenario::parse(
            &format!("duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\napp = \"video\"\n{body}"),
            "t",
        )
    };
    let spec = |s: Scenario| match &s.flows[0].traffic {
        Traffic::Brisk(b) => b.app.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        spec(video("").unwrap()),
        BriskWorkloadSpec::Video {
            fps: DEFAULT_FPS,
            limit: None,
            delivery: VideoDelivery::Datagrams,
        }
    );
    assert_eq!(
        spec(video("delivery = \"streams\"\nsend_buffer = \"64kB\"\n").unwrap()),
        BriskWorkloadSpec::Video {
            fps: DEFAULT_FPS,
            limit: Some(SendLimit::SendBuffer(64_000)),
            delivery: VideoDelivery::Streams,
        }
    );
    let e = video("low_water_mark = \"16kB\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 5") && e.contains("delivery = \"streams\""),
        "{e}"
    );
    let e = video("delivery = \"carrier pigeon\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`datagrams`") && e.contains("`streams`"), "{e}");
    let e = Scenario::parse(
        "duration = \"1s\"\n[[flows]]\nkind = \"brisk\"\ndelivery = \"streams\"\n",
        "t",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`delivery`") && e.contains("\"bulk\""), "{e}");
}
