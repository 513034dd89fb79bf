//! Bodies that never end: the large download and the upload stream are
//! endless so the load lasts as long as the test wants, not as long as a file.

use bytes::Bytes;
use hyper::body::{Body, Frame};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

/// Size of each chunk handed to HTTP/2; it is cut into frames below that.
const CHUNK: usize = 256 * 1024;

/// An endless body of one repeated chunk. HTTP/2 polls it only when flow
/// control has room, so it does not spin. Counts the bytes it hands over.
pub(crate) struct Endless {
    chunk: Bytes,
    sent: Arc<AtomicU64>,
}

impl Endless {
    pub(crate) fn new(sent: Arc<AtomicU64>) -> Self {
        Self {
            chunk: Bytes::from(vec![b'x'; CHUNK]),
            sent,
        }
    }
}

impl Body for Endless {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.sent
            .fetch_add(self.chunk.len() as u64, Ordering::Relaxed);
        Poll::Ready(Some(Ok(Frame::data(self.chunk.clone()))))
    }

    fn is_end_stream(&self) -> bool {
        false
    }
}
