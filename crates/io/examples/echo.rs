//! Echo: a server that returns every stream's bytes, and a client that
//! sends a line and prints the answer.
//!
//! ```text
//! cargo run -p brisk-io --example echo
//! ```

use brisk_io::{Endpoint, ServerConfig, keys};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_, keypair) = keys::generate()?;
    let server = Endpoint::server(ServerConfig::new("[::1]:0".parse()?, keypair))?;
    let (addr, key) = (server.local_addr(), server.public_key().unwrap_or_default());
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                while let Ok(mut stream) = conn.accept_stream().await {
                    tokio::spawn(async move {
                        let mut buf = Vec::new();
                        stream.read_to_end(&mut buf).await?;
                        stream.write_all(&buf).await?;
                        stream.shutdown().await
                    });
                }
            });
        }
    });

    let client = Endpoint::client("[::]:0".parse()?)?;
    let conn = client.connect(addr, key).await?;
    let mut stream = conn.open_stream().await?;
    stream.write_all(b"hello over brisk\n").await?;
    stream.shutdown().await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    print!("echoed: {answer}");
    if let Some(s) = conn.stats() {
        println!(
            "rtt {:?}, cwnd {} bytes, ECN {:?}",
            s.smoothed_rtt, s.cwnd_bytes, s.ecn_state
        );
    }
    Ok(())
}
