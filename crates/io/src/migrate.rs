//! A client moving to another local address ([`crate::Endpoint::rebind`],
//! or at a stall to its standby address, [`crate::Endpoint::set_standby`]):
//! once the task has swapped in the new socket, each established
//! connection is told, so it addresses the server by a connection ID the
//! server never saw on the old address, starts congestion control and
//! its RTT estimate over, and validates the new path (docs/PROTOCOL.md
//! §7.4). A NAT rebinding needs nothing here: the client does not see it,
//! and the server's core follows the new address by itself.

use crate::state::State;
use brisk_proto::ConnectionHandle;
use brisk_time::Instant;

impl State {
    /// Tells every established connection that the endpoint now sends
    /// from another local address; returns those that took it, for the
    /// turn to drive at once (their path challenge tells the server).
    /// Handshakes still in the core endpoint are not moved: their next
    /// packets simply leave from the new socket.
    pub fn migrate_all(&mut self, now: Instant) -> Vec<ConnectionHandle> {
        let mut moved: Vec<ConnectionHandle> = self
            .conns
            .iter()
            .filter(|(_, cell)| cell.lock().core.as_mut().is_some_and(|c| c.migrate(now)))
            .map(|(h, _)| *h)
            .collect();
        moved.sort();
        moved
    }

    /// Moves every established connection to the socket that just became
    /// the active one, after a stall of the old path: as
    /// [`State::migrate_all`], and each takes what it had in flight on
    /// the old path as lost, to resend on the new one at once.
    pub fn fail_over_all(&mut self, now: Instant) -> Vec<ConnectionHandle> {
        let mut moved: Vec<ConnectionHandle> = self
            .conns
            .iter()
            .filter(|(_, cell)| cell.lock().core.as_mut().is_some_and(|c| c.fail_over(now)))
            .map(|(h, _)| *h)
            .collect();
        moved.sort();
        moved
    }
}
