//! The report as a stranger reads it: sources cited by title, one word for
//! the random seed, no "n/a%" or "NaN", setup checks apart from claims,
//! and tables that fit a laptop and a phone (checked in headless
//! Chromium).

use brisk_lab::runner::RunConfig;
use brisk_lab::suite::{DEFAULT_SUITE, Suite};
use brisk_lab::verdict::Kind;
use brisk_lab::{Lab, Source, Verdict};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// One short run of the default suite, shared by the tests here (long
/// enough for every section to measure everything, as in `suite_runs`).
fn lab() -> &'static Lab {
    static LAB: OnceLock<Lab> = OnceLock::new();
    LAB.get_or_init(|| {
        let mut suite = Suite::embedded(DEFAULT_SUITE).unwrap();
        suite.quick_duration = Duration::from_secs(8);
        let config = RunConfig {
            quick: true,
            jobs: 2,
            capture: false,
            ..RunConfig::default()
        };
        brisk_lab::run(&suite, &config, &|_| {}).unwrap()
    })
}

/// The page's text without its tags, styles and inline plots.
fn visible_text(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    for (open, close) in [("<style>", "</style>")] {
        if let (Some(a), Some(b)) = (rest.find(open), rest.find(close)) {
            out.push_str(&rest[..a]);
            rest = &rest[b + close.len()..];
        }
    }
    out.push_str(rest);
    let mut text = String::new();
    let mut in_tag = false;
    for c in out.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

#[test]
fn sources_are_cited_by_title_and_seed_means_the_random_seed() {
    let lab = lab();
    let html = &lab.html;
    for s in Source::ALL {
        let file_like = format!("00{}_", Source::ALL.iter().position(|o| *o == s).unwrap());
        assert!(
            !html.contains(&file_like),
            "report.html names a file: {file_like}"
        );
    }
    assert!(!html.contains(".txt"), "report.html names a text file");
    for s in &lab.report.sections {
        let cite = brisk_lab::html::escape(s.claim.citation);
        assert!(
            html.contains(&format!("Source: {cite}")),
            "{}: no citation",
            s.id
        );
    }
    // "seed" is the random seed only: every use of the word in the page's
    // text is "random seed" or the `--seed` option.
    let text = visible_text(html);
    let lower = text.to_lowercase();
    for (at, _) in lower.match_indices("seed") {
        let before = &lower[at.saturating_sub(7)..at];
        assert!(
            before.ends_with("random ") || before.ends_with("--"),
            "\"seed\" not as the random seed: …{}…",
            &text[at.saturating_sub(60)..(at + 40).min(text.len())]
        );
    }
    let json: serde_json::Value = serde_json::from_str(&lab.json).unwrap();
    for s in json["sections"].as_array().unwrap() {
        let claim = &s["claim"];
        assert!(claim.get("seed").is_none() && claim.get("seed_file").is_none());
        assert!(claim["citation"].as_str().unwrap().starts_with('“'));
    }
}

#[test]
fn no_missing_number_prints_as_n_a_nan_or_inf() {
    let lab = lab();
    let text = visible_text(&lab.html);
    for bad in ["n/a", "NaN", "inf%", " inf ", "-inf"] {
        assert!(!text.contains(bad), "report.html shows {bad:?}");
    }
    // The TCP table has cells OK.ru gives no number for: each is a dash,
    // explained under the table.
    let tcp = lab
        .report
        .sections
        .iter()
        .find(|s| s.id == "tcp-inefficiency")
        .unwrap();
    assert!(
        tcp.tables
            .iter()
            .any(|t| t.rows.iter().flatten().any(|c| c.display() == "–"))
    );
    assert!(lab.html.contains("–: no number for this cell"));
}

#[test]
fn setup_checks_are_apart_and_only_claims_make_the_verdict() {
    let lab = lab();
    let json: serde_json::Value = serde_json::from_str(&lab.json).unwrap();
    let mut setup = 0;
    for (s, j) in lab
        .report
        .sections
        .iter()
        .zip(json["sections"].as_array().unwrap())
    {
        let claims: Vec<_> = s.checks.iter().filter(|c| c.kind == Kind::Claim).collect();
        assert!(!claims.is_empty(), "{}: no claim checks", s.id);
        let met = claims.iter().filter(|c| c.passed).count();
        let want = if met == 0 {
            Verdict::Fail
        } else if met == claims.len() {
            Verdict::Pass
        } else {
            Verdict::Partial
        };
        assert_eq!(s.verdict, want, "{}", s.id);
        for (c, jc) in s.checks.iter().zip(j["checks"].as_array().unwrap()) {
            let kind = if c.kind == Kind::Claim {
                "claim"
            } else {
                "setup"
            };
            assert_eq!(jc["kind"], kind, "{}: {}", s.id, c.name);
        }
        setup += s.checks.len() - claims.len();
        if s.checks.len() > claims.len() {
            assert!(
                section_html(&lab.html, s.id).contains("<h3>Setup checks</h3>"),
                "{}: setup checks not shown apart",
                s.id
            );
        }
    }
    // The mobile profiles' base RTT and loss confirm the configuration.
    assert!(setup >= 8, "only {setup} setup checks in the default suite");
    // Counts name what they count: claims, or setup checks apart.
    assert!(
        !lab.html
            .replace("setup checks met", "")
            .contains("checks met"),
        "a count mixes setup checks and claims"
    );
}

/// The HTML of one section, up to the next.
fn section_html<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!("<section id=\"{id}\"")).unwrap();
    let end = html[start..].find("</section>").unwrap();
    &html[start..start + end]
}

