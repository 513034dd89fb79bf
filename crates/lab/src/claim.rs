//! Claims: what a source (a talk or a paper) says, in our words, with its
//! numbers.
//!
//! The sources are the five talks Brisk was started from (see
//! `docs/LAB.md`) and the public L4S test reports the "where it usually
//! breaks" section replays; every report section names the one it checks, by title,
//! speaker, event and year, so a reader can find it without this
//! repository. ("Seed" in the report means only the random seed.)

use serde::Serialize;

/// One of the sources: the five talks, and the public L4S test reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Apple, WWDC 2015 session 719.
    Wwdc2015,
    /// Apple, WWDC 2023 session 10004.
    Wwdc2023,
    /// Kazuho Oku (DeNA, the H2O server's author), slides from 2016.
    Oku,
    /// Alexander Tobol (OK.ru), slides in Russian.
    Okru,
    /// Juho Snellman (Teclo), keynote at SIGCOMM 2015's HotMiddlebox
    /// workshop.
    Teclo,
    /// Pete Heist and Jonathan Morton's public L4S test results, with the
    /// L4S team's own reports on the same cases.
    L4sTests,
}

impl Source {
    /// Every source, in the order the project lists them.
    pub const ALL: [Source; 6] = [
        Source::Wwdc2015,
        Source::Wwdc2023,
        Source::Oku,
        Source::Okru,
        Source::Teclo,
        Source::L4sTests,
    ];

    /// The citation the report prints: title, then speaker, event and year
    /// (as far as the source itself says them).
    pub fn citation(self) -> &'static str {
        match self {
            Source::Wwdc2015 => {
                "“Your App and Next Generation Networks” (Prabhakar Lakhera and Stuart \
                 Cheshire, Apple, WWDC 2015, session 719)"
            }
            Source::Wwdc2023 => {
                "“Reduce network delays with L4S” (Apple, WWDC 2023, session 10004)"
            }
            Source::Oku => {
                "“Programming TCP for responsiveness” (Kazuho Oku, DeNA, slides on the H2O \
                 HTTP/2 server, 2016)"
            }
            Source::Okru => {
                "“TCP is dead, or the future of network protocols” (Alexander Tobol, OK.ru, \
                 conference slides in Russian)"
            }
            Source::Teclo => {
                "“Mobile TCP optimization: lessons learned in production” (Juho Snellman, \
                 Teclo, keynote at the SIGCOMM 2015 HotMiddlebox workshop)"
            }
            Source::L4sTests => {
                "“L4S Tests” (Pete Heist and Jonathan Morton, public test results of \
                 TCP Prague through DualPI2 and classic AQMs, 2020 to 2021, with the L4S \
                 team's reports on the same cases)"
            }
        }
    }
}

/// What a section sets out to check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Claim {
    pub source: Source,
    /// The claim with its numbers, paraphrased (never quoted at length).
    pub text: &'static str,
    /// What this section's scenarios can and cannot show about the claim.
    pub scope: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader has the title, not our files: a citation names the talk
    /// and its event, never a file.
    #[test]
    fn citations_name_a_title_and_no_file() {
        for (i, s) in Source::ALL.iter().enumerate() {
            let c = s.citation();
            assert!(c.starts_with('“') && c.contains("” ("), "{c}");
            assert!(c.ends_with(')'), "{c}");
            assert!(!c.contains(".txt") && !c.contains("000_"), "{c}");
            assert!(!c.to_lowercase().contains("seed"), "{c}");
            assert!(Source::ALL[i + 1..].iter().all(|o| o.citation() != c));
        }
    }
}
