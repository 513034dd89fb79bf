//! The wall clock at the core's time zero: a first flight with early data
//! carries the client's wall-clock time, and the server compares it with
//! its own to refuse old replays (docs/PROTOCOL.md §3.3). The core reads no
//! clock, so the edge tells it where its `Instant::ZERO` lies.

use brisk_time::Instant;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Time since the Unix epoch at the core's `Instant::ZERO`, given that the
/// core's clock reads `now` at this moment. A clock set before 1970 reads
/// as the epoch: early data is then refused, and the connection works.
pub(crate) fn at_zero(now: Instant) -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(now.since_epoch())
}
