//! Interactive messages: lines typed on stdin go to the server, which
//! answers each with its length and the connection's current RTT. Each
//! message is written only when the stream is writable under the
//! low-water-mark rule, so nothing stale queues behind it.
//!
//! ```text
//! cargo run -p brisk-io --example messages
//! ```

use brisk_io::{Endpoint, ServerConfig, keys};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_, keypair) = keys::generate()?;
    let server = Endpoint::server(ServerConfig::new("127.0.0.1:0".parse()?, keypair))?;
    let (addr, key) = (server.local_addr(), server.public_key().unwrap_or_default());
    tokio::spawn(async move {
        let conn = server.accept().await?;
        let stream = conn.accept_stream().await.ok()?;
        let (r, mut w) = tokio::io::split(stream);
        let mut lines = BufReader::new(r).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let rtt = conn.stats().map(|s| s.smoothed_rtt).unwrap_or_default();
            let reply = format!("server got {} bytes (rtt {rtt:?})\n", line.len());
            w.write_all(reply.as_bytes()).await.ok()?;
        }
        w.shutdown().await.ok()
    });

    let client = Endpoint::client("127.0.0.1:0".parse()?)?;
    let conn = client.connect(addr, key).await?;
    let stream = conn.open_stream().await?;
    let writable = conn.clone();
    let id = stream.id();
    let (r, mut w) = tokio::io::split(stream);
    let printer = tokio::spawn(async move {
        let mut replies = BufReader::new(r).lines();
        while let Ok(Some(reply)) = replies.next_line().await {
            println!("{reply}");
        }
    });
    println!("type messages; end with Ctrl-D");
    let mut input = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = input.next_line().await? {
        // Wait until the previous messages have left: a new one never
        // queues behind a backlog.
        writable.writable(id).await?;
        w.write_all(format!("{line}\n").as_bytes()).await?;
    }
    w.shutdown().await?;
    printer.await?;
    Ok(())
}
