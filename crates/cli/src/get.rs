//! `brisk get brisk://HOST:PORT/PATH --server-key KEY [-o FILE]`: fetches
//! one file from `brisk serve` and checks its length and SHA-256 before
//! keeping it. The request rides in the first flight (early data) unless
//! `--no-early`, so the answer starts one round trip after the start. On a terminal it shows a progress bar; at the end it prints
//! when each phase ended, as `curl -w` does (handshake, first byte, total),
//! or all of it as one JSON object with `--json`.

use anyhow::{Context, Result, bail};
use brisk_io::{ConnectError, Endpoint, EndpointConfig, Idempotent, keys};
use indicatif::ProgressBar;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

#[derive(clap::Args)]
pub struct GetArgs {
    /// brisk://HOST:PORT/PATH (HOST a name, an IPv4 address or [IPv6]).
    url: String,
    /// The server's public key: a file from `brisk keygen`, or 64 hex digits.
    #[arg(long)]
    server_key: String,
    /// Where to write the file (default: the last part of PATH).
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// Seconds to wait for the server's handshake.
    #[arg(long, default_value = "5", value_parser = crate::seconds::positive)]
    timeout: Duration,
    /// Print the result and timings as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Send the request only after the handshake, one round trip later,
    /// instead of in the first flight (early data; a file read is safe to
    /// repeat, and the server refuses replays it has seen).
    #[arg(long)]
    no_early: bool,
}

/// The parts of a `brisk://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    pub path: String,
}

/// Parses `brisk://HOST:PORT[/PATH]`.
pub fn parse_url(url: &str) -> Result<Url> {
    let rest = url
        .strip_prefix("brisk://")
        .with_context(|| format!("{url}: expected brisk://HOST:PORT/PATH"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, port) = v6
            .split_once("]:")
            .with_context(|| format!("{url}: expected [IPv6]:PORT"))?;
        (host, port)
    } else {
        authority
            .rsplit_once(':')
            .with_context(|| format!("{url}: the port is missing"))?
    };
    if host.is_empty() {
        bail!("{url}: the host is missing");
    }
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .with_context(|| format!("{url}: bad port {port:?}"))?;
    Ok(Url {
        host: host.to_owned(),
        port,
        path: path.to_owned(),
    })
}

/// The first address `host:port` resolves to.
pub async fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    let mut addrs = tokio::net::lookup_host((host, port))
        .await
        .with_context(|| format!("cannot resolve {host}"))?;
    addrs
        .next()
        .with_context(|| format!("{host} has no address"))
}

/// A client endpoint of the same family as `server`.
pub fn client_for(server: SocketAddr, handshake_timeout: Duration) -> Result<Endpoint> {
    let bind: SocketAddr = if server.is_ipv6() {
        "[::]:0".parse()?
    } else {
        "0.0.0.0:0".parse()?
    };
    let config = EndpointConfig {
        handshake_timeout,
        ..EndpointConfig::default()
    };
    Ok(Endpoint::client_with(bind, config)?)
}

