//! `report.html`: one self-contained page (inline CSS, inline SVG, no
//! scripts, nothing fetched) that opens from disk in any browser.
//!
//! Every string that came from a file or a run is escaped; numbers are
//! printed with fixed decimals so the page is byte-identical for the same
//! report.

use crate::output::SCENARIO_FILE;
use crate::report::{Report, ScenarioReport, SectionReport};
use crate::section::{Cell, Table};
use crate::verdict::{Check, MISSING, Verdict, claims_line, setup_line};
use std::fmt::Write as _;

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root { --ink: #1f2328; --muted: #59636e; --line: #d8dee4; --soft: #f6f8fa;
  --accent: #0a58ca; --pass: #1a7f37; --pass-bg: #dafbe1; --partial: #9a6700;
  --partial-bg: #fff8c5; --fail: #cf222e; --fail-bg: #ffebe9; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
.page { max-width: 1060px; margin: 0 auto; padding: 40px 32px 64px; }
header { border-bottom: 1px solid var(--line); padding-bottom: 20px; margin-bottom: 28px; }
h1 { font-size: 30px; line-height: 1.2; margin: 0 0 6px; letter-spacing: -0.01em; }
h2 { font-size: 23px; line-height: 1.3; margin: 0 0 12px; display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
h3 { font-size: 13px; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted); margin: 28px 0 10px; }
p { margin: 0 0 10px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 13.5px; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 8px 0; overflow-x: auto; }
.subtitle { color: var(--muted); font-size: 17px; margin: 0 0 14px; }
.meta { display: flex; flex-wrap: wrap; gap: 8px 28px; margin: 0; font-size: 14px; }
.meta div { display: flex; gap: 6px; }
.meta dt { color: var(--muted); }
.meta dd { margin: 0; font-weight: 600; }
.badge { display: inline-block; font-size: 12px; font-weight: 700; letter-spacing: 0.05em;
  border-radius: 999px; padding: 2px 10px; border: 1px solid currentColor; vertical-align: middle; }
.badge.pass { color: var(--pass); background: var(--pass-bg); }
.badge.partial { color: var(--partial); background: var(--partial-bg); }
.badge.fail { color: var(--fail); background: var(--fail-bg); }
nav { background: var(--soft); border: 1px solid var(--line); border-radius: 8px; padding: 14px 20px; margin-bottom: 36px; }
nav h2 { font-size: 13px; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted); margin: 0 0 8px; }
nav ol { margin: 0; padding-left: 22px; }
nav li { margin: 4px 0; }
nav .count { color: var(--muted); font-size: 14px; }
section { border-top: 1px solid var(--line); padding-top: 28px; margin-top: 36px; }
.verdict { border-left: 4px solid; border-radius: 4px; padding: 10px 14px; margin: 6px 0 18px; font-weight: 600; }
.verdict.pass { border-color: var(--pass); background: var(--pass-bg); }
.verdict.partial { border-color: var(--partial); background: var(--partial-bg); }
.verdict.fail { border-color: var(--fail); background: var(--fail-bg); }
blockquote { margin: 0 0 8px; padding: 10px 16px; border-left: 4px solid var(--line); background: var(--soft); border-radius: 0 6px 6px 0; }
.source, .scope { font-size: 14px; color: var(--muted); }
table { border-collapse: collapse; width: 100%; font-size: 14px; margin: 4px 0 8px; }
caption { caption-side: top; text-align: left; color: var(--muted); font-size: 13.5px; padding-bottom: 6px; }
th, td { padding: 6px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; background: var(--soft); border-bottom: 2px solid var(--line); }
th.num { text-align: right; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) td { background: #fbfcfd; }
.scroll { overflow-x: auto; }
td.ok { color: var(--pass); font-weight: 700; }
td.miss { color: var(--fail); font-weight: 700; }
.lead { font-size: 14px; color: var(--muted); margin: 0 0 4px; }
dl.setup { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0 0 14px; font-size: 14.5px; }
dl.setup dt { font-weight: 600; }
dl.setup dd { margin: 0; }
dl.setup ul, table.scenarios ul { margin: 0; padding-left: 18px; }
table.scenarios td { font-size: 13.5px; }
table.scenarios code { font-size: 12.5px; }
table.scenarios td:first-child code { white-space: nowrap; }
.note { color: var(--muted); font-size: 13px; margin-top: 2px; }
.nw { white-space: nowrap; }
figure { margin: 18px 0 26px; }
figure svg { display: block; width: 100%; height: auto; border: 1px solid var(--line); border-radius: 6px; }
figcaption { font-size: 14px; color: var(--muted); margin-top: 6px; }
.terms { font-size: 14px; margin: 16px 0 0; }
.terms summary { cursor: pointer; color: var(--accent); }
.terms dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 10px 0 0; }
.terms dt { font-weight: 600; }
.terms dd { margin: 0; }
footer { border-top: 1px solid var(--line); margin-top: 48px; padding-top: 16px; font-size: 14px; color: var(--muted); }
td { overflow-wrap: anywhere; }
td.num { overflow-wrap: normal; }
/* A phone: every table row becomes a card of labelled cells, so nothing
   needs a sideways scroll. */
