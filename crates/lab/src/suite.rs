//! Suites: a directory of scenario files, one subdirectory per section.
//!
//! ```text
//! lab/default/
//!   suite.toml               title, description, quick_duration
//!   bufferbloat/fifo.toml    <section id>/<stem>.toml, as the section lists
//!   bufferbloat/codel.toml
//!   ...
//! ```
//!
//! The suites under `lab/` in the repository are embedded in the binary at
//! build time (see `build.rs`), so `brisk lab` needs no files at run time;
//! `--suite DIR` reads a directory of the same shape instead. Sections run
//! in registry order ([`crate::sections::all`], then the live sections of
//! [`crate::live::all`]), those with a directory in the suite only. Every file is checked when the suite loads: a missing
//! scenario, an unused file or a directory no section claims is an error,
//! so a typo never silently drops an experiment.

use crate::section::Section;
use brisk_sim::scenario::{Scenario, ScenarioError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

include!(concat!(env!("OUT_DIR"), "/embedded_suites.rs"));

/// The suite `brisk lab` runs when none is named.
pub const DEFAULT_SUITE: &str = "default";
/// Where embedded suites live in the repository.
const EMBEDDED_ROOT: &str = "lab";
const MANIFEST: &str = "suite.toml";

/// Why a suite could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("no suite {name:?}: not a directory, and the built-in suites are {known}")]
    UnknownSuite { name: String, known: String },
    #[error("cannot read {path}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Manifest { path: String, message: String },
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("section {section} needs {path}, which is missing")]
    MissingScenario { section: String, path: String },
    #[error("{path} is not one of section {section}'s scenarios ({expected})")]
    UnexpectedFile {
        path: String,
        section: String,
        expected: String,
    },
    #[error("{path}: no section has this id; known sections: {known}")]
    UnknownDirectory { path: String, known: String },
    #[error("suite {0} has no section directories")]
    Empty(String),
}

/// `suite.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    title: String,
    #[serde(default)]
    description: String,
    /// How long each scenario runs under `--quick`.
    #[serde(with = "brisk_netmodel::units::duration")]
    quick_duration: Duration,
}

/// A loaded, validated suite.
pub struct Suite {
    /// "default" for the built-in suite, else the directory's name.
    pub name: String,
    pub title: String,
    pub description: String,
    pub quick_duration: Duration,
    /// The suite directory as reports print it: "lab/default" (relative to
    /// the repository root) for a built-in suite, else as given.
    pub location: String,
    pub sections: Vec<SuiteSection>,
}

/// A section and its scenario files, in the order it lists them.
pub struct SuiteSection {
    pub section: &'static dyn Section,
    pub scenarios: Vec<SuiteScenario>,
}

/// One scenario file of a suite.
#[derive(Debug, Clone)]
pub struct SuiteScenario {
    pub stem: String,
    /// `<location>/<section>/<stem>.toml`.
    pub path: String,
    /// The file's text, copied beside the results.
    pub text: String,
    pub scenario: Scenario,
}

/// Where a suite's files come from.
trait Files {
    /// Relative paths (forward slashes) of every file, sorted.
    fn list(&self) -> Vec<String>;
    fn read(&self, rel: &str) -> Result<String, SuiteError>;
}

struct Embedded<'a>(BTreeMap<&'a str, &'a str>);

impl Files for Embedded<'_> {
    fn list(&self) -> Vec<String> {
        self.0.keys().map(|k| k.to_string()).collect()
    }

    fn read(&self, rel: &str) -> Result<String, SuiteError> {
        self.0
            .get(rel)
            .map(|t| t.to_string())
            .ok_or_else(|| SuiteError::Io {
                path: rel.to_string(),
                source: std::io::ErrorKind::NotFound.into(),
            })
    }
}

struct Dir(PathBuf);

impl Dir {
    fn walk(&self, dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<(), SuiteError> {
        let entries = std::fs::read_dir(dir).map_err(|source| SuiteError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let rel = format!("{prefix}{name}");
            if entry.path().is_dir() {
                self.walk(&entry.path(), &format!("{rel}/"), out)?;
            } else {
                out.push(rel);
            }
        }
        Ok(())
    }
}

impl Files for Dir {
    fn list(&self) -> Vec<String> {
        let mut out = Vec::new();
        // A read error shows up again, with its path, when the file is read.
        let _ = self.walk(&self.0, "", &mut out);
        out.sort();
        out
    }

