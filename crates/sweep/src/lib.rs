//! Sweeps: grids of simulator runs and the store their results land in.
//!
//! Layer: above `brisk-sim`. A grid ([`grid`]) is a base scenario, axes
//! over any of its fields by dotted path ([`path`]) and a list of seeds;
//! each combination and seed is a [`point`] with a key made of its
//! canonical scenario text, its seed and the Brisk version. [`run`] runs
//! the points the [`store`] lacks on all local cores and turns each run's
//! results into tidy rows ([`row`]): one per run and one per flow, every
//! input beside every metric. The store is a directory of Parquet files;
//! finished runs are found by key and not run again. [`compare`] draws a
//! grid's results as Pantheon does: throughput against 95th-percentile
//! one-way delay, one panel per path, a dot per run and scheme;
//! [`calibrate`] fits a constant-rate emulator to each recorded path so
//! that the schemes fare on it as they do on the recording.

pub mod calibrate;
pub mod compare;
pub mod error;
pub mod grid;
pub mod path;
pub mod point;
pub mod row;
pub mod run;
pub mod store;

pub use error::SweepError;
pub use grid::Grid;
pub use row::{Cell, Row};
pub use run::{
    Plan, Progress, SweepOptions, SweepOutcome, finish, plan, plan_live, simulate, sweep,
};
pub use store::{Store, Table};
