//! A writer that never lets data go stale in the kernel
//! (`TCP_NOTSENT_LOWAT`, WWDC 2015; H2O's write sizing on top).
//!
//! A socket send buffer must hold what is in flight, but everything beyond
//! that only waits: the talk's 120 KB buffer draining at 50 KB/s held 2.5 s
//! of old screen frames. With `TCP_NOTSENT_LOWAT` the kernel reports the
//! socket writable only once its *unsent* bytes fall below the mark (8 to
//! 16 KB works well), and the application then writes one fresh unit.
//!
//! # Why data cannot go stale here
//!
//! [`LowatWriter`] pulls: it asks its [`UnitSource`] for a unit only after
//! the kernel has confirmed, at that instant, that unsent data is below the
//! mark. Nothing is queued in user space between the source and the
//! kernel, apart from the tail of the one unit being written, so every byte
//! handed to TCP was produced from the newest state there was when the
//! network could take it. A push design (a channel of units) would need a
//! drop-old policy to get the same guarantee; pulling makes it structural.
//!
//! Tokio caches readiness (edge-triggered), so "writable" there only means
//! "no write has failed since the last event". Before each unit the writer
//! asks the kernel directly (`poll` with a zero timeout, which applies the
//! low-water mark) inside `try_io`, which clears the cached readiness when
//! the kernel says no, without losing a wake-up that raced with the check.

use std::borrow::Borrow;
use std::io;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::Interest;
use tokio::net::TcpStream;

use crate::sockopt::{self, SockoptError};
use crate::sysctl::{SysctlError, Sysctls};
use crate::tcp_info::TcpInfo;
use crate::write_sizing::{CwndSample, WriteSize, WriteSizingConfig};

/// The kernel's default mark, `net.ipv4.tcp_notsent_lowat`; `None` when it
/// is 4294967295 or more (no limit: the whole send buffer may sit unsent).
pub fn system_default_notsent_lowat(sysctls: &Sysctls) -> Result<Option<u32>, SysctlError> {
    let v = sysctls.read_int("net.ipv4.tcp_notsent_lowat")?;
    Ok(u32::try_from(v).ok().filter(|&v| v != u32::MAX))
}

/// Produces the next unit of application data, at the moment it can be
/// sent.
pub trait UnitSource {
    /// The next unit, generated from current state. `max_bytes` is a hard
    /// budget when write sizing is on and `None` otherwise (write one
    /// sensible unit: a frame, a message). `None` ends the stream.
    fn next_unit(&mut self, max_bytes: Option<usize>) -> Option<Vec<u8>>;
}

impl<F: FnMut(Option<usize>) -> Option<Vec<u8>>> UnitSource for F {
    fn next_unit(&mut self, max_bytes: Option<usize>) -> Option<Vec<u8>> {
        self(max_bytes)
    }
}

/// How a [`LowatWriter`] paces and sizes its writes.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct WriterConfig {
    /// `TCP_NOTSENT_LOWAT` in bytes; `None` keeps the kernel default, which
    /// is what an ordinary application gets (usually no limit).
    pub lowat_bytes: Option<u32>,
    /// Size writes from `TCP_INFO` (H2O). While the optimisation applies
    /// the mark drops to 1 byte and the budget is the sized amount.
    pub sizing: Option<WriteSizingConfig>,
}

/// What a writer did, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct WriterStats {
    /// Units written.
    pub units: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Units written under an optimised (sized) budget.
    pub sized_units: u64,
    /// The last sizing decision, when sizing is on.
    pub last_decision: Option<WriteSize>,
}

/// Writes one fresh unit per writable event on a tokio [`TcpStream`]
/// (owned, borrowed or in an `Arc`), reading nothing, so the caller can
/// read the same stream concurrently.
#[derive(Debug)]
pub struct LowatWriter<S: Borrow<TcpStream> = TcpStream> {
    stream: S,
    config: WriterConfig,
    /// The mark currently set on the socket (0 = kernel default).
    current_lowat: u32,
    /// How long the application took between writability and finishing the
    /// previous unit: the delay sizing adds per window.
    loop_time: Duration,
    ready_at: Option<Instant>,
    stats: WriterStats,
}

