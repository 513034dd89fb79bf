//! What can go wrong in a sweep, with the file and line to fix.

use std::path::PathBuf;

/// Why a grid could not be read or run, or its results not stored.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// The grid is not valid TOML, or a key has the wrong type.
    #[error("{origin}: {message}")]
    Parse { origin: String, message: String },
    /// A grid field is valid TOML but not a valid grid.
    #[error("{origin}:{line}: `{field}`: {message}")]
    Field {
        origin: String,
        line: usize,
        field: String,
        message: String,
    },
    /// One point of the grid is not a valid scenario; `point` lists the
    /// axis values that make it.
    #[error("{origin}: the scenario with {point} is invalid: {message}")]
    Point {
        origin: String,
        point: String,
        message: String,
    },
    /// An engine returned no results for some runs; those it returned
    /// are stored.
    #[error("{missing} of {total} runs returned no results; run the sweep again for them")]
    Incomplete { missing: usize, total: usize },
    /// The results store could not be read or written.
    #[error("results store {path}: {message}")]
    Store { path: PathBuf, message: String },
}
