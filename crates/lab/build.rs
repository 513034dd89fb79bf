//! Embeds the suites shipped in the repository (`lab/<suite>/**`) into the
//! library, so `brisk lab` runs the default suite from any directory and
//! from an installed binary, with no file lookup at run time.
//!
//! Writes `$OUT_DIR/embedded_suites.rs`: one `(suite, relative path, text)`
//! entry per file, sorted, so a new scenario or section directory needs no
//! code change here. Suite files must be UTF-8 text.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest.join("../../lab");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    if let Ok(suites) = std::fs::read_dir(&root) {
        for suite in suites.flatten() {
            let path = suite.path();
            if path.is_dir() {
                let name = suite.file_name().to_string_lossy().into_owned();
                collect(&path, &path, &name, &mut files);
            }
        }
    }
    files.sort();
    let mut out = String::from(
        "/// Files of the suites shipped in the repository: (suite, path within it, text).\n\
         pub(crate) const EMBEDDED: &[(&str, &str, &str)] = &[\n",
    );
    for (suite, rel, abs) in &files {
        println!("cargo:rerun-if-changed={}", abs.display());
        writeln!(
            out,
            "    ({suite:?}, {rel:?}, include_str!({:?})),",
            abs.display().to_string()
        )
        .expect("writing to a String");
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(dest.join("embedded_suites.rs"), out).expect("OUT_DIR is writable");
}

/// Every file under `dir` (scenarios, the manifest, traces they name), with its path relative to the suite root
/// written with forward slashes. Directories are watched so that adding a
/// file reruns this script.
fn collect(base: &Path, dir: &Path, suite: &str, files: &mut Vec<(String, String, PathBuf)>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(base, &path, suite, files);
        } else if !entry.file_name().to_string_lossy().starts_with('.') {
            let rel = path
                .strip_prefix(base)
                .expect("walked from base")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let abs = path.canonicalize().unwrap_or(path);
            files.push((suite.to_string(), rel, abs));
        }
    }
}