/// Measures, in the loaded page, every element that scrolls or clips
/// sideways (a table's scroll box, a code block) and the page itself, and
/// writes the elements whose content is wider than their box into
/// `#layout-verdict`.
const MEASURE: &str = r#"<script>
(() => {
  const bad = [];
  const page = document.documentElement;
  if (page.scrollWidth > window.innerWidth + 1) {
    bad.push(`page ${page.scrollWidth} px wide in a ${window.innerWidth} px window`);
  }
  const clips = (el) => getComputedStyle(el).overflowX !== "visible";
  for (const el of document.body.querySelectorAll("*")) {
    // Past the window's right edge, reported once: at the outermost
    // element that sticks out, outside any box that scrolls or clips.
    const r = el.getBoundingClientRect();
    const parent = el.parentElement;
    let inside = false;
    for (let a = parent; a && a !== document.body; a = a.parentElement) {
      inside = inside || clips(a);
    }
    if (r.width > 0 && r.right > page.clientWidth + 1 && !inside &&
        parent.getBoundingClientRect().right <= page.clientWidth + 1) {
      bad.push(`${el.tagName.toLowerCase()}.${el.className} ends at ${Math.round(r.right)} px`);
    }
    const ox = getComputedStyle(el).overflowX;
    if (ox !== "visible" && el.scrollWidth > el.clientWidth + 1) {
      const what = el.querySelector("caption, th, td");
      bad.push(`${el.tagName.toLowerCase()}.${el.className} (${what ? what.textContent.slice(0, 40) : ""}) ` +
               `holds ${el.scrollWidth} px in ${el.clientWidth} px`);
    }
  }
  const out = document.createElement("pre");
  out.id = "layout-verdict";
  out.textContent = bad.length ? "CUT OFF\n" + bad.slice(0, 20).join("\n") : "FITS";
  document.body.appendChild(out);
})();
</script>"#;

/// Chromium on this machine, or why not. Under CI=true its absence fails.
fn chromium() -> Option<&'static str> {
    let found = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some("chromium");
    }
    let why = "chromium not found (scripts/setup installs it)";
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// Chromium in headless mode, stopped after two minutes should it hang.
fn headless(browser: &str, profile: &Path, width: u32) -> Command {
    let mut c = Command::new("timeout");
    c.args([
        "120",
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--window-size={width},2000"));
    c
}

#[test]
fn tables_fit_a_laptop_and_a_phone_in_headless_chromium() {
    let Some(browser) = chromium() else { return };
    let lab = lab();
    // Kept after the test (replaced by the next run) for the screenshots.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-layout");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("report.html"), &lab.html).unwrap();
    let measured = lab.html.replace("</body>", &format!("{MEASURE}\n</body>"));
    std::fs::write(dir.join("measure.html"), measured).unwrap();
    let mut failures = Vec::new();
    for width in [1400, 400] {
        let profile = dir.join(format!("profile-{width}"));
        let out = headless(browser, &profile, width)
            .arg("--dump-dom")
            .arg(dir.join("measure.html"))
            .output()
            .unwrap();
        let dom = String::from_utf8_lossy(&out.stdout);
        let verdict = dom
            .split("<pre id=\"layout-verdict\">")
            .nth(1)
            .and_then(|v| v.split("</pre>").next())
            .unwrap_or_else(|| {
                panic!(
                    "chromium wrote no verdict at {width} px: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        if verdict != "FITS" {
            failures.push(format!("at {width} px: {verdict}"));
        }
        // A screenshot to look at, kept beside the page.
        let shot = dir.join(format!("report-{width}.png"));
        let status = headless(browser, &profile, width)
            .arg(format!("--screenshot={}", shot.display()))
            .arg(dir.join("report.html"))
            .output()
            .unwrap();
        assert!(
            shot.is_file(),
            "no screenshot at {width} px: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        eprintln!("screenshot: {}", shot.display());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn abbreviations_the_tables_use_are_explained_at_the_top() {
    let html = &lab().html;
    let terms = html
        .split("<details class=\"terms\">")
        .nth(1)
        .and_then(|t| t.split("</details>").next())
        .expect("report.html has no list of terms");
    let rest = html.replace(terms, "");
    let mut used = 0;
    for abbr in [
        "p50", "p99", "RTT", "FIFO", "AQM", "ECT(1)", "Not-ECT", "CE", "L4S", "DualPI2",
    ] {
        if rest.contains(abbr) {
            used += 1;
            assert!(terms.contains(abbr), "{abbr} is used but not explained");
        }
    }
    assert!(used >= 8, "only {used} of the abbreviations appear");
    // Internal file names and issue numbers mean nothing to a reader.
    let text = visible_text(html);
    for bad in ["docs/", "crates/", ".rs ", "issue #", "pkts"] {
        assert!(!text.contains(bad), "report.html shows {bad:?}");
    }
}
