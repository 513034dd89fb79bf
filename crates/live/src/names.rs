//! Names of one run's namespaces and devices. Every name starts with a
//! per-run prefix, `brk<pid>x<n>`, so parallel runs (and several labs in
//! one process) never collide, and a leftover can be traced to its run.

use std::sync::atomic::{AtomicU32, Ordering};

/// What every name of every run starts with.
pub const PREFIX: &str = "brk";

/// Labs started by this process so far.
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The names one run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunNames {
    /// `brk<pid>x<n>`: at most 3 + 7 + 1 + 3 characters for any Linux pid
    /// and the first thousand labs of a process.
    pub prefix: String,
    /// The client's network namespace, also the name of its TUN device.
    pub client: String,
    /// The server's network namespace, also the name of its TUN device.
    pub server: String,
}

impl RunNames {
    /// Fresh names for a new run of this process.
    pub fn next() -> RunNames {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        RunNames::with_prefix(format!("{PREFIX}{}x{n}", crate::sys::pid()))
    }

    pub fn with_prefix(prefix: String) -> RunNames {
        RunNames {
            client: format!("{prefix}c"),
            server: format!("{prefix}s"),
            prefix,
        }
    }

    /// The namespaces, in creation order.
    pub fn namespaces(&self) -> [&str; 2] {
        [&self.client, &self.server]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_fit_an_interface_name() {
        let a = RunNames::next();
        let b = RunNames::next();
        assert_ne!(a.prefix, b.prefix);
        // The longest pid Linux allows (4194304) still fits IFNAMSIZ - 1.
        let worst = RunNames::with_prefix(format!("{PREFIX}4194304x999"));
        assert!(worst.client.len() < libc::IFNAMSIZ, "{}", worst.client);
        assert!(a.client.starts_with(&a.prefix) && a.server.starts_with(&a.prefix));
        assert_ne!(a.client, a.server);
    }
}