@media (max-width: 720px) {
  .page { padding: 20px 14px 40px; }
  h1 { font-size: 25px; }
  h2 { font-size: 20px; }
  dl.setup, .terms dl { grid-template-columns: 1fr; gap: 0 0; }
  dl.setup dd { margin-bottom: 8px; }
  table.stack, table.stack caption, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
  table.stack thead { display: none; }
  table.stack tr { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 10px; padding: 4px 0; }
  tbody tr:nth-child(even) td { background: none; }
  table.stack td, table.stack td.num { border: none; padding: 3px 12px; text-align: left; white-space: normal; }
  table.stack td::before { content: attr(data-label); display: block; font-size: 12px; font-weight: 600;
    color: var(--muted); text-transform: uppercase; letter-spacing: 0.04em; }
  table.scenarios td:first-child code { white-space: normal; }
}
"#;

/// The words a network engineer may not share with us, said once at the
/// top so that tables can stay terse.
const TERMS: &str = "<details class=\"terms\">\n\
<summary>Terms and abbreviations used below (RTT, p99, FIFO, AQM, ECN, CE, L4S, …)</summary>\n\
<dl>\n\
<dt>claim, setup check</dt><dd>A claim check tests a result the source talk asserts; the \
verdict counts only these. A setup check confirms that a scenario is what it says (its \
rate, delay or loss shows in the measurements) and is shown apart.</dd>\n\
<dt>source</dt><dd>The talk or paper a section checks, cited by title, speaker, event and \
year.</dd>\n\
<dt>random seed</dt><dd>The number every simulated run draws its randomness from: the same \
number gives the same report.</dd>\n\
<dt>RTT, base RTT</dt><dd>Round-trip time; the base RTT is the path's own, with every queue \
empty.</dd>\n\
<dt>p50, p90, p99</dt><dd>The median, 90th and 99th percentile of the samples.</dd>\n\
<dt>FIFO</dt><dd>A first-in, first-out queue that drops arrivals when full (tail drop).</dd>\n\
<dt>AQM: CoDel, FQ-CoDel, PIE, DualPI2</dt><dd>Active queue management: queues that drop or \
mark packets early to keep the delay short; FQ-CoDel also gives each flow its own \
queue.</dd>\n\
<dt>ECN: Not-ECT, ECT(1), CE</dt><dd>Explicit Congestion Notification. Not-ECT packets \
cannot carry a mark, ECT(1) packets ask for L4S treatment, and CE (congestion experienced) \
is the mark a queue sets instead of dropping.</dd>\n\
<dt>L4S; L and C queues</dt><dd>Low Latency, Low Loss, Scalable throughput. DualPI2 keeps \
L4S (ECT(1)) packets in its L queue, with a 1 ms marking step, and classic ones in its C \
queue.</dd>\n\
<dt>Prague, CUBIC, NewReno, BBR</dt><dd>Congestion controllers: Prague is the scalable one \
L4S needs; CUBIC and NewReno slow down on loss; BBR models the path's rate and RTT.</dd>\n\
<dt>–</dt><dd>No number for this cell; the table's caption says why.</dd>\n\
</dl>\n</details>\n";

