//! `brisk serve --listen ADDR --key FILE [--root DIR]`: serves the files
//! under DIR over Brisk, one request per stream.
//!
//! The exchange (docs/IO.md): the client sends `GET /path\n` and a FIN;
//! the server answers `OK <length>\n`, the file's bytes, and the file's
//! SHA-256 as 64 hex digits and `\n`, or `ERR <reason>\n`; then FIN.

use anyhow::{Context, Result};
use brisk_io::{Connection, Endpoint, ServerConfig, Stream, keys};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The longest request line accepted.
pub const MAX_REQUEST_BYTES: u64 = 4096;
/// File bytes read and written per step, at most: each step reads only
/// what the stream can take now, into a buffer dropped before waiting
/// again, so a client that never reads holds no file buffer of ours, only
/// what the transport's send budget lets it pin.
const CHUNK_BYTES: u64 = 64 << 10;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, e.g. [::]:4433 (IPv6 and IPv4) or 0.0.0.0:4433.
    #[arg(long)]
    listen: SocketAddr,
    /// The server's secret key file (from `brisk keygen`).
    #[arg(long)]
    key: PathBuf,
    /// Directory whose files are served; nothing outside it is.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Congestion controller: bbr, cubic, newreno or prague. BBR by
    /// default: it paces at the path's measured rate instead of halving at
    /// each loss, so random loss (radio, a bad cable) costs it little
    /// (16 Mbit/s of 20 at 10% loss in the simulator, where CUBIC gets 1.5)
    /// and a clean path the same (within 1% of CUBIC).
    #[arg(long, default_value = "bbr")]
    cc: String,
    /// Heap all connections may pin through their buffers together, in
    /// MiB: send budgets and receive windows shrink to fit
    /// --max-connections of them (down to 64 KiB each way; below that,
    /// fewer connections are admitted).
    #[arg(long, default_value_t = 2048)]
    memory_budget_mib: u64,
    /// Most connections served at once (with the default budget, each gets
    /// 1 MiB each way: 170 Mbit/s at a 50 ms round trip).
    #[arg(long, default_value_t = 1_000)]
    max_connections: usize,
}

pub fn run(args: ServeArgs) -> Result<()> {
    let keypair = keys::load_secret(&args.key)?;
    let root = args
        .root
        .canonicalize()
        .with_context(|| format!("root {}", args.root.display()))?;
    let mut config = ServerConfig::new(args.listen, keypair);
    config.endpoint.transport.cc = crate::perf::parse_cc(&args.cc)?;
    config.max_connections = args.max_connections;
    config.memory_budget_bytes = Some(args.memory_budget_mib.saturating_mul(1 << 20));
    crate::perf::runtime()?.block_on(async move {
        let server = Endpoint::server(config)
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        eprintln!(
            "brisk: serving {} on {} (public key {})",
            root.display(),
            server.local_addr(),
            keys::to_hex(&server.public_key().unwrap_or_default())
        );
        let root = Arc::new(root);
        while let Some(conn) = server.accept().await {
            tokio::spawn(serve_connection(conn, root.clone()));
        }
        Err(crate::perf::server_stopped(&server))
    })
}

async fn serve_connection(conn: Connection, root: Arc<PathBuf>) {
    while let Ok(stream) = conn.accept_stream().await {
        let root = root.clone();
        tokio::spawn(async move {
            if let Err(e) = serve_stream(stream, &root).await {
                eprintln!("brisk: stream failed: {e}");
            }
        });
    }
}

async fn serve_stream(mut s: Stream, root: &Path) -> std::io::Result<()> {
    let mut request = Vec::new();
    (&mut s)
        .take(MAX_REQUEST_BYTES)
        .read_to_end(&mut request)
        .await?;
    let file = std::str::from_utf8(&request)
        .ok()
        .and_then(|r| r.trim_end().strip_prefix("GET "))
        .ok_or_else(|| "bad request: expected `GET /path`".to_owned())
        .and_then(|path| resolve(root, path));
    let path = match file {
        Ok(p) => p,
        Err(reason) => {
            s.write_all(format!("ERR {reason}\n").as_bytes()).await?;
            return s.shutdown().await;
        }
    };
    let mut f = match tokio::fs::File::open(&path).await {
        Ok(f) => f,
        Err(e) => {
            s.write_all(format!("ERR cannot open: {e}\n").as_bytes())
                .await?;
            return s.shutdown().await;
        }
    };
    let len = f.metadata().await?.len();
    s.write_all(format!("OK {len}\n").as_bytes()).await?;
    let mut hasher = Sha256::new();
    let mut left = len;
    while left > 0 {
        let room = s.writable().await.map_err(std::io::Error::from)?;
        let step = room.min(CHUNK_BYTES).min(left);
        // At most CHUNK_BYTES, so the cast cannot truncate.
        let mut buf = vec![0u8; step as usize];
        let n = f.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::Error::other("file shrank while being served"));
        }
        hasher.update(&buf[..n]);
        s.write_all(&buf[..n]).await?;
        left -= n as u64;
    }
    let digest = keys::to_hex(&hasher.finalize());
    s.write_all(format!("{digest}\n").as_bytes()).await?;
    // A client that has checked the hash may close before our FIN is
    // acknowledged: that is success, not an error worth reporting.
    let _ = s.shutdown().await;
    Ok(())
}

/// The file under `root` that `request` names, refusing anything that
/// escapes it: `..` components, and symbolic links that lead outside.
pub fn resolve(root: &Path, request: &str) -> Result<PathBuf, String> {
    if request.contains('\0') {
        return Err("bad path".into());
    }
    let mut path = root.to_path_buf();
    for part in Path::new(request.trim_start_matches('/')).components() {
        match part {
            Component::Normal(p) => path.push(p),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err("path escapes the served directory".into());
            }
        }
    }
    let real = path.canonicalize().map_err(|_| "no such file".to_owned())?;
    if !real.starts_with(root) {
        return Err("path escapes the served directory".into());
    }
    if !real.is_file() {
        return Err("not a file".into());
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_serves_files_inside_the_root_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), b"a").unwrap();
        std::fs::write(dir.path().join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(
            resolve(&root, "/sub/a.txt").unwrap(),
            root.join("sub/a.txt")
        );
        assert_eq!(
            resolve(&root, "sub/./a.txt").unwrap(),
            root.join("sub/a.txt")
        );
        for bad in [
            "/../secret",
            "sub/../../secret",
            "/link",
            "/sub",
            "/nope",
            "a\0b",
        ] {
            assert!(resolve(&root, bad).is_err(), "{bad}");
        }
    }
}