    fn read(&self, rel: &str) -> Result<String, SuiteError> {
        let path = self.0.join(rel);
        std::fs::read_to_string(&path).map_err(|source| SuiteError::Io {
            path: path.display().to_string(),
            source,
        })
    }
}

/// Every section a suite may hold: the simulator's, then the live lab's.
fn registry() -> impl Iterator<Item = &'static dyn Section> {
    crate::sections::all()
        .iter()
        .chain(crate::live::all())
        .copied()
}

/// Names of the built-in suites.
pub fn embedded_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = EMBEDDED.iter().map(|(s, _, _)| *s).collect();
    names.dedup();
    names
}

impl Suite {
    /// A directory if `name_or_dir` is one, else a built-in suite.
    pub fn find(name_or_dir: &str) -> Result<Suite, SuiteError> {
        let path = Path::new(name_or_dir);
        if path.is_dir() {
            Suite::from_dir(path)
        } else {
            Suite::embedded(name_or_dir)
        }
    }

    /// A suite shipped in the repository under `lab/<name>`.
    pub fn embedded(name: &str) -> Result<Suite, SuiteError> {
        let files: BTreeMap<&str, &str> = EMBEDDED
            .iter()
            .filter(|(s, _, _)| *s == name)
            .map(|(_, rel, text)| (*rel, *text))
            .collect();
        if files.is_empty() {
            return Err(SuiteError::UnknownSuite {
                name: name.to_string(),
                known: embedded_names().join(", "),
            });
        }
        Suite::load(name, &format!("{EMBEDDED_ROOT}/{name}"), &Embedded(files))
    }

