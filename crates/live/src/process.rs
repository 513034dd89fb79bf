//! Programs run inside a namespace: `ip netns exec NAME sh -c CMD` (which
//! also shows the program the namespace's own /sys and its
//! `/etc/netns/NAME/resolv.conf`), in a process group of its own (so the
//! whole tree it starts can be killed at once) and killed if the lab
//! process dies. A [`Program`] is a guard: dropping it kills its group.

#![allow(unsafe_code)]

use crate::error::LiveError;
use crate::netns::Netns;
use crate::sys;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// How a program's standard streams are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    /// Inherit the lab's stdin, stdout and stderr.
    Inherit,
    /// No stdin; stdout goes to the lab's stderr (keeps `--json` output clean).
    StdoutToStderr,
    /// The terminal, in the lab's own process group (an interactive shell).
    Interactive,
}

/// A running program.
#[derive(Debug)]
pub struct Program {
    label: String,
    child: Child,
    /// The process group to kill; `None` when it shares the lab's group.
    group: Option<i32>,
}

impl Program {
    /// Starts `sh -c command` inside `ns` with `env` added.
    pub fn spawn(
        ns: &Netns,
        label: &str,
        command: &str,
        env: &[(String, String)],
        streams: Streams,
    ) -> Result<Program, LiveError> {
        Program::spawn_argv(ns, label, &["sh", "-c", command], env, streams)
    }

    /// Starts the program `argv` inside `ns`.
    pub fn spawn_argv(
        ns: &Netns,
        label: &str,
        argv: &[&str],
        env: &[(String, String)],
        streams: Streams,
    ) -> Result<Program, LiveError> {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns.name()]).args(argv);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        match streams {
            Streams::Inherit | Streams::Interactive => {}
            Streams::StdoutToStderr => {
                let err = std::io::stderr();
                let fd = std::os::fd::AsFd::as_fd(&err)
                    .try_clone_to_owned()
                    .map_err(LiveError::io("duplicate stderr"))?;
                cmd.stdin(Stdio::null()).stdout(Stdio::from(fd));
            }
        }
        let keep_group = streams == Streams::Interactive;
        // SAFETY: the hook only makes async-signal-safe syscalls.
        unsafe {
            cmd.pre_exec(move || sys::child_setup(keep_group));
        }
        let child = cmd.spawn().map_err(|source| LiveError::Spawn {
            command: label.to_string(),
            source,
        })?;
        let group = (!keep_group).then_some(child.id() as i32);
        Ok(Program {
            label: label.to_string(),
            child,
            group,
        })
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status if the program has ended.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, LiveError> {
        self.child
            .try_wait()
            .map_err(LiveError::io(format!("wait for {}", self.label)))
    }

    /// Asks the program (its whole group) to stop with SIGTERM, waits up
    /// to `grace`, then kills what is left.
    pub fn stop(mut self, grace: Duration) -> Option<ExitStatus> {
        self.signal(libc::SIGTERM);
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                self.signal(libc::SIGKILL);
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.signal(libc::SIGKILL);
        self.child.wait().ok()
    }

    fn signal(&mut self, sig: i32) {
        match self.group {
            Some(g) => {
                let _ = sys::send_signal(-g, sig);
            }
            None => {
                let _ = sys::send_signal(self.child.id() as i32, sig);
            }
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.wait();
    }
}

/// How a program ended, in words: "exited with status 3", "was killed by
/// signal 9".
pub fn describe_exit(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        (None, None) => "ended".into(),
    }
}

/// The shell's convention for an exit status: the code, or 128 + signal.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_described_and_coded_as_the_shell_does() {
        let exited = ExitStatus::from_raw(3 << 8);
        assert_eq!(describe_exit(exited), "exited with status 3");
        assert_eq!(exit_code(exited), 3);
        let killed = ExitStatus::from_raw(libc::SIGKILL);
        assert_eq!(describe_exit(killed), "was killed by signal 9");
        assert_eq!(exit_code(killed), 128 + 9);
    }
}
