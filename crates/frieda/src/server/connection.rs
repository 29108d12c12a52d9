//! One client connection: the read loop that frames and dispatches requests as soon as they
//! arrive (overlapped processing), keeping their responses in request order.
//!
//! Up to `max.inflight.requests.per.connection` requests are processed at once; past that the
//! loop stops reading (TCP backpressure) until the oldest response is released. Bad input closes
//! the connection with a log line (Kafka does the same for a malformed header, an unknown API
//! key, or an unsupported version of any API but ApiVersions); other connections are unaffected.

use super::frame::{FrameError, FrameReader};
use super::sequencer;
use crate::broker::Broker;
use crate::handlers;
use futures::stream::{FuturesOrdered, StreamExt};
use futures::FutureExt;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

/// Serves one connection until the peer closes it, it sends bad input, or the broker shuts
/// down (then in-flight requests are finished and answered first).
pub async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let (rd, wr) = stream.into_split();
    let max_inflight = if broker.config.overlapped_processing {
        broker.config.max_inflight_per_connection
    } else {
        1
    };
    let (tx, rx) = mpsc::channel(max_inflight);
    let writer = tokio::spawn(sequencer::write_loop(wr, rx));
    let mut frames = FrameReader::new(rd, broker.config.max_request_bytes);
    let mut inflight = FuturesOrdered::new();
    let mut closing = false;
    loop {
        tokio::select! {
            biased;
            done = inflight.next(), if !inflight.is_empty() => {
                match done {
                    Some(Ok(Some(bytes))) => {
                        // A failed send means the writer is gone: the peer reset or stopped reading.
                        let sent = tx.send(bytes).await;
                        if sent.is_err() {
                            break;
                        }
                    }
                    Some(Ok(None)) | None => {} // acks=0 produce: no response
                    Some(Err(_)) => closing = true, // bad request: stop reading
                }
            }
            frame = frames.next(), if !closing && inflight.len() < max_inflight => {
                match frame {
                    Ok(frame) => {
                        match handlers::parse_request(frame, peer) {
                            Ok((ctx, body)) => {
                                let fut = handlers::handle(broker.clone(), ctx, body);
                                inflight.push_back(fut.boxed());
                            }
                            Err(reject) => {
                                // An early answer (ApiVersions of an unsupported version) still
                                // goes out in order; otherwise the connection closes.
                                if let Some(resp) = reject {
                                    inflight.push_back(async move { Ok(Some(resp)) }.boxed());
                                } else {
                                    closing = true;
                                }
                            }
                        }
                    }
                    Err(FrameError::Closed) => closing = true,
                    Err(e) => {
                        tracing::warn!(%peer, error = %e, "closing connection: bad frame");
                        closing = true;
                    }
                }
            }
            _ = shutdown.changed(), if !closing => closing = true,
        }
        if closing && inflight.is_empty() {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
    tracing::debug!(%peer, "connection closed");
}
