//! File transfer with an integrity check: the server sends a file's length,
//! its bytes and their SHA-256; the client verifies all three.
//!
//! ```text
//! cargo run --release -p brisk-io --example file_transfer -- FILE
//! ```

use brisk_io::{Endpoint, ServerConfig, keys};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: file_transfer FILE")?;
    let data = std::fs::read(&path)?;
    let (_, keypair) = keys::generate()?;
    let server = Endpoint::server(ServerConfig::new("127.0.0.1:0".parse()?, keypair))?;
    let (addr, key) = (server.local_addr(), server.public_key().unwrap_or_default());
    let digest = Sha256::digest(&data);
    tokio::spawn(async move {
        let conn = server.accept().await?;
        let mut stream = conn.open_stream().await.ok()?;
        stream
            .write_all(&(data.len() as u64).to_be_bytes())
            .await
            .ok()?;
        stream.write_all(&data).await.ok()?;
        stream.write_all(&digest).await.ok()?;
        stream.shutdown().await.ok()
    });

    let client = Endpoint::client("127.0.0.1:0".parse()?)?;
    let conn = client.connect(addr, key).await?;
    let mut stream = conn.accept_stream().await?;
    let start = std::time::Instant::now();
    let mut len = [0u8; 8];
    stream.read_exact(&mut len).await?;
    let mut body = vec![0u8; u64::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).await?;
    let mut sent_digest = [0u8; 32];
    stream.read_exact(&mut sent_digest).await?;
    let ok = Sha256::digest(&body).as_slice() == sent_digest;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{} bytes in {secs:.3} s ({:.2} Gbit/s), SHA-256 {}",
        body.len(),
        body.len() as f64 * 8.0 / secs / 1e9,
        if ok { "verified" } else { "MISMATCH" }
    );
    if ok {
        Ok(())
    } else {
        Err("hash mismatch".into())
    }
}
