//! A client with two access paths (a phone's Wi-Fi and cellular): when the
//! connection reports that the path in use stalled, the client sends from
//! its other address from then on and tells the connection, which
//! validates the new path and resends there what the old one swallowed.
//! The address it left becomes the standby, so a second stall moves it
//! back.

use super::BriskFlow;
use crate::flows::AppReport;
use brisk_time::Instant;
use std::net::SocketAddr;
use std::time::Duration;

/// One move of the client to its other address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failover {
    /// When the connection reported the stall and moved.
    pub at: Instant,
    /// The address it left.
    pub from: SocketAddr,
    /// The address it sends from now.
    pub to: SocketAddr,
    /// The old path's probe timeout when it moved: how long the stall
    /// went unnoticed at least.
    pub pto: Duration,
}

impl BriskFlow {
    /// Gives the client a second local address to move to when its path
    /// stalls (the transport's `failover`). Migration must be on
    /// (`BriskConfig::migration`), at both ends.
    pub fn with_standby(mut self, standby: SocketAddr) -> Self {
        if let Some(c) = self.client_config.as_mut() {
            c.transport.failover = true;
            self.standby = Some(standby);
        }
        self
    }

    /// The client's moves to its other address so far.
    pub fn failovers(&self) -> &[Failover] {
        &self.failovers
    }

    /// The client's current local address.
    pub fn client_address(&self) -> SocketAddr {
        self.addrs.sender
    }

    /// Stream bytes the receiving application has read so far, in order.
    pub fn delivered_bytes(&self) -> u64 {
        let mut app = AppReport::default();
        self.workload.report(&mut app, &mut Default::default());
        app.delivered_bytes
    }

    /// Moves the client to its standby address if its connection reported
    /// a stall; called after the client's timers ran.
    pub(super) fn fail_over_if_stalled(&mut self, now: Instant) {
        let Some(standby) = self.standby else {
            return;
        };
        let Some(c) = self.client_conn.and_then(|h| self.client.connection_mut(h)) else {
            return;
        };
        if !c.poll_path_stall() {
            return;
        }
        let pto = c.probe_timeout();
        if c.fail_over(now) {
            let from = std::mem::replace(&mut self.addrs.sender, standby);
            self.standby = Some(from);
            self.failovers.push(Failover {
                at: now,
                from,
                to: standby,
                pto,
            });
        }
    }
}

impl BriskFlow {
    /// When the client's handshake finished (its `Connected` event).
    pub fn connected_at(&self) -> Option<Instant> {
        self.connected_at
    }

    /// Whether the connection failed (its error, as the report gives it).
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }
}
