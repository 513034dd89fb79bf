//! Runs one test for one contender: a server thread and a client thread,
//! each with its own current-thread tokio runtime, in this process.
//!
//! The layout is the same for every contender: the two ends never share a
//! scheduler, so each can use one of the machine's cores, and the process's
//! CPU time ([`crate::cpu`]) counts both.

use std::net::IpAddr;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::{mpsc, watch};

use crate::{BenchError, Contender, Test, bulk, rpc};

fn runtime() -> Result<Runtime, BenchError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(BenchError::io("tokio runtime"))
}

/// Starts a server for `test`, connects a client, and runs `body` on the
/// client; connecting and `body` together get at most `limit`. The server
/// is stopped before the client closes, so the server reads the client's
/// departure as the end, not as an error.
pub fn run_pair<C, R>(
    contender: &Arc<C>,
    ip: IpAddr,
    test: Test,
    limit: Duration,
    body: impl AsyncFnOnce(&C, &mut C::Client) -> Result<R, BenchError>,
) -> Result<R, BenchError>
where
    C: Contender,
{
    let (ticket_tx, ticket_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = watch::channel(false);
    let server_side = Arc::clone(contender);
    let server = thread::Builder::new()
        .name(format!("{}-server", contender.name()))
        .spawn(move || -> Result<(), BenchError> {
            runtime()?.block_on(async move {
                let (mut server, ticket) = server_side.listen(ip, test).await?;
                // The client may have failed to start; the stop signal ends us then.
                let _ = ticket_tx.send(ticket);
                serve(&*server_side, &mut server, test, stop_rx).await
            })
        })
        .map_err(BenchError::io("spawn the server thread"))?;

    let outcome = match ticket_rx.recv() {
        Ok(ticket) => runtime().and_then(|rt| {
            rt.block_on(async {
                let run = async {
                    let mut client = contender.connect(ticket, test).await?;
                    let result = body(contender, &mut client).await;
                    Ok((client, result))
                };
                let (client, result) = tokio::time::timeout(limit, run)
                    .await
                    .map_err(|_| BenchError::TimedOut { limit })??;
                let _ = stop_tx.send(true);
                contender.close(client).await;
                result
            })
        }),
        Err(_) => Err(BenchError::ServerGone),
    };
    let _ = stop_tx.send(true);
    let served = server.join().map_err(|_| BenchError::Panicked("server"))?;
    match (outcome, served) {
        // The server's own error says more than "the server is gone".
        (Err(BenchError::ServerGone), Err(error)) => Err(error),
        (Err(error), _) | (Ok(_), Err(error)) => Err(error),
        (Ok(result), Ok(())) => Ok(result),
    }
}

/// Accepts streams until the client leaves or the client side says stop,
/// serving each in a task of its own (as a real server would, so a stream
/// that lingers at its end never holds up the next request). Errors after
/// the stop are the client leaving, not failures.
async fn serve<C: Contender>(
    contender: &C,
    server: &mut C::Server,
    test: Test,
    mut stop: watch::Receiver<bool>,
) -> Result<(), BenchError> {
    let (error_tx, mut error_rx) = mpsc::unbounded_channel();
    let accepted = loop {
        let next = tokio::select! {
            _ = stop.wait_for(|stopped| *stopped) => break Ok(()),
            next = contender.accept_stream(server) => next,
        };
        match next {
            Ok(Some(stream)) => {
                let stop = stop.clone();
                let error_tx = error_tx.clone();
                tokio::spawn(async move {
                    if let Err(error) = serve_stream(test, stream).await
                        && !*stop.borrow()
                    {
                        let _ = error_tx.send(error);
                    }
                });
            }
            Ok(None) => break Ok(()),
            Err(_) if *stop.borrow() => break Ok(()),
            Err(error) => break Err(error),
        }
        if let Ok(error) = error_rx.try_recv() {
            break Err(error);
        }
    };
    accepted?;
    match error_rx.try_recv() {
        Ok(error) => Err(error),
        Err(_) => Ok(()),
    }
}

async fn serve_stream<S>(test: Test, stream: S) -> Result<(), BenchError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    match test {
        Test::Bulk => bulk::serve_stream(stream).await,
        Test::Rpc => rpc::serve_stream(stream).await,
    }
}