fn badge(v: Verdict) -> String {
    format!(
        "<span class=\"badge {}\">{}</span>",
        v.name(),
        v.name().to_uppercase()
    )
}

/// Renders the whole page.
pub fn render(r: &Report) -> String {
    let mut h = String::new();
    let mode = match r.quick_duration_s {
        Some(s) => format!("quick (every scenario cut to {s} s at most)"),
        None => "full".to_string(),
    };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Brisk lab: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<div class=\"page\">\n",
        escape(&r.title)
    );
    let _ = write!(
        h,
        "<header>\n<h1>Brisk lab report</h1>\n<p class=\"subtitle\">{}</p>\n",
        escape(&r.title)
    );
    if !r.description.is_empty() {
        let _ = writeln!(h, "<p>{}</p>", escape(&r.description));
    }
    let _ = writeln!(
        h,
        "<dl class=\"meta\">\
         <div><dt>suite</dt><dd><code>{}</code></dd></div>\
         <div><dt>random seed</dt><dd>{}</dd></div>\
         <div><dt>IP</dt><dd>{}</dd></div>\
         <div><dt>mode</dt><dd>{}</dd></div>\
         <div><dt>sections</dt><dd>{} pass, {} partial, {} fail</dd></div>\
         </dl>\n{TERMS}</header>",
        escape(&r.location),
        r.seed,
        escape(r.ip),
        mode,
        r.totals.pass,
        r.totals.partial,
        r.totals.fail
    );
    h.push_str("<nav>\n<h2>Contents</h2>\n<ol>\n");
    for s in &r.sections {
        let _ = writeln!(
            h,
            "<li><a href=\"#{}\">{}</a> {} <span class=\"count\">{}</span></li>",
            escape(s.id),
            escape(s.title),
            badge(s.verdict),
            claims_line(&s.checks)
        );
    }
    h.push_str("</ol>\n</nav>\n<main>\n");
    for (i, s) in r.sections.iter().enumerate() {
        section(&mut h, i + 1, s);
    }
    let mut rerun = format!("brisk lab --seed {}", r.seed);
    if r.location != "lab/default" {
        rerun.push_str(&format!(" --suite {}", r.location));
    }
    if r.ip != "as written" {
        rerun.push_str(&format!(" --ip {}", r.ip));
    }
    if r.quick {
        rerun.push_str(" --quick");
    }
    let provenance = if r.live {
        "Numbers come from real kernel TCP run through the live lab in network namespaces, \
         so they vary a little from run to run."
    } else {
        "Every number comes from the deterministic simulator: the same suite and random \
         seed give this page byte for byte."
    };
    let _ = write!(
        h,
        "</main>\n<footer>\n<p>Generated by <code>brisk lab</code>. {} \
         Verdicts are computed from the measured numbers against the thresholds shown. \
         Regenerate with <code>{}</code>; per-run results, captures and scenario copies are \
         under <code>runs/</code>, and every number on this page is in \
         <a href=\"results.json\"><code>results.json</code></a>.</p>\n</footer>\n\
         </div>\n</body>\n</html>\n",
        provenance,
        escape(&rerun)
    );
    h
}

