//! The `[optimizer]` table of a live scenario file: it puts the
//! transparent TCP optimizer (`brisk-optimizer`, docs/OPTIMIZER.md) into
//! the lab's router, between the server's side and the mobile link.
//!
//! ```toml
//! [optimizer]
//! enabled = true               # the default once the table is there
//! connection_buffer = "4MiB"   # undelivered bytes one connection may hold
//! total_buffer = "256MiB"      # all connections together
//! budget_gain = 1.25           # in-flight budget = gain x rate x min RTT
//! max_pacing_rate = "160Mbit"  # a subscriber's fastest pace
//! ```
//!
//! Every field may be left out (the optimizer's defaults). A mistake is
//! reported with its field and line, never a panic.

use brisk_netmodel::network::line_of;
use brisk_netmodel::units::{parse_bytes, parse_rate_bps};
use brisk_optimizer::Config;
use serde::Deserialize;
use toml::Spanned;

/// The file as far as this table goes; every other table is someone
/// else's to read.
#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    optimizer: Option<Table>,
}

/// `[optimizer]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    enabled: Option<bool>,
    connection_buffer: Option<Spanned<String>>,
    total_buffer: Option<Spanned<String>>,
    budget_gain: Option<Spanned<f64>>,
    max_pacing_rate: Option<Spanned<String>>,
}

/// The optimizer a scenario's text asks for: `None` without an
/// `[optimizer]` table or with `enabled = false`. The error names the
/// field and its line (the caller adds the file's name).
pub fn parse(text: &str) -> Result<Option<Config>, String> {
    let file: File =
        toml::from_str(text).map_err(|e| format!("[optimizer]: {}", e.to_string().trim_end()))?;
    let Some(t) = file.optimizer else {
        return Ok(None);
    };
    if t.enabled == Some(false) {
        return Ok(None);
    }
    let wrong = |at: usize, field: &str, why: String| {
        format!("line {}: [optimizer] {field}: {why}", line_of(text, at))
    };
    let mut config = Config::default();
    let size = |s: &Spanned<String>, field: &str| -> Result<usize, String> {
        let bytes = parse_bytes(s.get_ref()).map_err(|e| wrong(s.span().start, field, e))?;
        match usize::try_from(bytes) {
            Ok(b) if b >= 64 * 1024 => Ok(b),
            _ => Err(wrong(
                s.span().start,
                field,
                format!("{:?} is too small: at least \"64KiB\"", s.get_ref()),
            )),
        }
    };
    if let Some(s) = &t.connection_buffer {
        config.max_connection_buffer_bytes = size(s, "connection_buffer")?;
    }
    if let Some(s) = &t.total_buffer {
        config.max_total_buffer_bytes = size(s, "total_buffer")?;
    }
    if config.max_total_buffer_bytes < config.max_connection_buffer_bytes {
        let at = t
            .total_buffer
            .as_ref()
            .or(t.connection_buffer.as_ref())
            .map_or(0, |s| s.span().start);
        return Err(wrong(
            at,
            "total_buffer",
            format!(
                "{} bytes for all connections is less than the {} one connection may hold",
                config.max_total_buffer_bytes, config.max_connection_buffer_bytes
            ),
        ));
    }
    if let Some(g) = &t.budget_gain {
        let gain = *g.get_ref();
        if !(1.0..=10.0).contains(&gain) {
            return Err(wrong(
                g.span().start,
                "budget_gain",
                format!(
                    "{gain} is outside 1 to 10 (below 1 the radio runs dry; \
                     far above it the subscriber's queue fills)"
                ),
            ));
        }
        config.budget_gain = gain;
    }
    if let Some(r) = &t.max_pacing_rate {
        let bps =
            parse_rate_bps(r.get_ref()).map_err(|e| wrong(r.span().start, "max_pacing_rate", e))?;
        if bps < config.min_pacing_rate_bps {
            return Err(wrong(
                r.span().start,
                "max_pacing_rate",
                format!(
                    "{:?} is below the pacing floor of {} Mbit/s",
                    r.get_ref(),
                    config.min_pacing_rate_bps / 1_000_000
                ),
            ));
        }
        config.max_pacing_rate_bps = bps;
    }
    Ok(Some(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_table_or_disabled_means_no_optimizer() {
        assert_eq!(
            parse("duration = \"1s\"\n[link.down]\nrate = \"10Mbit\"\n"),
            Ok(None)
        );
        assert_eq!(parse("[optimizer]\nenabled = false\n"), Ok(None));
    }

    #[test]
    fn an_empty_table_turns_on_the_defaults_and_fields_set_them() {
        assert_eq!(parse("[optimizer]\n"), Ok(Some(Config::default())));
        let c = parse(
            "duration = \"1s\"\n[optimizer]\nconnection_buffer = \"1MiB\"\n\
             total_buffer = \"64MiB\"\nbudget_gain = 1.25\nmax_pacing_rate = \"1Gbit\"\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.max_connection_buffer_bytes, 1 << 20);
        assert_eq!(c.max_total_buffer_bytes, 64 << 20);
        assert_eq!(c.budget_gain, 1.25);
        assert_eq!(c.max_pacing_rate_bps, 1_000_000_000);
    }

    #[test]
    fn mistakes_name_the_field_and_the_line() {
        let cases = [
            (
                "[optimizer]\nbuffer = \"1MiB\"\n",
                "unknown field `buffer`",
                "line 2",
            ),
            (
                "\n[optimizer]\nconnection_buffer = \"4XB\"\n",
                "line 3: [optimizer] connection_buffer:",
                "64KiB",
            ),
            (
                "[optimizer]\nconnection_buffer = \"1kB\"\n",
                "line 2: [optimizer] connection_buffer:",
                "too small",
            ),
            (
                "[optimizer]\nconnection_buffer = \"8MiB\"\ntotal_buffer = \"4MiB\"\n",
                "line 3: [optimizer] total_buffer:",
                "less than",
            ),
            (
                "[optimizer]\n\nbudget_gain = 0.5\n",
                "line 3: [optimizer] budget_gain:",
                "outside 1 to 10",
            ),
            (
                "[optimizer]\nmax_pacing_rate = \"10kbit\"\n",
                "line 2: [optimizer] max_pacing_rate:",
                "pacing floor",
            ),
            (
                "[optimizer]\nmax_pacing_rate = \"fast\"\n",
                "line 2: [optimizer] max_pacing_rate:",
                "fast",
            ),
            (
                "[optimizer]\nbudget_gain = \"high\"\n",
                "line 2",
                "budget_gain",
            ),
        ];
        for (text, first, second) in cases {
            let e = parse(text).expect_err(text);
            assert!(e.contains(first) && e.contains(second), "{text:?}: {e}");
        }
    }
}
