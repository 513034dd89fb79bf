//! include/brisk.h is what cbindgen makes of the crate today: a function
//! added or changed without regenerating the header fails here.
//! Regenerate with `BRISK_BLESS=1 cargo test -p brisk-capi --test header`.

use std::path::Path;

#[test]
fn the_checked_in_header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is readable and valid");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen can parse the crate");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = crate_dir.join("include/brisk.h");
    if std::env::var_os("BRISK_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("include/brisk.h is writable");
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "include/brisk.h is stale; regenerate it with \
         `BRISK_BLESS=1 cargo test -p brisk-capi --test header` and commit it"
    );
}
