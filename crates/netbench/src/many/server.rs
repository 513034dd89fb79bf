//! The many-connections server in a process of its own, so that its heap
//! and resident set are the server's alone, and both ends of the pipe
//! that joins it to the benchmark.
//!
//! The benchmark starts `brisk-netbench --serve-many <stack> --many <N>
//! --many-server-threads <T> [--v6]`. The child prints `ready <ticket>`
//! once listening, answers each `memory` line on its stdin with `memory
//! <heap bytes or -> <resident bytes>`, and stops when its stdin closes.

#![allow(unsafe_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::IpAddr;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::fleet::Fleet;
use crate::{BenchError, heap};

/// How long a stopping server may take before it is killed.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// Raises the soft limit on open files to the hard limit: the sockets
/// are few, but tokio, the runtime and a 10,000-connection client should
/// not meet a distribution's 1,024.
pub fn raise_open_files_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0
        && limit.rlim_cur < limit.rlim_max
    {
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: setrlimit reads one rlimit; failure leaves the old one.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    }
}

/// The child's side: serves `fleet` on `ip` until stdin closes,
/// answering memory questions on stdout.
pub fn serve_child<F: Fleet>(
    fleet: F,
    ip: IpAddr,
    connections: usize,
    threads: usize,
) -> Result<(), BenchError> {
    raise_open_files_limit();
    let fleet = Arc::new(fleet);
    let (ticket_tx, ticket_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = watch::channel(false);
    let server = std::thread::Builder::new()
        .name(format!("{}-server", fleet.name()))
        .spawn(move || -> Result<(), BenchError> {
            let rt = if threads > 1 {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads)
                    .enable_all()
                    .build()
            } else {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
            }
            .map_err(BenchError::io("tokio runtime"))?;
            rt.block_on(fleet.serve(ip, connections, ticket_tx, stop_rx))
        })
        .map_err(BenchError::io("spawn the server thread"))?;
    let answered = match ticket_rx.recv() {
        Ok(ticket) => answer(&F::ticket_line(&ticket)),
        Err(_) => Err(BenchError::ServerGone),
    };
    let _ = stop_tx.send(true);
    let served = server.join().map_err(|_| BenchError::Panicked("server"))?;
    answered?;
    served
}

/// Prints the ticket, then answers stdin until it closes.
fn answer(ticket: &str) -> Result<(), BenchError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready {ticket}")
        .and_then(|()| out.flush())
        .map_err(BenchError::io("many server: write the ticket"))?;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(BenchError::io("many server: read a question"))?;
        match line.trim() {
            "memory" => {
                let heap = heap::live_bytes().map_or_else(|| "-".to_owned(), |b| b.to_string());
                let rss =
                    heap::resident_bytes().map_err(BenchError::io("many server: read statm"))?;
                writeln!(out, "memory {heap} {rss}")
                    .and_then(|()| out.flush())
                    .map_err(BenchError::io("many server: answer"))?;
            }
            "stop" => break,
            _ => return Err(BenchError::Protocol("many server: unknown question")),
        }
    }
    Ok(())
}

/// The server's memory at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerMemory {
    /// Live heap bytes; `None` if the server binary does not count them.
    pub heap_bytes: Option<u64>,
    pub resident_bytes: u64,
}

/// The benchmark's side: the running server process.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl ServerProcess {
    /// Starts `exe` as the server of `stack` for `connections` clients on
    /// `ip`, on a runtime of `threads` worker threads; returns it and the
    /// ticket line it printed.
    pub fn spawn(
        exe: &Path,
        stack: &str,
        ip: IpAddr,
        connections: usize,
        threads: usize,
    ) -> Result<(ServerProcess, String), BenchError> {
        let mut command = Command::new(exe);
        command
            .args(["--serve-many", stack, "--many", &connections.to_string()])
            .args(["--many-server-threads", &threads.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if ip.is_ipv6() {
            command.arg("--v6");
        }
        let mut child = command
            .spawn()
            .map_err(BenchError::io("many: start the server process"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(BenchError::Protocol(
                "many: the server process has no pipes",
            ));
        };
        let mut server = ServerProcess {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
        };
        let line = server.read_line()?;
        let ticket = line
            .strip_prefix("ready ")
            .ok_or(BenchError::Protocol(
                "many: the server process did not say ready",
            ))?
            .to_owned();
        Ok((server, ticket))
    }

    fn read_line(&mut self) -> Result<String, BenchError> {
        let mut line = String::new();
        let n = self
            .stdout
            .read_line(&mut line)
            .map_err(BenchError::io("many: read from the server process"))?;
        if n == 0 {
            return Err(BenchError::ServerGone);
        }
        Ok(line.trim_end().to_owned())
    }

    /// Asks the server for its memory now.
    pub fn memory(&mut self) -> Result<ServerMemory, BenchError> {
        let stdin = self.stdin.as_mut().ok_or(BenchError::ServerGone)?;
        stdin
            .write_all(b"memory\n")
            .and_then(|()| stdin.flush())
            .map_err(BenchError::io("many: ask the server process"))?;
        let line = self.read_line()?;
        let bad = BenchError::Protocol("many: the server's memory line does not parse");
        let mut fields = line.split(' ');
        let (Some("memory"), Some(heap), Some(rss), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(bad);
        };
        Ok(ServerMemory {
            heap_bytes: heap.parse().ok(),
            resident_bytes: rss.parse().map_err(|_| bad)?,
        })
    }

    /// Closes the server's stdin and waits for it to exit (killing it
    /// after [`STOP_WAIT`]); an exit other than success is an error.
    pub fn stop(mut self) -> Result<(), BenchError> {
        drop(self.stdin.take());
        let deadline = Instant::now() + STOP_WAIT;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(_)) => {
                    return Err(BenchError::Protocol("many: the server process failed"));
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(BenchError::Protocol(
                        "many: the server process did not stop",
                    ));
                }
                Err(error) => return Err(BenchError::io("many: wait for the server")(error)),
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Only a server abandoned on an error path is still running here.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
