//! Bulk throughput: one connection, one stream, `bytes` from client to
//! server in 64 KiB writes.
//!
//! The clock starts before the stream is opened (after the handshake) and
//! stops when the server's byte count comes back, so every byte has been
//! delivered to the server application. CPU time is the process's
//! user + system time over the same window.

use std::time::{Duration, Instant};

use serde::ser::{Serialize, SerializeStruct, Serializer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::{BenchError, Contender, cpu};

/// Size of each application write and read.
pub const CHUNK_BYTES: usize = 64 * 1024;

const GIB: f64 = (1u64 << 30) as f64;

/// One contender's bulk result. Its JSON form adds the derived rates.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkResult {
    pub contender: String,
    /// How many transfers were pooled into this result.
    pub rounds: u32,
    pub bytes: u64,
    pub wall_secs: f64,
    pub cpu_secs: f64,
}

impl BulkResult {
    /// Pools another round of the same contender: bytes, wall and CPU
    /// time add up, as if it were one longer transfer.
    pub fn absorb(&mut self, other: &BulkResult) {
        self.rounds += other.rounds;
        self.bytes += other.bytes;
        self.wall_secs += other.wall_secs;
        self.cpu_secs += other.cpu_secs;
    }

    /// Goodput over wall time, in Gbit/s.
    pub fn gbit_per_sec(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.wall_secs / 1e9
    }

    /// CPU-seconds (both ends together) spent per GiB moved.
    pub fn cpu_secs_per_gib(&self) -> f64 {
        self.cpu_secs / (self.bytes as f64 / GIB)
    }

    /// GiB moved per CPU-second: the efficiency the ratios compare.
    pub fn gib_per_cpu_sec(&self) -> f64 {
        (self.bytes as f64 / GIB) / self.cpu_secs
    }
}

impl Serialize for BulkResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("BulkResult", 8)?;
        s.serialize_field("contender", &self.contender)?;
        s.serialize_field("rounds", &self.rounds)?;
        s.serialize_field("bytes", &self.bytes)?;
        s.serialize_field("wall_secs", &self.wall_secs)?;
        s.serialize_field("cpu_secs", &self.cpu_secs)?;
        s.serialize_field("gbit_per_sec", &self.gbit_per_sec())?;
        s.serialize_field("cpu_secs_per_gib", &self.cpu_secs_per_gib())?;
        s.serialize_field("gib_per_cpu_sec", &self.gib_per_cpu_sec())?;
        s.end()
    }
}

/// Runs the client side: send `bytes`, wait for the server's count.
pub async fn run_client<C: Contender>(
    contender: &C,
    client: &mut C::Client,
    bytes: u64,
) -> Result<BulkResult, BenchError> {
    let chunk = vec![0x5a_u8; CHUNK_BYTES];
    let cpu_start = cpu::process_cpu().map_err(BenchError::io("getrusage"))?;
    let start = Instant::now();
    let mut stream = contender.open_stream(client).await?;
    let mut left = bytes;
    while left > 0 {
        let len = usize::try_from(left).map_or(CHUNK_BYTES, |left| left.min(CHUNK_BYTES));
        stream
            .write_all(&chunk[..len])
            .await
            .map_err(BenchError::io("bulk: write"))?;
        left -= len as u64;
    }
    stream
        .shutdown()
        .await
        .map_err(BenchError::io("bulk: finish the stream"))?;
    let mut count = [0u8; 8];
    stream
        .read_exact(&mut count)
        .await
        .map_err(BenchError::io("bulk: read the server's count"))?;
    let wall = start.elapsed();
    let cpu = cpu::process_cpu().map_err(BenchError::io("getrusage"))? - cpu_start;
    let received_bytes = u64::from_be_bytes(count);
    if received_bytes != bytes {
        return Err(BenchError::ShortTransfer {
            sent_bytes: bytes,
            received_bytes,
        });
    }
    Ok(BulkResult {
        contender: contender.name().to_owned(),
        rounds: 1,
        bytes,
        wall_secs: secs(wall),
        cpu_secs: secs(cpu),
    })
}

/// Server side: count bytes until the end of the stream, answer the count.
pub async fn serve_stream<S>(mut stream: S) -> Result<(), BenchError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut total: u64 = 0;
    loop {
        let len = stream
            .read(&mut buf)
            .await
            .map_err(BenchError::io("bulk: server read"))?;
        if len == 0 {
            break;
        }
        total += len as u64;
    }
    stream
        .write_all(&total.to_be_bytes())
        .await
        .map_err(BenchError::io("bulk: server writes the count"))?;
    stream
        .shutdown()
        .await
        .map_err(BenchError::io("bulk: server finishes"))
}

/// Seconds with a floor of one nanosecond, so no ratio divides by zero.
fn secs(duration: Duration) -> f64 {
    duration.max(Duration::from_nanos(1)).as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_numbers() {
        // quinn's reference point: 3.3 Gbit/s at 4.7 CPU-s/GiB.
        let mut result = BulkResult {
            contender: "x".into(),
            rounds: 1,
            bytes: 1 << 30,
            wall_secs: 8.0 * GIB / 3.3e9,
            cpu_secs: 4.7,
        };
        assert!((result.gbit_per_sec() - 3.3).abs() < 1e-9);
        assert!((result.cpu_secs_per_gib() - 4.7).abs() < 1e-9);
        assert!((result.gib_per_cpu_sec() - 1.0 / 4.7).abs() < 1e-9);
        // A second, slower round: the pool weighs each byte equally.
        let slow = BulkResult {
            wall_secs: result.wall_secs * 3.0,
            cpu_secs: 9.4,
            ..result.clone()
        };
        result.absorb(&slow);
        assert_eq!((result.rounds, result.bytes), (2, 2 << 30));
        assert!((result.gbit_per_sec() - 3.3 / 2.0).abs() < 1e-9);
        assert!((result.cpu_secs_per_gib() - 7.05).abs() < 1e-9);
    }

    #[tokio::test]
    async fn server_counts_and_answers() {
        let (mut client, server) = tokio::io::duplex(4096);
        let serving = tokio::spawn(serve_stream(server));
        client.write_all(&[1u8; 100_000]).await.unwrap();
        client.shutdown().await.unwrap();
        let mut count = [0u8; 8];
        client.read_exact(&mut count).await.unwrap();
        assert_eq!(u64::from_be_bytes(count), 100_000);
        serving.await.unwrap().unwrap();
    }
}
