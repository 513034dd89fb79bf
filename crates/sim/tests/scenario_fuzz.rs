//! Scenario files mangled at random: the reader answers each with a
//! scenario or a message, never a panic, and whatever it accepts runs
//! (briefly) without one. The starting points are the example files
//! under `scenarios/`, so the mutations land in every table and field a
//! real file has.

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

#[test]
fn every_example_parses_untouched() {
    for (i, text) in examples().iter().enumerate() {
        assert!(Scenario::parse(text, "example.toml").is_ok(), "example {i}");
    }
}