    /// A suite directory on disk.
    pub fn from_dir(dir: &Path) -> Result<Suite, SuiteError> {
        let shown = dir.display().to_string();
        let location = shown.trim_end_matches('/').to_string();
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| location.clone());
        Suite::load(&name, &location, &Dir(dir.to_path_buf()))
    }

    fn load(name: &str, location: &str, files: &dyn Files) -> Result<Suite, SuiteError> {
        let shown = |rel: &str| format!("{location}/{rel}");
        let manifest: Manifest =
            toml::from_str(&files.read(MANIFEST)?).map_err(|e| SuiteError::Manifest {
                path: shown(MANIFEST),
                message: e.to_string().trim_end().to_string(),
            })?;
        let listed = files.list();
        let known: Vec<&str> = registry().map(|s| s.id()).collect();
        for rel in &listed {
            if let Some((dir, _)) = rel.split_once('/')
                && !known.contains(&dir)
            {
                return Err(SuiteError::UnknownDirectory {
                    path: shown(dir),
                    known: known.join(", "),
                });
            }
        }
        let mut sections = Vec::new();
        for section in registry() {
            let prefix = format!("{}/", section.id());
            let mine: Vec<&String> = listed.iter().filter(|r| r.starts_with(&prefix)).collect();
            if mine.is_empty() {
                continue;
            }
            let expected: Vec<String> = section
                .scenarios()
                .iter()
                .map(|stem| format!("{prefix}{stem}.toml"))
                .collect();
            if let Some(extra) = mine
                .iter()
                .find(|r| r.ends_with(".toml") && !expected.contains(r))
            {
                return Err(SuiteError::UnexpectedFile {
                    path: shown(extra),
                    section: section.id().to_string(),
                    expected: section.scenarios().join(", "),
                });
            }
            let mut scenarios = Vec::new();
            for (stem, rel) in section.scenarios().iter().zip(&expected) {
                if !mine.contains(&rel) {
                    return Err(SuiteError::MissingScenario {
                        section: section.id().to_string(),
                        path: shown(rel),
                    });
                }
                let text = files.read(rel)?;
                let base = rel.rsplit_once('/').map_or("", |(d, _)| d);
                let scenario = Scenario::parse_with_traces(&text, &shown(rel), |trace| {
                    let trace = trace.to_string_lossy().replace('\\', "/");
                    files
                        .read(&format!("{base}/{trace}"))
                        .map_err(|e| std::io::Error::other(e.to_string()))
                })?;
                scenarios.push(SuiteScenario {
                    stem: stem.to_string(),
                    path: shown(rel),
                    text,
                    scenario,
                });
            }
            sections.push(SuiteSection { section, scenarios });
        }
        if sections.is_empty() {
            return Err(SuiteError::Empty(location.to_string()));
        }
        Ok(Suite {
            name: name.to_string(),
            title: manifest.title,
            description: manifest.description,
            quick_duration: manifest.quick_duration,
            location: location.to_string(),
            sections,
        })
    }

    /// Every scenario of the suite, section by section.
    pub fn scenario_count(&self) -> usize {
        self.sections.iter().map(|s| s.scenarios.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A scratch directory holding a copy of the default suite.
    fn copy_of_default(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("brisk-lab-suite-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (suite, rel, text) in EMBEDDED {
            if *suite == DEFAULT_SUITE {
                write(&dir, rel, text);
            }
        }
        dir
    }

    #[test]
    fn the_default_suite_is_embedded_and_loads() {
        let s = Suite::embedded(DEFAULT_SUITE).unwrap();
        assert_eq!(s.location, "lab/default");
        assert!(s.quick_duration > Duration::ZERO);
        assert_eq!(s.sections.len(), crate::sections::all().len());
        for sec in &s.sections {
            assert_eq!(sec.scenarios.len(), sec.section.scenarios().len());
            for sc in &sec.scenarios {
                assert!(
                    sc.path
                        .starts_with(&format!("lab/default/{}/", sec.section.id()))
                );
            }
        }
        assert!(embedded_names().contains(&DEFAULT_SUITE));
    }

    #[test]
    fn unknown_names_list_the_built_in_suites() {
        let e = Suite::find("no-such-suite").err().unwrap().to_string();
        assert!(e.contains("default"), "{e}");
    }

    #[test]
    fn a_directory_suite_is_checked_file_by_file() {
        let dir = copy_of_default("checked");
        assert_eq!(
            Suite::from_dir(&dir).unwrap().scenario_count(),
            Suite::embedded(DEFAULT_SUITE).unwrap().scenario_count()
        );
        write(&dir, "bufferbloat/fifo-typo.toml", "duration = \"1s\"\n");
        let e = Suite::from_dir(&dir).err().unwrap().to_string();
        assert!(
            e.contains("fifo-typo.toml") && e.contains("bufferbloat"),
            "{e}"
        );
        std::fs::remove_file(dir.join("bufferbloat/fifo-typo.toml")).unwrap();

        std::fs::remove_file(dir.join("bufferbloat/codel.toml")).unwrap();
        let e = Suite::from_dir(&dir).err().unwrap().to_string();
        assert!(e.contains("codel.toml") && e.contains("missing"), "{e}");
        std::fs::remove_dir_all(dir.join("bufferbloat")).unwrap();
        // A suite may hold only some sections.
        let s = Suite::from_dir(&dir).unwrap();
        assert!(s.sections.iter().all(|x| x.section.id() != "bufferbloat"));

        write(&dir, "bufferblot/fifo.toml", "duration = \"1s\"\n");
        let e = Suite::from_dir(&dir).err().unwrap().to_string();
        assert!(
            e.contains("bufferblot") && e.contains("known sections"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_manifests_and_scenarios_name_the_file() {
        let dir = copy_of_default("bad");
        write(
            &dir,
            "suite.toml",
            "title = \"x\"\nquick_duration = \"soon\"\n",
        );
        let e = Suite::from_dir(&dir).err().unwrap().to_string();
        assert!(e.contains("suite.toml") && e.contains("soon"), "{e}");
        write(
            &dir,
            "suite.toml",
            "title = \"x\"\nquick_duration = \"5s\"\n",
        );
        write(
            &dir,
            "mobile/lte.toml",
            "duration = \"1s\"\nprofile = \"6g\"\n",
        );
        let e = Suite::from_dir(&dir).err().unwrap().to_string();
        assert!(e.contains("mobile/lte.toml") && e.contains("6g"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
