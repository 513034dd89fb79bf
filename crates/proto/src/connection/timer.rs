//! The connection's timers: a small table indexed by [`Timer`], so the next
//! wake-up is one `min` over a fixed array.

use brisk_time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Timer {
    /// Close when nothing was heard for the idle timeout.
    Idle = 0,
    /// Declare packets lost by the time threshold, send a probe, or resend
    /// the last handshake message.
    LossDetection = 1,
    /// Send a delayed ACK.
    AckDelay = 2,
    /// The pacer allows the next packet.
    Pacing = 3,
    /// The closing or draining period ends.
    Close = 4,
    /// ECN validation's probing period ends or a re-test starts.
    Ecn = 5,
    /// Send a PING to keep the path (and NAT bindings) alive.
    KeepAlive = 6,
    /// A peer that was sending fell silent: send a PING (see
    /// `Connection::silence_deadline`); or, with failover, see whether an
    /// unanswered probe timeout is a stall (`Connection::check_stall`).
    Silence = 7,
    /// Send a PATH_CHALLENGE again, or give up on the new path.
    PathValidation = 8,
}

impl Timer {
    pub(crate) const ALL: [Timer; 9] = [
        Timer::Idle,
        Timer::LossDetection,
        Timer::AckDelay,
        Timer::Pacing,
        Timer::Close,
        Timer::Ecn,
        Timer::KeepAlive,
        Timer::Silence,
        Timer::PathValidation,
    ];
}

/// Each timer's deadline, [`Instant::FAR_FUTURE`] when stopped (a deadline
/// that saturated there never fires either): a plain array of integers, so
/// the earliest is a branch-free `min`, asked after every event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimerTable {
    at: [Instant; Timer::ALL.len()],
}

impl Default for TimerTable {
    fn default() -> Self {
        TimerTable {
            at: [Instant::FAR_FUTURE; Timer::ALL.len()],
        }
    }
}

impl TimerTable {
    pub(crate) fn set(&mut self, t: Timer, at: Instant) {
        self.at[t as usize] = at;
    }

    pub(crate) fn set_opt(&mut self, t: Timer, at: Option<Instant>) {
        self.at[t as usize] = at.unwrap_or(Instant::FAR_FUTURE);
    }

    pub(crate) fn stop(&mut self, t: Timer) {
        self.at[t as usize] = Instant::FAR_FUTURE;
    }

    pub(crate) fn get(&self, t: Timer) -> Option<Instant> {
        armed(self.at[t as usize])
    }

    pub(crate) fn stop_all(&mut self) {
        *self = TimerTable::default();
    }

    pub(crate) fn next(&self) -> Option<Instant> {
        armed(self.at.iter().copied().min().unwrap_or(Instant::FAR_FUTURE))
    }

    pub(crate) fn is_expired(&self, t: Timer, now: Instant) -> bool {
        self.at[t as usize] <= now
    }

    /// The timers due at `now`, one bit per [`Timer`] (`1 << t`): one
    /// pass, where asking each in turn took a branch per timer.
    pub(crate) fn due(&self, now: Instant) -> u16 {
        self.at
            .iter()
            .enumerate()
            .fold(0, |m, (i, &at)| m | (u16::from(at <= now) << i))
    }

    /// Stops every timer of `mask` (bits as [`TimerTable::due`] gives).
    pub(crate) fn stop_mask(&mut self, mask: u16) {
        for (i, at) in self.at.iter_mut().enumerate() {
            if mask & (1 << i) != 0 {
                *at = Instant::FAR_FUTURE;
            }
        }
    }
}

impl Timer {
    /// This timer's bit in a [`TimerTable::due`] mask.
    pub(crate) const fn bit(self) -> u16 {
        1 << self as u16
    }
}

fn armed(at: Instant) -> Option<Instant> {
    (at != Instant::FAR_FUTURE).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_is_the_earliest_armed_timer() {
        let mut t = TimerTable::default();
        assert_eq!(t.next(), None);
        t.set(Timer::Idle, Instant::from_millis(30_000));
        t.set(Timer::AckDelay, Instant::from_millis(25));
        assert_eq!(t.next(), Some(Instant::from_millis(25)));
        assert!(t.is_expired(Timer::AckDelay, Instant::from_millis(25)));
        assert!(!t.is_expired(Timer::Idle, Instant::from_millis(25)));
        assert_eq!(t.due(Instant::from_millis(25)), Timer::AckDelay.bit());
        assert_eq!(
            t.due(Instant::from_millis(30_000)),
            Timer::AckDelay.bit() | Timer::Idle.bit()
        );
        t.stop_mask(Timer::AckDelay.bit());
        assert_eq!(t.next(), Some(Instant::from_millis(30_000)));
        t.stop_all();
        assert_eq!(t.get(Timer::Idle), None);
        assert_eq!(Timer::ALL.len(), 9);
    }
}
