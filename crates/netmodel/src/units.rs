//! Human units in scenario files: "10Mbit", "20ms", "150KB", "1%".
//!
//! Each parser returns a message naming what it expected, and each has a
//! serde adapter so configuration structs can say
//! `#[serde(with = "units::duration")]` and a bad value is reported by the
//! TOML reader with its field name and line.
//!
//! Conventions: sizes use SI prefixes for "KB"/"MB" (1000) and IEC for
//! "KiB"/"MiB" (1024); rates accept bits ("Mbit", "Mbps", "Mbit/s") or bytes
//! per second ("MB/s", "KB/s").

use std::time::Duration;

/// Splits "12.5ms" into (12.5, "ms"), tolerating spaces.
fn split(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(s.len());
    let end = if s[..end].ends_with('e') {
        end - 1
    } else {
        end
    };
    let value: f64 = s[..end].trim().parse().ok()?;
    value
        .is_finite()
        .then(|| (value, s[end..].trim().to_ascii_lowercase()))
}

/// "20ms", "1.5s", "250us", "100ns", "2min".
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let err = || format!("expected a duration like \"20ms\" or \"1.5s\", got {s:?}");
    let (v, unit) = split(s).ok_or_else(err)?;
    let scale = match unit.as_str() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "min" => 60.0,
        _ => return Err(err()),
    };
    if v < 0.0 {
        return Err(format!("duration must not be negative, got {s:?}"));
    }
    Duration::try_from_secs_f64(v * scale)
        .map_err(|_| format!("duration {s:?} is longer than a duration can be"))
}

/// A rate in bits per second: "10Mbit", "2.5 Mbit/s", "100kbps", "1Gbit", "50KB/s".
pub fn parse_rate_bps(s: &str) -> Result<u64, String> {
    let err = || format!("expected a rate like \"10Mbit\", \"500kbit\" or \"50KB/s\", got {s:?}");
    let (v, unit) = split(s).ok_or_else(err)?;
    // Byte rates are spelled with a capital B and "/s" ("50KB/s"); anything
    // else is read as bits ("Mbit", "Mbps", "mb").
    let raw = s
        .trim()
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
        .trim();
    let bits = match raw {
        "B/s" => 8.0,
        "KB/s" | "kB/s" => 8e3,
        "MB/s" => 8e6,
        "GB/s" => 8e9,
        _ => match unit.trim_end_matches("/s").trim_end_matches("ps") {
            "bit" | "b" => 1.0,
            "kbit" | "kb" => 1e3,
            "mbit" | "mb" => 1e6,
            "gbit" | "gb" => 1e9,
            _ => return Err(err()),
        },
    };
    let bps = (v * bits).round();
    if bps < 1.0 {
        return Err(format!("rate must be at least 1 bit/s, got {s:?}"));
    }
    Ok(bps as u64)
}

/// A size in bytes: "1500B", "150KB", "64KiB", "1MB", "2MiB".
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let err = || format!("expected a size like \"1500B\", \"150KB\" or \"64KiB\", got {s:?}");
    let (v, unit) = split(s).ok_or_else(err)?;
    let scale = match unit.as_str() {
        "b" | "" => 1.0,
        "kb" => 1e3,
        "kib" => 1024.0,
        "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(err()),
    };
    if v < 0.0 {
        return Err(format!("size must not be negative, got {s:?}"));
    }
    Ok((v * scale).round() as u64)
}

/// A probability: "1%", "0.5 %" or a bare fraction "0.01".
pub fn parse_probability(s: &str) -> Result<f64, String> {
    let err = || format!("expected a probability like \"1%\" or 0.01, got {s:?}");
    let t = s.trim();
    let p = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map_err(|_| err())? / 100.0,
        None => t.parse::<f64>().map_err(|_| err())?,
    };
    check_probability(p).map_err(|_| err())
}

fn check_probability(p: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!(
            "probability must be within 0..1 (0%..100%), got {p}"
        ))
    }
}

macro_rules! serde_adapter {
    ($module:ident, $ty:ty, $parse:expr, $expect:literal) => {
        /// Serde adapter; see the module docs for the accepted spellings.
        pub mod $module {
            use serde::de::{self, Deserializer, Visitor};
            use std::fmt;

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
    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<std::time::Duration>, D::Error> {
        super::duration::deserialize(d).map(Some)
    }
}

/// Serde adapter for `Option<u64>` byte sizes that may be omitted.
pub mod opt_bytes {
    use serde::Deserializer;
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
        assert!(parse_duration("20").unwrap_err().contains("\"20ms\""));
        assert!(parse_duration("-1ms").is_err());
        assert!(parse_duration("ms").is_err());
        // Beyond what a duration holds: a message, not a panic.
        assert!(parse_duration("1e300s").unwrap_err().contains("longer"));
        assert!(parse_duration("1e18min").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate_bps("10Mbit"), Ok(10_000_000));
        assert_eq!(parse_rate_bps("2.5 Mbit/s"), Ok(2_500_000));
        assert_eq!(parse_rate_bps("100kbps"), Ok(100_000));
        assert_eq!(parse_rate_bps("1Gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate_bps("50KB/s"), Ok(400_000));
        assert!(parse_rate_bps("fast").is_err());
        assert!(parse_rate_bps("0Mbit").is_err());
        // A rate that rounds to nothing would stall the link for good.
        assert!(
            parse_rate_bps("0.4bit")
                .unwrap_err()
                .contains("at least 1 bit/s")
        );
        assert_eq!(parse_rate_bps("0.6bit"), Ok(1));
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
                "Mbps", "B/s", "KB/s", "GB/s", "B", "KB", "KiB", "MiB", "GiB", "%", "e", "e-",
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
    fn sizes_and_probabilities() {
        assert_eq!(parse_bytes("150KB"), Ok(150_000));
        assert_eq!(parse_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_bytes("1500B"), Ok(1500));
        assert_eq!(parse_bytes("1500"), Ok(1500));
        assert!(parse_bytes("12 parsecs").is_err());
        assert_eq!(parse_probability("1%"), Ok(0.01));
        assert_eq!(parse_probability("0.25"), Ok(0.25));
        assert!(parse_probability("150%").is_err());
        assert!(parse_probability("-0.1").is_err());
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
        let ok: S = toml::from_str("delay = \"20ms\"").unwrap();
        assert_eq!(ok.delay, Duration::from_millis(20));
    }
}