fn section(h: &mut String, n: usize, s: &SectionReport) {
    let _ = writeln!(
        h,
        "<section id=\"{}\">\n<h2>{n}. {} {}</h2>",
        escape(s.id),
        escape(s.title),
        badge(s.verdict)
    );
    let _ = writeln!(
        h,
        "<div class=\"verdict {}\">{}</div>",
        s.verdict.name(),
        escape(&s.verdict_line)
    );
    let _ = writeln!(
        h,
        "<h3>The claim</h3>\n<blockquote>{}</blockquote>\n\
         <p class=\"source\">Source: {}</p>\n\
         <p class=\"scope\"><strong>Scope.</strong> {}</p>",
        escape(s.claim.text),
        escape(s.claim.citation),
        escape(s.claim.scope)
    );
    let claims: Vec<&Check> = s.checks.iter().filter(|c| c.is_claim()).collect();
    let setup: Vec<&Check> = s.checks.iter().filter(|c| !c.is_claim()).collect();
    h.push_str("<h3>Claim vs measured</h3>\n");
    let _ = writeln!(
        h,
        "<p class=\"lead\">Results the source asserts, reproduced or not: the verdict \
         counts these ({}).</p>",
        claims_line(&s.checks)
    );
    checks_table(h, "the source says", &claims);
    if !setup.is_empty() {
        h.push_str("<h3>Setup checks</h3>\n");
        let _ = writeln!(
            h,
            "<p class=\"lead\">These confirm the scenarios are what they say (their \
             configured rate, delay or loss shows in the measurements); they test the \
             experiment, not the claim, and do not count toward the verdict ({}).</p>",
            setup_line(&s.checks)
        );
        checks_table(h, "configured as", &setup);
    }
    h.push_str("<h3>Scenarios</h3>\n");
    scenarios(h, &s.scenarios);
    if !s.tables.is_empty() {
        h.push_str("<h3>Measurements</h3>\n");
        for t in &s.tables {
            table(h, t);
        }
    }
    if !s.plots.is_empty() {
        h.push_str("<h3>Plots</h3>\n");
        for p in &s.plots {
            let _ = writeln!(
                h,
                "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>",
                p.svg.trim(),
                escape(&p.caption)
            );
        }
    }
    h.push_str("</section>\n");
}

