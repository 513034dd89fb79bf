//! Human units in scenario files: "10Mbit", "20ms", "150kB", "1%".
//!
//! Each parser returns a message naming what it expected, and each has a
//! serde adapter so configuration structs can say
//! `#[serde(with = "units::duration")]` and a bad value is reported by the
//! TOML reader with its field name and line.
//!
//! The table (docs/SCENARIOS.md, "Units") keeps bits and bytes apart and
//! refuses what tools read differently:
//! - rates in bits: "bit", "kbit", "Mbit", "Gbit" (any case, "/s" optional);
//!   in bytes per second: "B/s", "kB/s", "MB/s", "GB/s", "KiB/s", "MiB/s",
//!   "GiB/s". Refused: "Mbps" and every "bps" spelling (tc reads them as
//!   bytes per second, most tools as bits), a size such as "1MB" for a rate,
//!   "Mb/s" (one letter's case away from "MB/s"), and "KB/s".
//! - sizes: "B" or a bare number, SI "kB", "MB", "GB" (1000) and IEC "KiB",
//!   "MiB", "GiB" (1024). Refused: "KB" (1000 or 1024 depending on the
//!   tool) and tc's lowercase "kb", "mb", "gb" (1024 in tc).
//! - durations: "ns", "us", "µs", "ms", "s", "min"; a bare number is refused.
//! - probabilities: a percentage "1%" or a fraction below 1 ("0.01"); a bare
//!   1 or more is refused, as it may mean 1% or 100%.
//!
//! A number out of range is reported as "too large" or "too small", never
//! as a spelling mistake.

use std::time::Duration;

/// The largest duration: the simulator's clock counts nanoseconds in 64
/// bits (about 584 years).
pub const MAX_DURATION: Duration = Duration::from_nanos(u64::MAX);
/// The largest rate, 10 Tbit/s: far above any link, far below overflow.
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;
/// The largest size, 1 PB: far above any transfer, far below overflow.
pub const MAX_BYTES: u64 = 1_000_000_000_000_000;

/// Splits "12.5ms" into (12.5, "ms"), tolerating spaces. A number too large
/// for a float is an error of its own, so it is not called a misspelling.
fn split(s: &str) -> Result<(f64, &str), Split> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(s.len());
    let end = if s[..end].ends_with('e') {
        end - 1
    } else {
        end
    };
    let value: f64 = s[..end].trim().parse().map_err(|_| Split::NotANumber)?;
    if value.is_finite() {
        Ok((value, s[end..].trim()))
    } else {
        Err(Split::TooLarge)
    }
}

enum Split {
    NotANumber,
    TooLarge,
}

/// The message for a value beyond `max`.
fn too_large(s: &str, max: &str) -> String {
    format!("{s:?} is too large (at most {max})")
}

/// "20ms", "1.5s", "250us", "100ns", "2min".
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let max = "584 years, \"18446744073s\"";
    let err = || format!("expected a duration like \"20ms\" or \"1.5s\", got {s:?}");
    let (v, unit) = split(s).map_err(|e| match e {
        Split::TooLarge => too_large(s, max),
        Split::NotANumber => err(),
    })?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "min" => 60.0,
        "" => {
            return Err(format!(
                "{s:?} has no unit: write a duration like \"{v}ms\" or \"{v}s\""
            ));
        }
        _ => return Err(err()),
    };
    if v < 0.0 {
        return Err(format!(
            "{s:?} is too small: a duration must not be negative"
        ));
    }
    Duration::try_from_secs_f64(v * scale)
        .ok()
        .filter(|d| *d <= MAX_DURATION)
        .ok_or_else(|| too_large(s, max))
}

