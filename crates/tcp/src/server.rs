//! The experiment server: answers [`crate::app`] requests with the
//! responsive options on or off, so each can be measured alone.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use serde::Serialize;
use tokio::net::{TcpListener, TcpStream};

use crate::app::{self, LineReader, Scheduler};
use crate::fastopen::{self, TfoError};
use crate::lowat::{LowatWriter, WriterConfig};
use crate::sockopt::{self, SockoptError};
use crate::sysctl::Sysctls;

/// What to turn on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServeConfig {
    /// Address and port to listen on.
    pub listen: SocketAddr,
    /// Low-water mark and write sizing.
    pub writer: WriterConfig,
    /// Accept data in SYNs, with this many pending (TCP Fast Open).
    pub fastopen_queue: Option<u32>,
    /// Congestion control for accepted connections.
    pub congestion: Option<String>,
    /// Largest frame payload (a sensible unit without sizing).
    pub frame_payload_bytes: usize,
}

impl ServeConfig {
    /// A config for `listen` with every option off and frames of
    /// [`app::DEFAULT_FRAME_PAYLOAD`] bytes.
    pub fn new(listen: SocketAddr) -> Self {
        ServeConfig {
            listen,
            writer: WriterConfig::default(),
            fastopen_queue: None,
            congestion: None,
            frame_payload_bytes: app::DEFAULT_FRAME_PAYLOAD,
        }
    }
}

/// Why the server could not start or a connection failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    /// The listening socket could not be opened.
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        #[source]
        /// The OS error.
        source: io::Error,
    },
    #[error(transparent)]
    /// Fast Open was asked for and is unavailable.
    FastOpen(#[from] TfoError),
    #[error(transparent)]
    /// A socket option (`TCP_NOTSENT_LOWAT`, `TCP_CONGESTION`) was refused.
    Sockopt(#[from] SockoptError),
    #[error("connection: {0}")]
    /// Reading or writing a connection failed.
    Io(#[from] io::Error),
    #[error("bad request: {0}")]
    /// A request line was refused.
    Request(#[from] app::RequestError),
}

/// A bound server.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    config: Arc<ServeConfig>,
}

impl Server {
    /// Binds and applies listener options; fails early when the kernel
    /// would ignore or refuse them.
    pub async fn bind(config: ServeConfig) -> Result<Self, ServeError> {
        let listener = match config.fastopen_queue {
            Some(queue) => fastopen::listen(&Sysctls::system(), config.listen, queue)?,
            None => {
                TcpListener::bind(config.listen)
                    .await
                    .map_err(|source| ServeError::Listen {
                        addr: config.listen,
                        source,
                    })?
            }
        };
        if let Some(cc) = &config.congestion {
            // Accepted sockets inherit the listener's algorithm.
            sockopt::set_congestion(&listener, cc)?;
        }
        Ok(Server {
            listener,
            config: Arc::new(config),
        })
    }

    /// The address actually bound (its port when port 0 was asked for).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves connections until the task is dropped. Per-connection errors
    /// end that connection only; they are reported through `on_error`.
    pub async fn run(self, on_error: impl Fn(SocketAddr, ServeError) + Send + Sync + 'static) {
        let on_error = Arc::new(on_error);
        loop {
            let (stream, peer) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    on_error(self.config.listen, ServeError::Io(e));
                    continue;
                }
            };
            let config = Arc::clone(&self.config);
            let on_error = Arc::clone(&on_error);
            tokio::spawn(async move {
                if let Err(e) = serve_connection(stream, &config).await {
                    on_error(peer, e);
                }
            });
        }
    }
}

/// Reads requests and writes framed responses on one connection until the
/// client closes its side and everything is sent.
pub async fn serve_connection(stream: TcpStream, config: &ServeConfig) -> Result<(), ServeError> {
    stream.set_nodelay(true)?;
    let mut writer = LowatWriter::new(&stream, config.writer)?;
    let mut scheduler = Scheduler::new(config.frame_payload_bytes);
    let mut lines = LineReader::default();
    let mut buf = vec![0u8; 4096];
    let mut client_done = false;
    loop {
        if client_done && !scheduler.has_data() {
            return Ok(());
        }
        tokio::select! {
            biased;
            readable = stream.readable(), if !client_done => {
                readable?;
                match stream.try_read(&mut buf) {
                    Ok(0) => client_done = true,
                    Ok(n) => {
                        for request in lines.handle_bytes(&buf[..n])? {
                            scheduler.handle_request(request);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e.into()),
                }
            }
            budget = writer.ready(), if scheduler.has_data() => {
                let unit = scheduler.poll_unit(budget?);
                writer.write_unit(&unit).await?;
            }
        }
    }
}
