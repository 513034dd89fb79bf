//! Names the build that `brisk bench` measures: what `BRISK_BUILD` says
//! when set (a build pipeline naming itself, e.g. "release+PGO"), else the
//! cargo profile, read from where cargo puts this script's output
//! (`<target>/<profile>/build/<package>/out`), and its optimisation level.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=BRISK_BUILD");
    let label = match std::env::var("BRISK_BUILD") {
        Ok(named) if !named.trim().is_empty() => named.trim().to_string(),
        _ => {
            let out = std::env::var("OUT_DIR").unwrap_or_default();
            let profile = Path::new(&out)
                .ancestors()
                .nth(3)
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
                .map(str::to_owned)
                .or_else(|| std::env::var("PROFILE").ok())
                .unwrap_or_else(|| "unknown".into());
            let opt = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "?".into());
            format!("{profile} profile, opt-level {opt}")
        }
    };
    println!("cargo:rustc-env=BRISK_BUILD_LABEL={label}");
}
