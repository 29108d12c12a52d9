//! One client connection: the read loop that frames and dispatches requests as soon as they
//! arrive (overlapped processing), keeping their responses in request order.
//!
//! Up to `max.inflight.requests.per.connection` requests are processed at once; past that the
//! loop stops reading (TCP backpressure) until the oldest response is released. Bad input closes
//! the connection with a log line (Kafka does the same for a malformed header, an unknown API
//! key, or an unsupported version of any API but ApiVersions); other connections are unaffected.

use super::frame::{FrameError, FrameReader, RequestBudget};
use super::sequencer::ResponseQueue;
use crate::broker::Broker;
use crate::handlers;
use futures::stream::{FuturesOrdered, StreamExt};
use futures::FutureExt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

/// Serves one connection until the peer closes it, it sends bad input, it stays idle past
/// `connections.max.idle.ms`, it trickles a request slower than `request.read.timeout.ms`, or
/// the broker shuts down (then in-flight requests are finished and answered first).
///
/// Request bytes are taken from the broker-wide `budget` (`queued.max.request.bytes`) before
/// they are buffered and given back when the request's handler finishes.
pub async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    broker: Arc<Broker>,
    budget: Option<RequestBudget>,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let (rd, wr) = stream.into_split();
    let max_inflight = if broker.config.overlapped_processing {
        broker.config.max_inflight_per_connection
    } else {
        1
    };
    let idle = Duration::from_millis(broker.config.connections_max_idle_ms);
    let read_timeout = Duration::from_millis(broker.config.request_read_timeout_ms);
    let mut out = ResponseQueue::new(broker.config.response_vectored_writes);
    let mut frames =
        FrameReader::new(rd, broker.config.max_request_bytes).with_limits(read_timeout, budget);
    let mut inflight = FuturesOrdered::new();
    let mut closing = false;
    // Set when the peer stopped taking responses: queued responses are dropped, not written.
    let mut abandon = false;
    // The idle clock: checked lazily when the timer fires, so requests cost no timer updates.
    let mut last_active = Instant::now();
    // When the socket last took response bytes (checked while responses wait for it).
    let mut last_write = Instant::now();
    let idle_timer = tokio::time::sleep(idle);
    tokio::pin!(idle_timer);
    loop {
        tokio::select! {
            biased;
            done = inflight.next(), if !inflight.is_empty() && out.len() < max_inflight => {
                last_active = Instant::now();
                // Release this response and every later one already finished, then write them
                // all at once from this task (dynamic eager flush, one vectored write).
                let mut next = Some(done);
                while let Some(done) = next.take() {
                    match done {
                        Some(Ok(Some(bytes))) => out.push(bytes),
                        Some(Ok(None)) | None => {} // acks=0 produce: no response
                        Some(Err(_)) => closing = true, // bad request: stop reading
                    }
                    if !inflight.is_empty() && out.len() < max_inflight {
                        next = inflight.next().now_or_never();
                    }
                }
                let was_empty = out.is_empty();
                match out.write_now(&wr) {
                    Ok(_) if was_empty => {}
                    Ok(_) => last_write = Instant::now(),
                    Err(e) => {
                        tracing::debug!(%peer, error = %e, "connection reset while writing responses");
                        abandon = true;
                        break;
                    }
                }
            }
            ready = wr.writable(), if !out.is_empty() => {
                let writes = out.writes();
                match ready.and_then(|()| out.write_now(&wr)) {
                    Ok(_) => {
                        // Any bytes taken count, also part of one large response.
                        if out.writes() != writes {
                            last_write = Instant::now();
                        }
                    }
                    Err(e) => {
                        tracing::debug!(%peer, error = %e, "connection reset while writing responses");
                        abandon = true;
                        break;
                    }
                }
            }
            frame = frames.next(), if !closing && inflight.len() < max_inflight && out.len() < max_inflight => {
                last_active = Instant::now();
                match frame {
                    Ok(frame) => {
                        let permit = frame.permit;
                        match handlers::parse_request(frame.payload, peer) {
                            Ok((ctx, body)) => {
                                let fut = handlers::handle(broker.clone(), ctx, body);
                                // The request's budget returns when its handler is done.
                                inflight.push_back(
                                    async move {
                                        let r = fut.await;
                                        drop(permit);
                                        r
                                    }
                                    .boxed(),
                                );
                            }
                            Err(reject) => {
                                drop(permit);
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
                    Err(e @ FrameError::ReadTimeout { .. }) => {
                        tracing::warn!(%peer, error = %e, "closing connection: request read too slowly (request.read.timeout.ms)");
                        closing = true;
                    }
                    Err(e) => {
                        tracing::warn!(%peer, error = %e, "closing connection: bad frame");
                        closing = true;
                    }
                }
            }
            _ = &mut idle_timer, if (!closing && inflight.is_empty()) || !out.is_empty() => {
                let now = Instant::now();
                if !out.is_empty() {
                    // Responses are waiting for the socket: the peer is not reading them.
                    let due = last_write + idle;
                    if now >= due {
                        tracing::warn!(%peer, idle_ms = idle.as_millis() as u64,
                            "closing connection: the client has not read its responses (connections.max.idle.ms)");
                        abandon = true;
                        break;
                    }
                    idle_timer.as_mut().reset(due);
                    continue;
                }
                let due = last_active + idle;
                if now >= due && !frames.has_partial() {
                    tracing::info!(%peer, idle_ms = idle.as_millis() as u64,
                        "closing idle connection (connections.max.idle.ms)");
                    closing = true;
                } else {
                    // A started request has its own, shorter clock (request.read.timeout.ms).
                    idle_timer.as_mut().reset(if now >= due { now + idle } else { due });
                }
            }
            _ = shutdown.changed(), if !closing => closing = true,
        }
        if closing && inflight.is_empty() && out.is_empty() {
            break;
        }
    }
    if !abandon {
        let mut wr = wr;
        let _ = wr.shutdown().await;
    }
    tracing::debug!(%peer, "connection closed");
}
