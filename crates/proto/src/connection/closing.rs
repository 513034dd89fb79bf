//! The closing state's repeats of our CONNECTION_CLOSE.
//!
//! A close goes out once, and again in answer to every packet the peer
//! sends while we are closing (RFC 9000 §10.2.1). A peer that was idle
//! sends nothing, so a lost close used to leave its side of the
//! connection, with all its state, until its idle timeout: 10,000 clients
//! closing at once from one address overflow the server's socket buffer,
//! and the connections whose close was dropped stayed for 30 s. So the
//! close is also repeated unprompted, one probe timeout and two probe
//! timeouts after the first (the closing period lasts three): two more
//! small datagrams per close, sent only while we are closing.

use super::{ConnState, Connection, timer::Timer};
use crate::loss::LossDetection;
use brisk_time::Instant;

/// Unprompted repeats of a close within the closing period.
const CLOSE_REPEATS: u8 = 2;

impl Connection {
    /// Entering the closing state: the first repeat is due one probe
    /// timeout from now.
    pub(super) fn arm_close_repeats(&mut self, now: Instant) {
        self.close_repeats_left = CLOSE_REPEATS;
        self.timers
            .set(Timer::LossDetection, now + self.close_repeat_interval());
    }

    /// The repeat timer fired in the closing state: send the close again
    /// and arm the next repeat, if any is left.
    pub(super) fn repeat_close(&mut self, now: Instant) {
        if self.state != ConnState::Closing || self.close_repeats_left == 0 {
            return;
        }
        self.close_repeats_left -= 1;
        self.close_pending = true;
        if self.close_repeats_left > 0 {
            self.timers
                .set(Timer::LossDetection, now + self.close_repeat_interval());
        }
    }

    /// One probe timeout: the closing period is three.
    fn close_repeat_interval(&self) -> std::time::Duration {
        LossDetection::pto_base(&self.rtt, self.peer_max_ack_delay)
    }
}