pub fn run(args: GetArgs) -> Result<()> {
    let url = parse_url(&args.url)?;
    let key = keys::load_public(&args.server_key)?;
    let output = match args.output {
        Some(o) => o,
        None => {
            let name = url.path.rsplit('/').next().unwrap_or("");
            if name.is_empty() || name == ".." || name == "." {
                bail!("{}: no file name in the path; use -o FILE", args.url);
            }
            PathBuf::from(name)
        }
    };
    let timeout = args.timeout.max(Duration::from_millis(100));
    crate::perf::runtime()?.block_on(async move {
        let addr = resolve(&url.host, url.port).await?;
        let client = client_for(addr, timeout)?;
        let start = Instant::now();
        let request = format!("GET {}\n", url.path);
        // In the first flight the request reaches the server half a round
        // trip in, and the answer starts one round trip after we began.
        let early = if args.no_early {
            None
        } else {
            match client
                .connect_with_request(addr, key, Idempotent::declare(request.as_bytes()))
                .await
            {
                Ok(sent) => Some(sent),
                // Too long for a first flight: send it after the handshake.
                Err(ConnectError::EarlyData(_)) => None,
                Err(e) => return Err(e.into()),
            }
        };
        let early_data = early.is_some();
        let (conn, s) = match early {
            Some(sent) => sent,
            None => {
                let conn = client.connect(addr, key).await?;
                let mut s = conn.open_stream().await?;
                s.write_all(request.as_bytes()).await?;
                s.shutdown().await?;
                (conn, s)
            }
        };
        let handshake = start.elapsed();
        let mut r = BufReader::with_capacity(1 << 20, s);
        let header = read_line(&mut r).await?;
        let first_byte = start.elapsed();
        let len: u64 = match header.split_once(' ') {
            Some(("OK", n)) => n.parse().context("bad length from the server")?,
            Some(("ERR", reason)) => bail!("server refused {}: {reason}", url.path),
            _ => bail!("not a brisk file server (answered {header:?})"),
        };
        let part = output.with_extension("part");
        let file = tokio::fs::File::create(&part)
            .await
            .with_context(|| format!("creating {}", part.display()))?;
        let mut file = tokio::io::BufWriter::with_capacity(1 << 20, file);
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut left = len;
        let bar = progress_bar(len, args.json);
        while left > 0 {
            let want = buf.len().min(left as usize);
            let n = r.read(&mut buf[..want]).await?;
            if n == 0 {
                let _ = tokio::fs::remove_file(&part).await;
                bail!("the server stopped after {} of {len} bytes", len - left);
            }
            hasher.update(&buf[..n]);
            file.write_all(&buf[..n]).await?;
            left -= n as u64;
            bar.inc(n as u64);
        }
        bar.finish_and_clear();
        file.flush().await?;
        let elapsed = start.elapsed();
        let expected = read_line(&mut r).await?;
        let actual = keys::to_hex(&hasher.finalize());
        if expected != actual {
            let _ = tokio::fs::remove_file(&part).await;
            bail!("SHA-256 mismatch: server sent {expected}, received data hashes to {actual}");
        }
        tokio::fs::rename(&part, &output)
            .await
            .with_context(|| format!("renaming to {}", output.display()))?;
        let total = elapsed.as_secs_f64();
        let bps = len as f64 * 8.0 / total.max(1e-9);
        if args.json {
            println!(
                "{}",
                json!({
                    "url": args.url,
                    "file": output.display().to_string(),
                    "bytes": len,
                    "sha256": actual,
                    "verified": true,
                    "remote": addr.to_string(),
                    "early_data": early_data,
                    "handshake_s": handshake.as_secs_f64(),
                    "first_byte_s": first_byte.as_secs_f64(),
                    "total_s": total,
                    "bits_per_second": bps,
                })
            );
        } else {
            eprintln!(
                "brisk: {} in {total:.2} s ({}), SHA-256 {actual} verified -> {}",
                crate::perf::format_bytes(len),
                crate::perf::format_rate(bps),
                output.display()
            );
            eprintln!(
                "brisk: {addr}: handshake {:.1} ms, first byte {:.1} ms, total {:.1} ms ({})",
                handshake.as_secs_f64() * 1000.0,
                first_byte.as_secs_f64() * 1000.0,
                total * 1000.0,
                if early_data {
                    "request in the first flight"
                } else {
                    "request after the handshake"
                }
            );
        }
        conn.close(0, b"done");
        client.wait_idle().await;
        Ok(())
    })
}

/// A byte-count bar on a terminal, when the output is text.
fn progress_bar(len: u64, json: bool) -> ProgressBar {
    if json {
        return ProgressBar::hidden();
    }
    crate::progress::bar(
        len,
        "{bar:40} {decimal_bytes}/{decimal_total_bytes} {decimal_bytes_per_sec} eta {eta}",
    )
}

/// One `\n`-terminated line of at most a few hundred bytes.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> Result<String> {
    let mut line = Vec::new();
    let n = (&mut *r).take(512).read_until(b'\n', &mut line).await?;
    if n == 0 || line.last() != Some(&b'\n') {
        bail!("the server's answer ended early");
    }
    line.pop();
    String::from_utf8(line).context("the server's answer is not text")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_with_names_v4_and_v6_hosts() {
        let u = parse_url("brisk://example.com:4433/dir/file.bin").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("example.com", 4433, "/dir/file.bin")
        );
        let u = parse_url("brisk://[::1]:443/x").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 443));
        let u = parse_url("brisk://127.0.0.1:9").unwrap();
        assert_eq!(u.path, "/");
        for bad in [
            "http://a:1/",
            "brisk://a/",
            "brisk://:1/",
            "brisk://a:0/",
            "brisk://a:99999/",
            "brisk://[::1/",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
