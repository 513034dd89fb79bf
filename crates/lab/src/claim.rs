//! Claims: what a seed document says, in our words, with its numbers.
//!
//! The five seeds are the documents Brisk was started from (see
//! `docs/LAB.md`); every report section names the one it checks.

use serde::Serialize;

/// One of the five seed documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Seed {
    /// WWDC 2015 session 719, "Your App and Next Generation Networks".
    Wwdc2015,
    /// WWDC 2023 session 10004, "Reduce network delays with L4S".
    Wwdc2023,
    /// Kazuho Oku (H2O), "Programming TCP for responsiveness".
    Oku,
    /// Alexander Tobol (OK.ru), "TCP is dead".
    Okru,
    /// Juho Snellman (Teclo), "Mobile TCP optimization - lessons learned in
    /// production".
    Teclo,
}

impl Seed {
    /// The seed's file name in the seeds directory.
    pub fn file(self) -> &'static str {
        match self {
            Seed::Wwdc2015 => "000_fb94b2ca8245215e.txt",
            Seed::Wwdc2023 => "001_5395389a4c3ad63b.txt",
            Seed::Oku => "002_887fc7625ed47aca.txt",
            Seed::Okru => "003_0ad6161d5cd06b49.txt",
            Seed::Teclo => "004_6b61fede26027db0.txt",
        }
    }

    /// Who said it and where, for the report.
    pub fn title(self) -> &'static str {
        match self {
            Seed::Wwdc2015 => "WWDC 2015 session 719, “Your App and Next Generation Networks”",
            Seed::Wwdc2023 => "WWDC 2023 session 10004, “Reduce network delays with L4S”",
            Seed::Oku => "Kazuho Oku (H2O), “Programming TCP for responsiveness”",
            Seed::Okru => "Alexander Tobol (OK.ru), “TCP is dead”",
            Seed::Teclo => {
                "Juho Snellman (Teclo), “Mobile TCP optimization: lessons learned in production”"
            }
        }
    }
}

/// What a section sets out to check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Claim {
    pub seed: Seed,
    /// The claim with its numbers, paraphrased (never quoted at length).
    pub text: &'static str,
    /// What this section's scenarios can and cannot show about the claim.
    pub scope: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_files_are_distinct() {
        let all = [
            Seed::Wwdc2015,
            Seed::Wwdc2023,
            Seed::Oku,
            Seed::Okru,
            Seed::Teclo,
        ];
        for (i, a) in all.iter().enumerate() {
            assert!(a.file().starts_with(&format!("00{i}_")));
            assert!(all[i + 1..].iter().all(|b| b.file() != a.file()));
        }
    }
}
