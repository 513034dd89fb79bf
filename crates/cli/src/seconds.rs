//! Command-line durations given in seconds ("--seconds 2.5"): read as a
//! `Duration` by clap, so a value no duration can hold (negative, NaN,
//! infinite, or beyond about 584 billion years) is refused with a message
//! instead of reaching `Duration::from_secs_f64`, which panics on it.

use std::time::Duration;

/// Parses a positive, finite number of seconds that a `Duration` holds.
pub fn positive(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("expected a number of seconds, got {text:?}"))?;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!(
            "expected a positive number of seconds, got {text:?}"
        ));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{text} seconds is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_durations_pass_and_the_rest_get_a_message() {
        assert_eq!(positive("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(positive(" 60 "), Ok(Duration::from_secs(60)));
        for bad in ["0", "-1", "NaN", "inf", "1e300", "ten", ""] {
            let e = positive(bad).unwrap_err();
            assert!(e.contains("seconds"), "{bad}: {e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn no_text_panics(text in ".{0,24}", x in proptest::prelude::any::<f64>()) {
            let _ = positive(&text);
            let _ = positive(&x.to_string());
        }
    }
}
