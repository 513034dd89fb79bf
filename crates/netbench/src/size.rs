//! Byte counts on the command line: `1GiB`, `256MiB`, `10MB`, `4096`.

/// Why a size argument was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("no number in {0:?}")]
    NoNumber(String),
    #[error("unknown unit {unit:?} in {text:?} (use B, KB, MB, GB, KiB, MiB or GiB)")]
    Unit { unit: String, text: String },
    #[error("{0:?} does not fit in 64 bits")]
    Overflow(String),
}

/// Parses a byte count with an optional decimal or binary unit.
pub fn parse_bytes(text: &str) -> Result<u64, SizeError> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| SizeError::NoNumber(text.to_owned()))?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        other => {
            return Err(SizeError::Unit {
                unit: other.to_owned(),
                text: text.to_owned(),
            });
        }
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| SizeError::Overflow(text.to_owned()))
}

/// A byte count in the largest binary unit that divides it exactly.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [(u32, &str); 3] = [(30, "GiB"), (20, "MiB"), (10, "KiB")];
    UNITS
        .iter()
        .find(|(shift, _)| bytes != 0 && bytes.trailing_zeros() >= *shift)
        .map_or_else(
            || format!("{bytes} B"),
            |(shift, unit)| format!("{} {unit}", bytes >> shift),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("1GiB"), Ok(1_073_741_824));
        assert_eq!(parse_bytes("256 MiB"), Ok(268_435_456));
        assert_eq!(parse_bytes("10MB"), Ok(10_000_000));
        assert_eq!(parse_bytes("3KiB"), Ok(3072));
    }

    #[test]
    fn formatting_round_trips() {
        for text in ["1 GiB", "256 MiB", "3 KiB", "1000 B", "1025 B"] {
            assert_eq!(format_bytes(parse_bytes(text).unwrap()), text);
        }
        assert_eq!(format_bytes(0), "0 B");
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(matches!(parse_bytes("GiB"), Err(SizeError::NoNumber(_))));
        assert!(matches!(
            parse_bytes("1 parsec"),
            Err(SizeError::Unit { .. })
        ));
        assert!(matches!(parse_bytes(""), Err(SizeError::NoNumber(_))));
        assert!(matches!(
            parse_bytes("99999999999999999999GiB"),
            Err(SizeError::NoNumber(_))
        ));
        assert!(matches!(
            parse_bytes("99999999999GiB"),
            Err(SizeError::Overflow(_))
        ));
    }
}