impl<S: Borrow<TcpStream>> LowatWriter<S> {
    /// Applies the configured mark to the socket.
    pub fn new(stream: S, config: WriterConfig) -> Result<Self, SockoptError> {
        let current_lowat = config.lowat_bytes.unwrap_or(0);
        if config.lowat_bytes.is_some() || config.sizing.is_some() {
            sockopt::set_notsent_lowat(stream.borrow(), current_lowat)?;
        }
        Ok(LowatWriter {
            stream,
            config,
            current_lowat,
            loop_time: Duration::ZERO,
            ready_at: None,
            stats: WriterStats::default(),
        })
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &TcpStream {
        self.stream.borrow()
    }

    /// The stream back, dropping the writer's state.
    pub fn into_inner(self) -> S {
        self.stream
    }

    /// What the writer has done so far.
    pub fn stats(&self) -> WriterStats {
        self.stats
    }

    /// The configuration the writer was built with.
    pub fn config(&self) -> WriterConfig {
        self.config
    }

    /// Waits until the kernel takes more data (unsent bytes below the
    /// mark) and returns the budget for the next unit.
    pub async fn ready(&mut self) -> io::Result<Option<usize>> {
        let stream = self.stream.borrow();
        loop {
            stream.writable().await?;
            let below_mark = stream.try_io(Interest::WRITABLE, || {
                if sockopt::kernel_writable_now(stream)? {
                    Ok(())
                } else {
                    Err(io::ErrorKind::WouldBlock.into())
                }
            });
            match below_mark {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
        self.ready_at = Some(Instant::now());
        self.budget()
    }

    /// The sizing decision, and the mark it needs, for this event.
    fn budget(&mut self) -> io::Result<Option<usize>> {
        let Some(sizing) = self.config.sizing else {
            return Ok(None);
        };
        let info = TcpInfo::read(self.stream.borrow())?;
        let decision = sizing.decide(CwndSample::from(&info), self.loop_time);
        self.stats.last_decision = Some(decision);
        let want_lowat = if decision.is_sized() {
            1
        } else {
            self.config.lowat_bytes.unwrap_or(0)
        };
        if want_lowat != self.current_lowat {
            sockopt::set_notsent_lowat(self.stream.borrow(), want_lowat)?;
            self.current_lowat = want_lowat;
        }
        Ok(match decision {
            WriteSize::Sized { bytes, .. } => Some(usize::try_from(bytes).unwrap_or(usize::MAX)),
            WriteSize::Unlimited { .. } => None,
        })
    }

    /// Writes all of `unit`, waiting for room as needed. Call after
    /// [`ready`](Self::ready) so the unit was produced when it could go out.
    pub async fn write_unit(&mut self, unit: &[u8]) -> io::Result<()> {
        let stream = self.stream.borrow();
        let mut written = 0;
        while written < unit.len() {
            match stream.try_write(&unit[written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => stream.writable().await?,
                Err(e) => return Err(e),
            }
        }
        if let Some(at) = self.ready_at.take() {
            self.loop_time = at.elapsed();
        }
        self.stats.units += 1;
        self.stats.bytes += unit.len() as u64;
        if matches!(self.stats.last_decision, Some(WriteSize::Sized { .. })) {
            self.stats.sized_units += 1;
        }
        Ok(())
    }

    /// Pulls units from `source` one writable event at a time until it
    /// returns `None`; returns the bytes written.
    pub async fn pump<U: UnitSource>(&mut self, source: &mut U) -> io::Result<u64> {
        let start = self.stats.bytes;
        loop {
            let budget = self.ready().await?;
            let Some(unit) = source.next_unit(budget) else {
                break;
            };
            self.write_unit(&unit).await?;
        }
        Ok(self.stats.bytes - start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysctl::fixture;

    #[test]
    fn sysctl_default_unlimited_and_set() {
        let root = fixture::tree("lowat", &[("net.ipv4.tcp_notsent_lowat", "4294967295")]);
        let s = Sysctls::at(&root);
        assert_eq!(system_default_notsent_lowat(&s).unwrap(), None);
        s.write("net.ipv4.tcp_notsent_lowat", "16384").unwrap();
        assert_eq!(system_default_notsent_lowat(&s).unwrap(), Some(16_384));
        s.write("net.ipv4.tcp_notsent_lowat", "-1").unwrap();
        assert_eq!(system_default_notsent_lowat(&s).unwrap(), None);
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn closures_are_unit_sources() {
        let mut n = 0;
        let mut source = |max: Option<usize>| {
            n += 1;
            (n <= 2).then(|| vec![0u8; max.unwrap_or(3)])
        };
        assert_eq!(source.next_unit(None), Some(vec![0; 3]));
        assert_eq!(source.next_unit(Some(1)), Some(vec![0; 1]));
        assert_eq!(source.next_unit(None), None);
    }
}
