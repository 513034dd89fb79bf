//! Network namespaces: created and deleted with the `ip` command, entered
//! with `setns(2)` by the threads and children that work inside them.
//!
//! A [`Netns`] is a guard: dropping it kills every process left inside the
//! namespace and deletes it, which also destroys its devices and routes.

use crate::error::LiveError;
use crate::sys;
use std::fs::File;
use std::process::Command;

/// Where `ip netns` keeps its named namespaces.
pub const NETNS_DIR: &str = "/run/netns";
/// Where `ip netns exec` finds per-namespace files (resolv.conf) to mount
/// over /etc.
pub const ETC_NETNS_DIR: &str = "/etc/netns";

/// Runs `ip` with `args`, returning its stdout or its stderr as the error.
pub fn ip(args: &[&str]) -> Result<String, LiveError> {
    let command = format!("ip {}", args.join(" "));
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|source| LiveError::Spawn {
            command: command.clone(),
            source,
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(LiveError::Command {
            command,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// The named namespaces that exist now.
pub fn list() -> Vec<String> {
    ip(&["netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Process ids inside namespace `name`.
pub fn pids(name: &str) -> Vec<i32> {
    ip(&["netns", "pids", name])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Kills every process in namespace `name` and deletes it. Idempotent: a
/// namespace that is already gone is not an error.
pub fn destroy(name: &str) -> Result<(), LiveError> {
    // Kill, then look again: a process may have forked meanwhile.
    for _ in 0..20 {
        let left = pids(name);
        if left.is_empty() {
            break;
        }
        for pid in left {
            let _ = sys::send_signal(pid, libc::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let etc = std::path::Path::new(ETC_NETNS_DIR).join(name);
    if etc.exists() {
        let _ = std::fs::remove_dir_all(&etc);
    }
    if !std::path::Path::new(NETNS_DIR).join(name).exists() {
        return Ok(());
    }
    ip(&["netns", "delete", name]).map(drop)
}

/// A named network namespace this process created.
#[derive(Debug)]
pub struct Netns {
    name: String,
    file: File,
    /// Set by [`Netns::close`], which has already deleted it.
    closed: bool,
}

impl Netns {
    /// Creates namespace `name` and brings its loopback up.
    pub fn create(name: &str) -> Result<Netns, LiveError> {
        ip(&["netns", "add", name])?;
        let path = std::path::Path::new(NETNS_DIR).join(name);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) => {
                let _ = destroy(name);
                return Err(LiveError::io(format!("open {}", path.display()))(e));
            }
        };
        let ns = Netns {
            name: name.to_string(),
            file,
            closed: false,
        };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether process `pid` is inside this namespace now.
    pub fn holds(&self, pid: u32) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Ok(mine) = self.file.metadata() else {
            return false;
        };
        std::fs::metadata(format!("/proc/{pid}/ns/net"))
            .is_ok_and(|m| m.ino() == mine.ino() && m.dev() == mine.dev())
    }

    /// Runs `ip -n NAME args`.
    pub fn ip(&self, args: &[&str]) -> Result<String, LiveError> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Runs `f` on a new thread that has entered this namespace: sockets
    /// and TUN devices it creates belong here, and /proc/sys/net shows this
    /// namespace's settings. The caller's thread is not affected.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T, LiveError> {
        std::thread::scope(|s| {
            s.spawn(|| {
                sys::enter_netns(&self.file)
                    .map_err(LiveError::io(format!("enter namespace {}", self.name)))?;
                Ok(f())
            })
            .join()
            .map_err(|_| LiveError::Router(format!("a thread in {} panicked", self.name)))?
        })
    }

    /// Spawns a long-lived thread inside this namespace.
    pub fn spawn<T: Send + 'static>(
        &self,
        thread_name: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<std::thread::JoinHandle<Result<T, LiveError>>, LiveError> {
        let file = self
            .file
            .try_clone()
            .map_err(LiveError::io("duplicate a namespace fd"))?;
        let name = self.name.clone();
        std::thread::Builder::new()
            .name(thread_name.to_string())
            .spawn(move || {
                sys::enter_netns(&file)
                    .map_err(LiveError::io(format!("enter namespace {name}")))?;
                drop(file);
                Ok(f())
            })
            .map_err(LiveError::io("spawn a thread"))
    }

    /// Sets `net.<key>` (dots or slashes) to `value` inside the namespace.
    pub fn sysctl(&self, key: &str, value: &str) -> Result<(), LiveError> {
        let path = format!("/proc/sys/net/{}", key.replace('.', "/"));
        let what = format!("set {key}={value} in {}", self.name);
        self.run(|| std::fs::write(&path, value))?
            .map_err(LiveError::io(what))
    }

    /// Reads `net.<key>` inside the namespace.
    pub fn read_sysctl(&self, key: &str) -> Result<String, LiveError> {
        let path = format!("/proc/sys/net/{}", key.replace('.', "/"));
        let what = format!("read {key} in {}", self.name);
        self.run(|| std::fs::read_to_string(&path))?
            .map(|s| s.trim().to_string())
            .map_err(LiveError::io(what))
    }

    /// Kills what runs inside and deletes the namespace now, reporting
    /// failure (dropping does the same but can only print it).
    pub fn close(mut self) -> Result<(), LiveError> {
        self.closed = true;
        destroy(&self.name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        if let Err(e) = destroy(&self.name) {
            eprintln!("brisk live: cleanup of {}: {e}", self.name);
        }
    }
}