/// A rate in bits per second: "10Mbit", "2.5 Mbit/s", "1Gbit", "50kB/s".
pub fn parse_rate_bps(s: &str) -> Result<u64, String> {
    let err = || format!("expected a rate like \"10Mbit\", \"500kbit\" or \"50kB/s\", got {s:?}");
    let (v, unit) = split(s).map_err(|e| match e {
        Split::TooLarge => too_large(s, "\"10000Gbit\""),
        Split::NotANumber => err(),
    })?;
    let bits = match unit {
        "B/s" => 8.0,
        "kB/s" => 8e3,
        "MB/s" => 8e6,
        "GB/s" => 8e9,
        "KiB/s" => 8.0 * 1024.0,
        "MiB/s" => 8.0 * 1024.0 * 1024.0,
        "GiB/s" => 8.0 * 1024.0 * 1024.0 * 1024.0,
        _ => match unit.to_ascii_lowercase().trim_end_matches("/s") {
            "bit" => 1.0,
            "kbit" => 1e3,
            "mbit" => 1e6,
            "gbit" => 1e9,
            _ => return Err(ambiguous_rate(s, v, unit).unwrap_or_else(err)),
        },
    };
    if v < 0.0 {
        return Err(format!("{s:?} is too small: a rate must not be negative"));
    }
    let bps = (v * bits).round();
    if bps < 1.0 {
        return Err(format!("{s:?} is too small (at least \"1bit\")"));
    }
    if bps > MAX_RATE_BPS as f64 {
        return Err(too_large(s, "\"10000Gbit\""));
    }
    Ok(bps as u64)
}

/// Why a rate unit tools read differently is refused, with the spellings
/// that say each meaning.
fn ambiguous_rate(s: &str, v: f64, unit: &str) -> Option<String> {
    let lower = unit.to_ascii_lowercase();
    let prefix = lower.trim_end_matches("/s").trim_end_matches("ps");
    let prefix = prefix.strip_suffix('b')?;
    let (bits, bytes) = match prefix {
        "" => ("bit", "B/s"),
        "k" => ("kbit", "kB/s"),
        "m" => ("Mbit", "MB/s"),
        "g" => ("Gbit", "GB/s"),
        _ => return None,
    };
    let both =
        format!("write \"{v}{bits}\" for bits per second or \"{v}{bytes}\" for bytes per second");
    Some(if lower.ends_with("bps") {
        format!(
            "{s:?} is ambiguous: tc reads \"{lower}\" as bytes per second, most tools as bits; {both}"
        )
    } else if unit == "KB/s" {
        format!(
            "{s:?} is ambiguous: \"KB\" is 1000 or 1024 bytes depending on the tool; write \"{v}kB/s\" (1000) or \"{v}KiB/s\" (1024)"
        )
    } else if lower.ends_with("/s") {
        format!(
            "{s:?} is ambiguous: \"{unit}\" is one letter's case away from bits or bytes; {both}"
        )
    } else {
        format!("{s:?} is a size, not a rate; {both}")
    })
}

/// A size in bytes: "1500B", "150kB", "64KiB", "1MB", "2MiB".
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let err = || format!("expected a size like \"1500B\", \"150kB\" or \"64KiB\", got {s:?}");
    let (v, unit) = split(s).map_err(|e| match e {
        Split::TooLarge => too_large(s, "\"1000000GB\""),
        Split::NotANumber => err(),
    })?;
    let scale = match unit {
        "B" | "" => 1.0,
        "kB" => 1e3,
        "KiB" => 1024.0,
        "MB" => 1e6,
        "MiB" => 1024.0 * 1024.0,
        "GB" => 1e9,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "KB" | "kb" | "Kb" | "k" | "K" => return Err(ambiguous_size(s, v, ["k", "Ki"], "")),
        "mb" | "Mb" | "m" | "M" => return Err(ambiguous_size(s, v, ["M", "Mi"], "^2")),
        "gb" | "Gb" | "g" | "G" => return Err(ambiguous_size(s, v, ["G", "Gi"], "^3")),
        "b" => {
            return Err(format!(
                "{s:?}: \"b\" reads as bits; a size is in bytes, \"{v}B\""
            ));
        }
        _ => return Err(err()),
    };
    if v < 0.0 {
        return Err(format!("{s:?} is too small: a size must not be negative"));
    }
    let bytes = (v * scale).round();
    if bytes > MAX_BYTES as f64 {
        return Err(too_large(s, "\"1000000GB\""));
    }
    Ok(bytes as u64)
}

