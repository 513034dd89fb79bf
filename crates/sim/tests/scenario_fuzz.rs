//! Scenario files mangled at random: the reader answers each with a
//! scenario or a message, never a panic, and whatever it accepts runs
//! (briefly) without one. The starting points are the example files
//! under `scenarios/`, so the mutations land in every table and field a
//! real file has. A second fuzzer writes the mistakes people make (a bare
//! probability of 1, a rate tools read differently, twin flow names, a
//! flow outside the run, two queues, a value too large, no traffic) into
//! those files, and checks each is refused naming its field and line.

use brisk_sim::scenario::{IpFamily, Scenario};
use brisk_sim::{RunOptions, run};
use proptest::prelude::*;
use std::time::Duration;

/// Every example scenario's text.
fn examples() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the scenarios directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("a readable example"))
        .collect()
}

/// Pieces of TOML and of values worth splicing in: syntax, numbers at the
/// edges of what a field holds, units, and bytes no file should have.
const SPLICES: &[&str] = &[
    "\"",
    "[",
    "]",
    "[[",
    "]]",
    "=",
    "\n",
    "#",
    ",",
    "{",
    "}",
    ".",
    "-",
    "0",
    "9",
    "e300",
    "e-300",
    "1e300s",
    "0.1bit",
    "1e30Gbit",
    "18446744073709551616",
    "-1",
    "nan",
    "inf",
    "0ms",
    "0%",
    "150%",
    "\u{e9}",
    "\u{0}",
    "\t",
    "kind = \"brisk\"\n",
    "[[flows]]\n",
    "[queue.dual_pi2]\n",
    "rate = \"1bit\"\n",
    "interval = \"1ns\"\n",
    "size = \"65000B\"\n",
    "limit_packets = 0\n",
];

/// Values to put in a field: each a unit or a number at an edge, quoted
/// (as units are written) or bare.
const VALUES: &[&str] = &[
    "\"1e300s\"",
    "\"1e18min\"",
    "\"0ms\"",
    "\"1ns\"",
    "\"-1ms\"",
    "\"0.4bit\"",
    "\"1bit\"",
    "\"1e30Gbit\"",
    "\"100Gbit\"",
    "\"0B\"",
    "\"65000B\"",
    "\"1e300B\"",
    "\"100%\"",
    "\"0%\"",
    "\"nan\"",
    "0",
    "-1",
    "1",
    "1e300",
    "18446744073709551615",
    "0.5",
    "true",
    "\"\"",
    "[]",
    "{}",
];

#[derive(Debug, Clone)]
enum Mutation {
    Value { line: usize, value: usize },
    Delete { at: usize, len: usize },
    Splice { at: usize, piece: usize },
    Replace { at: usize, with: char },
    DuplicateLine { line: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0..VALUES.len()).prop_map(|(line, value)| Mutation::Value { line, value }),
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 0..SPLICES.len()).prop_map(|(at, piece)| Mutation::Splice { at, piece }),
        (any::<usize>(), any::<char>()).prop_map(|(at, with)| Mutation::Replace { at, with }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let n = chars.len().max(1);
    match *m {
        Mutation::Value { line, value } => {
            // The line-th assignment keeps its key and gets the value.
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            let fields: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].contains(" = "))
                .collect();
            let Some(&i) = fields.get(line % fields.len().max(1)) else {
                return text.to_string();
            };
            let key = &lines[i][..lines[i].find(" = ").unwrap_or(0)];
            let mut out: String = lines[..i].concat();
            out.push_str(&format!("{key} = {}\n", VALUES[value]));
            out.push_str(&lines[i + 1..].concat());
            return out;
        }
        Mutation::Delete { at, len } => {
            let at = at % n;
            let end = (at + len).min(chars.len());
            chars.drain(at.min(end)..end);
        }
        Mutation::Splice { at, piece } => {
            let at = at % (chars.len() + 1);
            chars.splice(at..at, SPLICES[piece].chars());
        }
        Mutation::Replace { at, with } => {
            if let Some(c) = chars.get_mut(at % n) {
                *c = with;
            }
        }
        Mutation::DuplicateLine { line } => {
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            if lines.is_empty() {
                return text.to_string();
            }
            let i = line % lines.len();
            let mut out: String = lines[..=i].concat();
            out.push_str(lines[i]);
            out.push_str(&lines[i + 1..].concat());
            return out;
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn mangled_scenarios_get_a_scenario_or_a_message(
        file in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..4),
        v6 in any::<bool>(),
    ) {
        let examples = examples();
        let mut text = examples[file.index(examples.len())].clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        match Scenario::parse(&text, "mangled.toml") {
            Err(e) => {
                let message = e.to_string();
                prop_assert!(message.contains("mangled.toml"), "{message}");
            }
            Ok(mut s) => {
                // Two simulated milliseconds: enough to build every flow,
                // link and queue and to pass packets through them, bounded
                // however fast a mangled rate asks a source to send.
                s.duration = s.duration.min(Duration::from_millis(2));
                let ip = Some(if v6 { IpFamily::V6 } else { IpFamily::V4 });
                let r = run(&s, RunOptions { ip, ..RunOptions::default() });
                prop_assert_eq!(r.results.flows.len(), s.flows.len());
            }
        }
    }
}

