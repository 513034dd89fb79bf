# The two entry points (see README.md), and an optional profile-guided build.
# Everything else is cargo.
.PHONY: setup lab test pgo

setup:
	@scripts/setup

# The main job: the default lab suite, report under ./brisk-lab-out.
lab: setup
	cargo run --release -p brisk-cli -- lab

# brisk built with profile-guided optimisation, as target/pgo/brisk
# (two release builds and a minute of training; see README.md).
pgo:
	@scripts/pgo

# Every test: format, lints, the workspace's tests (the live lab's need
# root and skip without it, unless CI=true), the tests of the reference
# UDP Prague peer (a non-default feature: its crate includes GPL-2.0-only
# code), the transport's fuzz targets on their seed corpora (they need
# the fuzzing hooks), and the quick lab suite with its report checked
# section by section. Tests build in the `ci` profile: release
# optimisation without link-time optimisation, which links the many test
# binaries in a fraction of the time.
test: setup
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo test --workspace --profile ci
	cargo clippy -p brisk-sim -p brisk-lab --all-targets --features brisk-lab/reference-prague -- -D warnings
	cargo test --profile ci -p brisk-sim --features reference-prague --test reference_prague --test l4s_reference_table
	cargo test --profile ci -p brisk-lab --features reference-prague --test reference_peer
	cargo test --profile ci -p brisk-proto --features fuzzing --test fuzz_corpus
	BRISK_PROFILE=ci .ci/lab-check
	VIRTUAL_ENV=$(CURDIR)/.venv .venv/bin/maturin develop --quiet --profile ci -m python/Cargo.toml
	.venv/bin/python -m pytest -q python/tests