/// Why a size prefix tools read differently is refused.
fn ambiguous_size(s: &str, v: f64, [si, iec]: [&str; 2], power: &str) -> String {
    format!(
        "{s:?} is ambiguous: some tools count 1000{power} bytes, others 1024{power}; write \"{v}{si}B\" ({si}B = 1000{power} bytes) or \"{v}{iec}B\" ({iec}B = 1024{power} bytes)"
    )
}

/// A probability: "1%", "0.5 %" or a bare fraction below 1, "0.01".
pub fn parse_probability(s: &str) -> Result<f64, String> {
    let err = || format!("expected a probability like \"1%\" or 0.01, got {s:?}");
    let t = s.trim();
    match t.strip_suffix('%') {
        Some(pct) => {
            let p = pct.trim().parse::<f64>().map_err(|_| err())?;
            check_percent(s, p).map(|p| p / 100.0)
        }
        None => {
            let p = t.parse::<f64>().map_err(|_| err())?;
            if p.is_infinite() {
                return Err(format!("{s:?} is too large (at most 100%)"));
            }
            if p >= 1.0 {
                return Err(format!(
                    "{s:?} is ambiguous: write \"{p}%\", or \"100%\" if you mean every packet (a bare number must be a fraction below 1)"
                ));
            }
            check_percent(s, p * 100.0).map(|_| p)
        }
    }
}

/// A percentage within 0..=100, or a message saying which side it is off.
fn check_percent(s: &str, pct: f64) -> Result<f64, String> {
    if pct.is_nan() {
        Err(format!(
            "expected a probability like \"1%\" or 0.01, got {s:?}"
        ))
    } else if pct < 0.0 {
        Err(format!("{s:?} is too small (at least 0%)"))
    } else if pct > 100.0 {
        Err(format!("{s:?} is too large (at most 100%)"))
    } else {
        Ok(pct)
    }
}