/// A mistake written into an example file; each index picks among the
/// lines or values it could take.
#[derive(Debug, Clone)]
enum Mistake {
    /// A bare probability of 1 or more in place of a percentage.
    BareProbability { value: usize },
    /// A rate in a spelling tools read differently.
    AmbiguousRate { line: usize, value: usize },
    /// A size in a spelling tools read differently.
    AmbiguousSize { line: usize, value: usize },
    /// A duration beyond what a run can hold.
    DurationTooLarge { line: usize, value: usize },
    /// Two flows of the same name.
    TwinNames,
    /// A flow that starts at or after the end of the run.
    StartAfterEnd { beyond_ms: u64 },
    /// A flow that stops before (or when) it starts.
    StopBeforeStart { start_ms: u64, earlier_ms: u64 },
    /// Two queue tables for one direction.
    TwoQueues,
    /// No flows at all.
    NoFlows,
}

const AMBIGUOUS_PROBABILITIES: &[&str] = &["1", "\"1\"", "1.0", "\"1.0\"", "5", "\"50\""];
const AMBIGUOUS_RATES: &[&str] = &[
    "\"1MBps\"",
    "\"1Mbps\"",
    "\"10mbps\"",
    "\"2kbps\"",
    "\"1MB\"",
    "\"1Mb/s\"",
    "\"5KB/s\"",
];
const AMBIGUOUS_SIZES: &[&str] = &["\"1500KB\"", "\"4kb\"", "\"1mb\"", "\"2M\"", "\"1500b\""];
const DURATIONS_TOO_LARGE: &[&str] = &[
    "\"1e400ms\"",
    "\"1e30s\"",
    "\"1e18min\"",
    "\"99999999999999999999s\"",
];

fn mistake() -> impl Strategy<Value = Mistake> {
    prop_oneof![
        (0..AMBIGUOUS_PROBABILITIES.len()).prop_map(|value| Mistake::BareProbability { value }),
        (any::<usize>(), 0..AMBIGUOUS_RATES.len())
            .prop_map(|(line, value)| Mistake::AmbiguousRate { line, value }),
        (any::<usize>(), 0..AMBIGUOUS_SIZES.len())
            .prop_map(|(line, value)| Mistake::AmbiguousSize { line, value }),
        (any::<usize>(), 0..DURATIONS_TOO_LARGE.len())
            .prop_map(|(line, value)| Mistake::DurationTooLarge { line, value }),
        Just(Mistake::TwinNames),
        (0u64..100_000).prop_map(|beyond_ms| Mistake::StartAfterEnd { beyond_ms }),
        (1u64..5000, 0u64..5000).prop_map(|(start_ms, earlier_ms)| Mistake::StopBeforeStart {
            start_ms,
            earlier_ms
        }),
        Just(Mistake::TwoQueues),
        Just(Mistake::NoFlows),
    ]
}

/// Gives the `pick`-th line assigning one of `keys` the value `value`:
/// the new text, the 1-based line and the key. `None` when no line does.
fn set_value(
    text: &str,
    keys: &[&str],
    pick: usize,
    value: &str,
) -> Option<(String, usize, String)> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let found: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let key = keys.iter().find(|k| l.starts_with(&format!("{k} = \"")))?;
            Some((i, *key))
        })
        .collect();
    let &(i, key) = found.get(pick % found.len().max(1))?;
    let mut out: String = lines[..i].concat();
    out.push_str(&format!("{key} = {value}\n"));
    out.push_str(&lines[i + 1..].concat());
    Some((out, i + 1, key.to_string()))
}

/// Appends `tail` to `text` on lines of its own; returns the text and the
/// line `tail` starts on.
fn append(text: &str, tail: &str) -> (String, usize) {
    let mut out = text.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push('\n');
    let line = out.lines().count() + 1;
    out.push_str(tail);
    (out, line)
}

