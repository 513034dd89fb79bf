//! The output directory:
//!
//! ```text
//! DIR/report.html                      the report, self-contained
//! DIR/results.json                     every section, number and verdict
//! DIR/runs/<section>/<stem>/scenario.toml    the file as it was read
//! DIR/runs/<section>/<stem>/results.json     `brisk sim --json` of the run
//! DIR/runs/<section>/<stem>/bottleneck.pcap  both directions of the bottleneck
//! ```
//!
//! A lab run never overwrites silently: [`check_dir`] refuses a directory
//! that exists and is not empty unless forced.

use crate::report::output_dir;
use crate::runner::SectionRuns;
use std::path::{Path, PathBuf};

/// Why the output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{0} exists and is not empty; choose another --out or pass --force to write over it")]
    NotEmpty(PathBuf),
    #[error("cannot write {path}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Succeeds if `dir` is absent or empty, or if `force` is set.
pub fn check_dir(dir: &Path, force: bool) -> Result<(), OutputError> {
    if force {
        return Ok(());
    }
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                Err(OutputError::NotEmpty(dir.to_path_buf()))
            } else {
                Ok(())
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(dir)(e)),
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::write(path, bytes).map_err(io(path))
}

/// Writes the report, results.json and every run's files into `dir`
/// (created if needed); returns how many files were written.
pub fn write_dir(
    dir: &Path,
    html: &str,
    json: &str,
    runs: &[SectionRuns],
) -> Result<usize, OutputError> {
    write(&dir.join("report.html"), html.as_bytes())?;
    write(&dir.join("results.json"), json.as_bytes())?;
    let mut files = 2;
    for section in runs {
        for f in &section.runs {
            let run_dir = dir.join(output_dir(section.id, &f.run.stem));
            write(&run_dir.join("scenario.toml"), f.text.as_bytes())?;
            // Plain numbers and strings: serialization cannot fail.
            let mut results = serde_json::to_string_pretty(&f.run.results).unwrap_or_default();
            results.push('\n');
            write(&run_dir.join("results.json"), results.as_bytes())?;
            files += 2;
            if let Some(pcap) = &f.pcap {
                write(&run_dir.join("bottleneck.pcap"), pcap)?;
                files += 1;
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absent_or_empty_directories_are_written_unforced() {
        let dir = std::env::temp_dir().join(format!("brisk-lab-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(check_dir(&dir, false).is_ok());
        std::fs::create_dir_all(&dir).unwrap();
        assert!(check_dir(&dir, false).is_ok());
        std::fs::write(dir.join("report.html"), "old").unwrap();
        let e = check_dir(&dir, false).unwrap_err().to_string();
        assert!(e.contains("--force"), "{e}");
        assert!(check_dir(&dir, true).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
