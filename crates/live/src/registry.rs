//! A registry of running labs, so that whatever a killed run leaves behind
//! (SIGKILL gives no chance to clean up) is removed by the next start.
//!
//! Each run holds an exclusive `flock` on its own file in [`RUN_DIR`],
//! written before the first namespace exists and naming every namespace.
//! The kernel drops the lock when the process dies however it dies, so a
//! file whose lock can be taken belongs to a dead run: its namespaces (and
//! the processes still inside them) are destroyed and the file removed.
//! A directory-wide lock keeps a cleaner from seeing a half-written file.

use crate::error::LiveError;
use crate::names::RunNames;
use crate::{netns, sys};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Where runs register; a tmpfs, so a reboot (which ends every namespace)
/// also clears it.
pub const RUN_DIR: &str = "/run/brisk-live";
const SUFFIX: &str = ".lock";

/// Holds `dir`'s registry lock while `f` runs.
fn with_dir_lock<T>(dir: &Path, f: impl FnOnce() -> Result<T, LiveError>) -> Result<T, LiveError> {
    std::fs::create_dir_all(dir).map_err(LiveError::io(format!("create {}", dir.display())))?;
    let path = dir.join(".registry");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(LiveError::io(format!("open {}", path.display())))?;
    sys::lock_exclusive(&lock, true).map_err(LiveError::io(format!("lock {}", path.display())))?;
    f()
}

/// A live run's entry; dropping it removes the entry.
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
    /// Holds the run's lock for as long as the run lives.
    _file: File,
}

impl Registration {
    /// Registers the run named by `names` in `dir`.
    pub fn create(dir: &Path, names: &RunNames) -> Result<Registration, LiveError> {
        with_dir_lock(dir, || {
            let path = dir.join(format!("{}{SUFFIX}", names.prefix));
            let what = format!("write {}", path.display());
            let mut file = OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(&path)
                .map_err(LiveError::io(what.clone()))?;
            sys::lock_exclusive(&file, true).map_err(LiveError::io(what.clone()))?;
            let mut text = format!("pid {}\n", sys::pid());
            for ns in names.namespaces() {
                text.push_str(&format!("netns {ns}\n"));
            }
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_data())
                .map_err(LiveError::io(what))?;
            Ok(Registration { path, _file: file })
        })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Destroys what dead runs registered in `dir` left behind and returns the
/// namespaces it removed. Runs whose process is alive are left alone.
pub fn clean_stale(dir: &Path) -> Result<Vec<String>, LiveError> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    with_dir_lock(dir, || {
        let mut removed = Vec::new();
        let entries =
            std::fs::read_dir(dir).map_err(LiveError::io(format!("read {}", dir.display())))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.to_string_lossy().ends_with(SUFFIX) {
                continue;
            }
            let Ok(mut file) = OpenOptions::new().read(true).write(true).open(&path) else {
                continue;
            };
            if !sys::lock_exclusive(&file, false).unwrap_or(false) {
                continue; // its run is alive
            }
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            for name in text.lines().filter_map(|l| l.strip_prefix("netns ")) {
                let name = name.trim();
                if is_ours(name) {
                    let existed = netns::list().iter().any(|n| n == name);
                    netns::destroy(name)?;
                    if existed {
                        removed.push(name.to_string());
                    }
                }
            }
            let _ = std::fs::remove_file(&path);
        }
        Ok(removed)
    })
}

/// Only names the lab itself makes are ever deleted, whatever a registry
/// file says.
fn is_ours(name: &str) -> bool {
    name.starts_with(crate::names::PREFIX)
        && name.len() < libc::IFNAMSIZ
        && name.bytes().all(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lab_names_are_deleted() {
        assert!(is_ours("brk123x0c"));
        assert!(!is_ours("default"));
        assert!(!is_ours("brk/../x"));
        assert!(!is_ours("brk1234567890123456"));
    }
}