/// Writes `mistake` into `text` (whose run lasts `duration`); returns the
/// text, and the field and line the refusal must name (field `None` for
/// a file-wide refusal). `None` when the file has no place for it.
fn write_mistake(
    text: &str,
    duration: Duration,
    mistake: &Mistake,
) -> Option<(String, Option<String>, usize)> {
    let ms = duration.as_millis() as u64;
    let some = |(t, line, key): (String, usize, String)| Some((t, Some(key), line));
    match *mistake {
        Mistake::BareProbability { value } => {
            let v = AMBIGUOUS_PROBABILITIES[value];
            if let Some(found) = set_value(text, &["loss", "duplicate"], 0, v) {
                return some(found);
            }
            // No probability in the file: add one to the down link.
            let at = text.find("[link.down]\n")? + "[link.down]\n".len();
            let line = text[..at].lines().count() + 1;
            let out = format!("{}duplicate = {v}\n{}", &text[..at], &text[at..]);
            Some((out, Some("duplicate".into()), line))
        }
        Mistake::AmbiguousRate { line, value } => {
            some(set_value(text, &["rate"], line, AMBIGUOUS_RATES[value])?)
        }
        Mistake::AmbiguousSize { line, value } => some(set_value(
            text,
            &[
                "size",
                "message_size",
                "send_buffer",
                "low_water_mark",
                "bytes",
                "limit_bytes",
            ],
            line,
            AMBIGUOUS_SIZES[value],
        )?),
        Mistake::DurationTooLarge { line, value } => some(set_value(
            text,
            &[
                "duration", "delay", "interval", "start", "rtt", "target", "on", "off",
            ],
            line,
            DURATIONS_TOO_LARGE[value],
        )?),
        Mistake::TwinNames => {
            let twin = "[[flows]]\nkind = \"ping\"\nname = \"twin\"\n";
            let (once, _) = append(text, twin);
            let (out, line) = append(&once, twin);
            Some((out, Some("name".into()), line))
        }
        Mistake::StartAfterEnd { beyond_ms } => {
            let tail = format!(
                "[[flows]]\nkind = \"ping\"\nstart = \"{}ms\"\n",
                ms + beyond_ms
            );
            let (out, line) = append(text, &tail);
            Some((out, Some("start".into()), line))
        }
        Mistake::StopBeforeStart {
            start_ms,
            earlier_ms,
        } => {
            let start = start_ms.min(ms.saturating_sub(1));
            let stop = start.saturating_sub(earlier_ms);
            let tail =
                format!("[[flows]]\nkind = \"ping\"\nstart = \"{start}ms\"\nstop = \"{stop}ms\"\n");
            let (out, line) = append(text, &tail);
            Some((out, Some("stop".into()), line))
        }
        Mistake::TwoQueues => {
            if text.contains("queue_up") {
                return None;
            }
            let (out, line) = append(text, "[queue_up.fifo]\n\n[queue_up.codel]\n");
            Some((out, Some("queue_up".into()), line + 2))
        }
        Mistake::NoFlows => {
            let at = text.find("[[flows]]")?;
            Some((text[..at].to_string(), None, 0))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn mistakes_are_refused_naming_field_and_line(
        file in any::<prop::sample::Index>(),
        mistake in mistake(),
    ) {
        let examples = examples();
        let text = &examples[file.index(examples.len())];
        let duration = Scenario::parse(text, "example.toml").expect("an example parses").duration;
        let Some((bad, field, line)) = write_mistake(text, duration, &mistake) else {
            return Ok(());
        };
        let refused = Scenario::parse(&bad, "bad.toml").and_then(|s| s.require_flows("bad.toml"));
        let message = match refused {
            Ok(()) => return Err(TestCaseError::fail(format!("accepted:\n{bad}"))),
            Err(e) => e.to_string(),
        };
        prop_assert!(message.contains("bad.toml"), "{message}");
        match field {
            Some(field) => {
                prop_assert!(message.contains(&field), "{field}: {message}");
                let at = format!("line {line}");
                prop_assert!(
                    message.contains(&format!("{at}:")) || message.contains(&format!("{at},")),
                    "{at}: {message}\n{bad}"
                );
            }
            None => prop_assert!(message.contains("[[flows]]"), "{message}"),
        }
    }
}

#[test]
fn every_example_parses_untouched() {
    for (i, text) in examples().iter().enumerate() {
        assert!(Scenario::parse(text, "example.toml").is_ok(), "example {i}");
    }
}
