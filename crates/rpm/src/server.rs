//! The responsiveness server: the draft's config, small, large and upload
//! endpoints over HTTP/2 on TLS with a self-signed certificate.

use crate::body::Endless;
use crate::config::{CONFIG_PATH, Config, LARGE_PATH, SMALL_PATH, UPLOAD_PATH};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// How the server treats accepted sockets.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// `TCP_NOTSENT_LOWAT` in bytes on every accepted socket, as the draft
    /// recommends for servers: unsent data stays in the application, so a
    /// probe's response is not queued behind megabytes of load in the kernel.
    pub notsent_lowat: Option<u32>,
    /// Extra names for the certificate besides the listening address.
    pub names: Vec<String>,
}

/// A bound server; `run` serves until the task is dropped.
pub struct Server {
    listener: TcpListener,
    acceptor: TlsAcceptor,
    options: ServerOptions,
}

impl Server {
    /// Binds `addr` and makes the certificate.
    pub async fn bind(addr: SocketAddr, options: ServerOptions) -> Result<Self, String> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let mut names = options.names.clone();
        names.push(addr.ip().to_string());
        names.push("localhost".into());
        let tls = crate::tls::server_config(names)?;
        Ok(Self {
            listener,
            acceptor: TlsAcceptor::from(Arc::new(tls)),
            options,
        })
    }

    /// The address actually bound (port 0 picks one).
    pub fn local_addr(&self) -> Result<SocketAddr, String> {
        self.listener
            .local_addr()
            .map_err(|e| format!("listening socket: {e}"))
    }

    /// Accepts connections forever; each one is served on its own task.
    pub async fn run(self) -> Result<(), String> {
        loop {
            let (stream, _peer) = match self.listener.accept().await {
                Ok(x) => x,
                // Running out of descriptors is passing; keep serving.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            if let Some(bytes) = self.options.notsent_lowat {
                brisk_tcp::sockopt::set_notsent_lowat(&stream, bytes)
                    .map_err(|e| format!("TCP_NOTSENT_LOWAT on an accepted socket: {e}"))?;
            }
            let _ = stream.set_nodelay(true);
            let acceptor = self.acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                tls.get_mut()
                    .1
                    .set_buffer_limit(Some(crate::tls::SEND_BUFFER_LIMIT));
                let service = hyper::service::service_fn(handle);
                // A client that goes away mid-stream ends its connection only.
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .initial_stream_window_size(4 << 20)
                    .initial_connection_window_size(8 << 20)
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    }
}

type ResponseBody = BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = status;
    if let Ok(v) = http::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    response
}

async fn handle(req: Request<Incoming>) -> Result<Response<ResponseBody>, Infallible> {
    let path = req.uri().path().to_string();
    Ok(match (req.method().as_str(), path.as_str()) {
        ("GET", CONFIG_PATH) => {
            let authority = req
                .uri()
                .authority()
                .map(|a| a.as_str().to_string())
                .or_else(|| {
                    req.headers()
                        .get(http::header::HOST)
                        .and_then(|h| h.to_str().ok())
                        .map(str::to_string)
                });
            match authority {
                Some(a) => {
                    let json = serde_json::to_vec(&Config::for_authority(&a)).unwrap_or_default();
                    full(StatusCode::OK, "application/json", json)
                }
                None => full(
                    StatusCode::BAD_REQUEST,
                    "text/plain",
                    "request names no host\n",
                ),
            }
        }
        ("GET", SMALL_PATH) => full(StatusCode::OK, "application/octet-stream", &b"x"[..]),
        ("GET", LARGE_PATH) => {
            let mut response = Response::new(Endless::new(Arc::new(AtomicU64::new(0))).boxed());
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/octet-stream"),
            );
            response
        }
        ("POST" | "PUT", UPLOAD_PATH) => {
            let mut body = req.into_body();
            let mut received: u64 = 0;
            while let Some(frame) = body.frame().await {
                match frame {
                    Ok(f) => {
                        if let Some(d) = f.data_ref() {
                            received += d.len() as u64;
                        }
                    }
                    Err(_) => break,
                }
            }
            full(StatusCode::OK, "text/plain", format!("{received}\n"))
        }
        _ => full(StatusCode::NOT_FOUND, "text/plain", "not found\n"),
    })
}