macro_rules! serde_adapter {
    ($module:ident, $ty:ty, $parse:expr, $expect:literal) => {
        /// Serde adapter; see the module docs for the accepted spellings.
        pub mod $module {
            use serde::de::{self, Deserializer, Visitor};
            use std::fmt;

            /// Parses a string or a bare TOML number with the module's parser; a bare number is read as its decimal text.
            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expect)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$ty, E> {
                        ($parse)(s).map_err(E::custom)
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$ty, E> {
                        ($parse)(&v.to_string()).map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$ty, E> {
                        ($parse)(&v.to_string()).map_err(E::custom)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$ty, E> {
                        ($parse)(&v.to_string()).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

serde_adapter!(
    duration,
    std::time::Duration,
    super::parse_duration,
    "a duration such as \"20ms\""
);
serde_adapter!(
    rate_bps,
    u64,
    super::parse_rate_bps,
    "a rate such as \"10Mbit\""
);
serde_adapter!(bytes, u64, super::parse_bytes, "a size such as \"150KB\"");
serde_adapter!(
    probability,
    f64,
    super::parse_probability,
    "a probability such as \"1%\" or 0.01"
);

/// Serde adapter for `Option<Duration>` fields that may be omitted.
pub mod opt_duration {
    use serde::Deserializer;
    /// Same as [`super::duration`], wrapped in `Some`; an omitted field needs `#[serde(default)]` to become `None`.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<std::time::Duration>, D::Error> {
        super::duration::deserialize(d).map(Some)
    }
}

/// Serde adapter for `Option<u64>` byte sizes that may be omitted.
pub mod opt_bytes {
    use serde::Deserializer;
    /// Same as [`super::bytes`], wrapped in `Some`; an omitted field needs `#[serde(default)]` to become `None`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        super::bytes::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20ms"), Ok(Duration::from_millis(20)));
        assert_eq!(parse_duration(" 1.5 s "), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3µs"), Ok(Duration::from_micros(3)));
        let e = parse_duration("20").unwrap_err();
        assert!(e.contains("no unit") && e.contains("\"20ms\""), "{e}");
        assert!(parse_duration("ms").is_err());
        assert!(
            parse_duration("20 parsecs")
                .unwrap_err()
                .contains("\"20ms\"")
        );
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate_bps("10Mbit"), Ok(10_000_000));
        assert_eq!(parse_rate_bps("2.5 Mbit/s"), Ok(2_500_000));
        assert_eq!(parse_rate_bps("100kbit"), Ok(100_000));
        assert_eq!(parse_rate_bps("100 mbit"), Ok(100_000_000));
        assert_eq!(parse_rate_bps("1Gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate_bps("50kB/s"), Ok(400_000));
        assert_eq!(parse_rate_bps("1MB/s"), Ok(8_000_000));
        assert_eq!(parse_rate_bps("1MiB/s"), Ok(8 * 1_048_576));
        assert!(parse_rate_bps("fast").is_err());
        assert!(parse_rate_bps("0Mbit").is_err());
        // A rate that rounds to nothing would stall the link for good.
        assert!(parse_rate_bps("0.4bit").unwrap_err().contains("too small"));
        assert_eq!(parse_rate_bps("0.6bit"), Ok(1));
    }

    /// tc reads "mbps" (in any case) as megabytes per second, most tools
    /// as megabits: every such spelling is refused with both meanings.
    #[test]
    fn rates_tools_disagree_on_are_refused() {
        for s in ["1MBps", "1Mbps", "1mbps", "1kbps", "1Gbps", "1bps"] {
            let e = parse_rate_bps(s).unwrap_err();
            assert!(e.contains("ambiguous") && e.contains("tc"), "{s}: {e}");
            assert!(e.contains("bit\"") && e.contains("B/s\""), "{s}: {e}");
        }
        let e = parse_rate_bps("1MB").unwrap_err();
        assert!(
            e.contains("size, not a rate") && e.contains("\"1MB/s\""),
            "{e}"
        );
        assert!(e.contains("\"1Mbit\""), "{e}");
        let e = parse_rate_bps("1Mb/s").unwrap_err();
        assert!(e.contains("ambiguous") && e.contains("\"1Mbit\""), "{e}");
        let e = parse_rate_bps("50KB/s").unwrap_err();
        assert!(e.contains("\"50kB/s\"") && e.contains("\"50KiB/s\""), "{e}");
    }

    /// Values out of range say so, and never that they are misspelt.
    #[test]
    fn out_of_range_values_say_too_large_or_too_small() {
        for e in [
            parse_duration("1e400s").unwrap_err(),
            parse_duration("1e300s").unwrap_err(),
            parse_duration("1e18min").unwrap_err(),
            parse_duration("999999999999999999999ms").unwrap_err(),
            parse_rate_bps("1e400Mbit").unwrap_err(),
            parse_rate_bps("1e9Gbit").unwrap_err(),
            parse_bytes("1e400B").unwrap_err(),
            parse_bytes("1e9GB").unwrap_err(),
            parse_probability("150%").unwrap_err(),
            parse_probability("1e400%").unwrap_err(),
        ] {
            assert!(e.contains("too large (at most "), "{e}");
        }
        for e in [
            parse_duration("-1ms").unwrap_err(),
            parse_rate_bps("-1Mbit").unwrap_err(),
            parse_bytes("-1B").unwrap_err(),
            parse_probability("-1%").unwrap_err(),
            parse_probability("-0.1").unwrap_err(),
        ] {
            assert!(e.contains("too small"), "{e}");
        }
        assert_eq!(
            parse_duration("18446744073s"),
            Ok(Duration::from_secs(18_446_744_073))
        );
        assert_eq!(parse_rate_bps("10000Gbit"), Ok(MAX_RATE_BPS));
    }

    proptest::proptest! {
        /// Any text, and any number with any unit the parsers know or
        /// not, gives a value or a message: never a panic.
        #[test]
        fn no_text_panics(
            text in "\\PC{0,16}",
            number in proptest::prelude::any::<f64>(),
            exponent in -400i32..400,
            unit in proptest::sample::select(vec![
                "", "ns", "us", "ms", "s", "min", "h", "bit", "kbit", "Mbit", "Gbit/s",
                "Mbps", "MBps", "Mb/s", "B/s", "KB/s", "kB/s", "GB/s", "B", "KB", "kB", "KiB",
                "MiB", "GiB", "b", "M", "%", "e", "e-", "µs",
            ]),
        ) {
            for s in [
                text.clone(),
                format!("{number}{unit}"),
                format!("{number:e}{unit}"),
                format!("1e{exponent}{unit}"),
                format!("{text}{unit}"),
            ] {
                let _ = parse_duration(&s);
                let _ = parse_rate_bps(&s);
                let _ = parse_bytes(&s);
                let _ = parse_probability(&s);
            }
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("150kB"), Ok(150_000));
        assert_eq!(parse_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_bytes("1500B"), Ok(1500));
        assert_eq!(parse_bytes("1500"), Ok(1500));
        assert_eq!(parse_bytes("2MB"), Ok(2_000_000));
        assert_eq!(parse_bytes("2MiB"), Ok(2_097_152));
        assert!(parse_bytes("12 parsecs").is_err());
    }

    /// "KB" is 1000 bytes to some tools and 1024 to others (tc reads "kb"
    /// and "mb" in any case as 1024 and 1024^2): refused, naming both.
    #[test]
    fn sizes_tools_disagree_on_are_refused() {
        for (s, si, iec) in [
            ("4KB", "\"4kB\"", "\"4KiB\""),
            ("4kb", "\"4kB\"", "\"4KiB\""),
            ("4mb", "\"4MB\"", "\"4MiB\""),
            ("4M", "\"4MB\"", "\"4MiB\""),
            ("4gb", "\"4GB\"", "\"4GiB\""),
        ] {
            let e = parse_bytes(s).unwrap_err();
            assert!(
                e.contains("ambiguous") && e.contains(si) && e.contains(iec),
                "{e}"
            );
        }
        assert!(parse_bytes("1500b").unwrap_err().contains("bits"));
    }

    #[test]
    fn probabilities() {
        assert_eq!(parse_probability("1%"), Ok(0.01));
        assert_eq!(parse_probability("100%"), Ok(1.0));
        assert_eq!(parse_probability("0.25"), Ok(0.25));
        assert_eq!(parse_probability("0.07"), Ok(0.07));
        assert_eq!(parse_probability("0"), Ok(0.0));
        assert!(parse_probability("-0.1").is_err());
        // A bare 1 may mean 1% or every packet: refused, naming both.
        for s in ["1", "1.0", "5"] {
            let e = parse_probability(s).unwrap_err();
            assert!(e.contains("ambiguous") && e.contains("100%"), "{e}");
        }
        assert!(parse_probability("5").unwrap_err().contains("\"5%\""));
    }

    #[test]
    fn serde_adapters_report_the_field() {
        #[derive(serde::Deserialize, Debug)]
        struct S {
            #[serde(with = "duration")]
            #[allow(dead_code)]
            delay: Duration,
        }
        let err = toml::from_str::<S>("\n\ndelay = \"fast\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("delay") && err.contains("line 3"), "{err}");
        let err = toml::from_str::<S>("\ndelay = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("delay") && err.contains("line 2"), "{err}");
        assert!(err.contains("\"1ms\""), "{err}");
        let ok: S = toml::from_str("delay = \"20ms\"").unwrap();
        assert_eq!(ok.delay, Duration::from_millis(20));
    }
}