/// A table of checks; `said` heads the column of what each is held to.
fn checks_table(h: &mut String, said: &str, checks: &[&Check]) {
    let columns = ["check", said, "measured", "threshold", "result"];
    let _ = write!(
        h,
        "<div class=\"scroll\"><table class=\"checks stack\">\n<thead><tr>"
    );
    for (i, c) in columns.iter().enumerate() {
        let class = if (2..4).contains(&i) {
            " class=\"num\""
        } else {
            ""
        };
        let _ = write!(h, "<th{class}>{}</th>", escape(c));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for c in checks {
        let _ = writeln!(
            h,
            "<tr><td data-label=\"{}\">{}</td><td data-label=\"{}\">{}</td>\
             <td class=\"num\" data-label=\"{}\">{}</td>\
             <td class=\"num\" data-label=\"{}\">{}</td>\
             <td class=\"{}\" data-label=\"{}\">{}</td></tr>",
            columns[0],
            escape(&c.name),
            escape(columns[1]),
            escape(&c.claimed),
            columns[2],
            escape(&c.measured_text()),
            columns[3],
            escape(&c.bound_text()),
            if c.passed { "ok" } else { "miss" },
            columns[4],
            if c.passed { "met" } else { "missed" }
        );
    }
    h.push_str("</tbody>\n</table></div>\n");
}

/// A shell command that wraps only between its words and between an
/// option and the option before it ("--seed 1" stays on one line), and
/// copies as typed.
fn command_html(command: &str) -> String {
    let mut groups: Vec<String> = Vec::new();
    for word in command.split(' ') {
        match groups.last_mut() {
            Some(last) if groups_with(last, word) => {
                last.push(' ');
                last.push_str(word);
            }
            _ => groups.push(word.to_string()),
        }
    }
    groups
        .iter()
        .map(|g| format!("<span class=\"nw\">{}</span>", escape(g)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `word` stays on the line of the group before it: a program's
/// subcommand, or an option's value.
fn groups_with(last: &str, word: &str) -> bool {
    let value = !word.starts_with("--") && last.starts_with("--") && !last.contains(' ');
    value || last == "brisk"
}

/// One aspect of the scenarios, as lines per scenario.
struct Aspect {
    name: String,
    lines: Vec<Vec<String>>,
}

/// The section's scenarios: what they share is said once, what differs
/// goes in a table with one row per file, its rerun command and its files.
fn scenarios(h: &mut String, list: &[ScenarioReport]) {
    let aspect = |name: &str, f: &dyn Fn(&ScenarioReport) -> Vec<String>| Aspect {
        name: name.to_string(),
        lines: list.iter().map(f).collect(),
    };
    let mut aspects = vec![
        aspect("Network", &|s| vec![s.described.network.clone()]),
        aspect("Queue", &|s| vec![s.described.queue.clone()]),
    ];
    // Flows one by one when every scenario has the same ones (by name), so
    // that only those that differ take a column.
    let names = |s: &ScenarioReport| -> Vec<String> {
        s.described.flows.iter().map(|f| f.name.clone()).collect()
    };
    let first = list.first().map(names).unwrap_or_default();
    if list.iter().all(|s| names(s) == first) {
        for (i, name) in first.iter().enumerate() {
            aspects.push(Aspect {
                name: format!("Flow “{name}”"),
                lines: list
                    .iter()
                    .map(|s| {
                        let f = &s.described.flows[i];
                        vec![format!("{}: {}", f.kind, f.words)]
                    })
                    .collect(),
            });
        }
    } else {
        aspects.push(aspect("Flows", &|s| {
            s.described.flows.iter().map(|f| f.line()).collect()
        }));
    }
    aspects.push(aspect("Run", &|s| {
        vec![format!(
            "{}, random seed {}",
            s.described.run, s.results.seed
        )]
    }));
    let shared = |a: &Aspect| list.len() > 1 && a.lines.windows(2).all(|w| w[0] == w[1]);
    let lines_html = |lines: &[String]| {
        if lines.len() == 1 {
            escape(&lines[0])
        } else {
            let items: String = lines
                .iter()
                .map(|l| format!("<li>{}</li>", escape(l)))
                .collect();
            format!("<ul>{items}</ul>")
        }
    };
    if aspects.iter().any(shared) {
        let what = if aspects.iter().all(shared) {
            "Every scenario"
        } else {
            "Shared by every scenario"
        };
        let _ = writeln!(h, "<p class=\"lead\">{what}:</p>\n<dl class=\"setup\">");
        for a in aspects.iter().filter(|a| shared(a)) {
            let _ = writeln!(
                h,
                "<dt>{}</dt><dd>{}</dd>",
                escape(&a.name),
                lines_html(&a.lines[0])
            );
        }
        h.push_str("</dl>\n");
    }
    let varying: Vec<&Aspect> = aspects.iter().filter(|a| !shared(a)).collect();
    h.push_str(
        "<div class=\"scroll\"><table class=\"scenarios stack\">\n<thead><tr><th>scenario</th>",
    );
    for a in &varying {
        let _ = write!(h, "<th>{}</th>", escape(&a.name.to_lowercase()));
    }
    h.push_str("<th>rerun it alone</th></tr></thead>\n<tbody>\n");
    for (i, sc) in list.iter().enumerate() {
        let dir = escape(&sc.output_dir);
        let _ = write!(
            h,
            "<tr><td data-label=\"scenario\"><strong>{}</strong><br><a href=\"{dir}/{SCENARIO_FILE}\"><code>{}</code></a>",
            escape(&sc.stem),
            escape(&sc.file)
        );
        if !sc.description.is_empty() {
            let _ = write!(h, "<div class=\"note\">{}</div>", escape(&sc.description));
        }
        h.push_str("</td>");
        for a in &varying {
            let _ = write!(
                h,
                "<td data-label=\"{}\">{}</td>",
                escape(&a.name.to_lowercase()),
                lines_html(&a.lines[i])
            );
        }
        // The run's own files, the scenario's copy (linked above) aside.
        let links: Vec<String> = sc
            .files
            .iter()
            .filter(|f| **f != SCENARIO_FILE)
            .map(|f| format!("<a href=\"{dir}/{0}\">{0}</a>", escape(f)))
            .collect();
        let _ = writeln!(
            h,
            "<td data-label=\"rerun it alone\"><code>{}</code><div class=\"note\">{}</div></td></tr>",
            command_html(&sc.command),
            links.join(" · ")
        );
    }
    h.push_str("</tbody>\n</table></div>\n");
}

/// A table of measured numbers. On a narrow screen each row stacks into
/// a card whose cells carry their column's name (`data-label`). A number
/// that is missing prints as a dash, explained under the table.
fn table(h: &mut String, t: &Table) {
    let numeric: Vec<bool> = (0..t.columns.len())
        .map(|i| {
            t.rows
                .iter()
                .any(|r| matches!(r.get(i), Some(Cell::Number { .. })))
        })
        .collect();
    let _ = write!(
        h,
        "<div class=\"scroll\"><table class=\"stack\">\n<caption>{}</caption>\n<thead><tr>",
        escape(&t.caption)
    );
    for (c, num) in t.columns.iter().zip(&numeric) {
        let class = if *num { " class=\"num\"" } else { "" };
        let _ = write!(h, "<th{class}>{}</th>", escape(c));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        h.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if numeric.get(i).copied().unwrap_or(false) {
                " class=\"num\""
            } else {
                ""
            };
            let label = t.columns.get(i).map(String::as_str).unwrap_or("");
            let _ = write!(
                h,
                "<td{class} data-label=\"{}\">{}</td>",
                escape(label),
                escape(&cell.display())
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table></div>\n");
    let missing = t.rows.iter().flatten().any(|c| match c {
        Cell::Number { value, .. } => !value.is_finite(),
        Cell::Text(_) => false,
    });
    if missing {
        let _ = writeln!(
            h,
            "<p class=\"note\">{MISSING}: no number for this cell (the caption says why).</p>"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape("<b>\"a\" & 'b'</b>"),
            "&lt;b&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/b&gt;"
        );
        assert_eq!(escape("≤ 20 ms"), "≤ 20 ms");
    }

    #[test]
    fn commands_wrap_between_words_only() {
        assert_eq!(
            command_html("brisk sim lab/default/a b.toml --seed 1 --ip v6"),
            "<span class=\"nw\">brisk sim</span> <span class=\"nw\">lab/default/a</span> \
             <span class=\"nw\">b.toml</span> <span class=\"nw\">--seed 1</span> \
             <span class=\"nw\">--ip v6</span>"
        );
    }

    #[test]
    fn tables_right_align_number_columns() {
        let mut h = String::new();
        table(
            &mut h,
            &Table {
                caption: "c".into(),
                columns: vec!["queue".into(), "RTT".into()],
                rows: vec![vec![Cell::text("FIFO <200>"), Cell::num(256.26, "ms", 1)]],
            },
        );
        assert!(
            h.contains("<th>queue</th><th class=\"num\">RTT</th>"),
            "{h}"
        );
        assert!(
            h.contains(
                "<td data-label=\"queue\">FIFO &lt;200&gt;</td>\
                 <td class=\"num\" data-label=\"RTT\">256.3 ms</td>"
            ),
            "{h}"
        );
    }

    /// A missing number is a dash explained under its table, never
    /// "n/a%"; each cell carries its column's name for narrow screens.
    #[test]
    fn a_missing_number_is_an_explained_dash() {
        let mut h = String::new();
        table(
            &mut h,
            &Table {
                caption: "c".into(),
                columns: vec!["loss".into(), "OK.ru".into()],
                rows: vec![
                    vec![Cell::num(1.0, "%", 0), Cell::num(f64::NAN, "%", 0)],
                    vec![Cell::num(5.0, "%", 0), Cell::num(74.0, "%", 0)],
                ],
            },
        );
        assert!(!h.contains("n/a") && !h.contains("NaN"), "{h}");
        assert!(
            h.contains("<td class=\"num\" data-label=\"OK.ru\">–</td>"),
            "{h}"
        );
        assert!(
            h.contains("<td class=\"num\" data-label=\"OK.ru\">74%</td>"),
            "{h}"
        );
        assert!(h.contains("–: no number for this cell"), "{h}");
        // A table with every number present needs no such note.
        let mut full = String::new();
        table(
            &mut full,
            &Table {
                caption: "c".into(),
                columns: vec!["loss".into()],
                rows: vec![vec![Cell::num(1.0, "%", 0)]],
            },
        );
        assert!(!full.contains("no number"), "{full}");
    }
}
