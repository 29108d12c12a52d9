//! One client connection: the read loop that frames and dispatches requests as soon as they
//! arrive (overlapped processing), keeping their responses in request order.
//!
//! Up to `max.inflight.requests.per.connection` requests are processed at once; past that the
//! loop stops reading (TCP backpressure) until the oldest response is released. Bad input closes
//! the connection with a log line (Kafka does the same for a malformed header, an unknown API
//! key, or an unsupported version of any API but ApiVersions); other connections are unaffected.

use super::authentication::{self as auth, SaslOutcome};
use super::frame::{FrameError, FrameReader, RequestBudget};
use super::sequencer::{BacklogFront, ResponseQueue, Wrote};
use super::transport::{self, Reader, Writer};
use crate::broker::Broker;
use crate::handlers::{self, RequestTiming};
use crate::security::sasl::Authenticator;
use crate::security::{ListenerSecurity, Session};
use crate::stats::{nanos, BrokerStats, RequestTimes};
use futures::stream::{FuturesOrdered, StreamExt};
use futures::FutureExt;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

/// Serves one connection until the peer closes it, it sends bad input, it stays idle past
/// `connections.max.idle.ms`, it trickles a request slower than `request.read.timeout.ms`, it
/// fails to authenticate, or the broker shuts down (then in-flight requests are finished and
/// answered first).
///
/// On a TLS listener the handshake comes first; on a SASL listener only ApiVersions,
/// SaslHandshake and SaslAuthenticate are taken until the client has authenticated (requests
/// up to `sasl.server.max.receive.size` bytes meanwhile).
///
/// Request bytes are taken from the broker-wide `budget` (`queued.max.request.bytes`) before
/// they are buffered and given back when the request's handler finishes.
pub async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    broker: Arc<Broker>,
    listener: Arc<ListenerSecurity>,
    budget: Option<RequestBudget>,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let stats = broker.stats.clone();
    stats.connections.fetch_add(1, Ordering::Relaxed);
    stats.connections_accepted.fetch_add(1, Ordering::Relaxed);
    let opened = match &listener.tls {
        None => {
            let (r, w) = transport::plain(stream);
            let session = Session::anonymous(listener.name.clone(), listener.protocol, peer.ip());
            Some((r, w, session))
        }
        Some(tls) => auth::tls_handshake(tls, &listener, stream, peer, &broker)
            .await
            .map(|(s, session)| {
                let (r, w) = transport::tls(s);
                (r, w, session)
            }),
    };
    if let Some((rd, wr, session)) = opened {
        let authenticator = listener.sasl.as_ref().map(|s| {
            Authenticator::new(
                s.clone(),
                listener.name.clone(),
                listener.protocol,
                peer.ip(),
            )
        });
        let conn = Conn {
            peer,
            session: Arc::new(session),
            auth: authenticator,
        };
        serve(rd, wr, conn, broker.clone(), budget, &mut shutdown).await;
    }
    stats.connections.fetch_sub(1, Ordering::Relaxed);
    // Share sessions opened on this connection close with it (KIP-932).
    broker.groups.shares.connection_closed(peer, &|id| {
        broker.topic_by_id(id).map(|t| t.name.to_string())
    });
    tracing::debug!(%peer, "connection closed");
}

/// Who is on the other end of a connection.
struct Conn {
    peer: SocketAddr,
    /// The session of a listener without SASL (TLS principal or anonymous).
    session: Arc<Session>,
    /// SASL listeners: the authentication state.
    auth: Option<Authenticator>,
}

impl Conn {
    fn session(&self) -> Arc<Session> {
        match &self.auth {
            Some(a) => auth::current_session(a),
            None => self.session.clone(),
        }
    }
}

/// Queues a SASL step's answer in request order (after its delay, if any).
fn queue_sasl(
    out: SaslOutcome,
    inflight: &mut FuturesOrdered<futures::future::BoxFuture<'static, Handled>>,
) -> bool {
    if let Some(resp) = out.response {
        let delay = out.delay;
        inflight.push_back(
            async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                (Ok(Some(handlers::Response::Bytes(resp))), None, 0, false)
            }
            .boxed(),
        );
    }
    out.close
}

/// A released response not yet fully written, for the metrics (`None`: not timed).
struct Unsent {
    api_key: i16,
    bytes: u64,
    received: std::time::Instant,
    released: std::time::Instant,
}

/// Records the responses the socket has now taken completely: `unsent` keeps one entry per
/// response in `out`, oldest first, so whatever it holds beyond `out.len()` is written.
fn note_written(stats: &BrokerStats, unsent: &mut VecDeque<Option<Unsent>>, out: &ResponseQueue) {
    if unsent.len() <= out.len() {
        return;
    }
    let now = std::time::Instant::now();
    while unsent.len() > out.len() {
        if let Some(Some(u)) = unsent.pop_front() {
            stats.response_sent(
                u.api_key,
                u.bytes,
                nanos(now.saturating_duration_since(u.released)),
                nanos(now.saturating_duration_since(u.received)),
            );
        }
    }
}

/// Writes what the socket takes now: responses from this task, and a response carrying
/// backlog data from the backlog lane at its low CPU priority (plain TCP; with TLS from this
/// task too). True when everything released was written, false when the socket is full.
///
/// Errors: the socket's (the peer reset the connection).
async fn write_out(out: &mut ResponseQueue, wr: &Writer) -> std::io::Result<bool> {
    let fd = wr.raw_fd();
    loop {
        match out.write_until_backlog(wr, fd.is_some())? {
            Wrote::Empty => return Ok(true),
            Wrote::Full => return Ok(false),
            Wrote::Backlog => {
                let (Some(fd), Some(front)) = (fd, out.backlog_front()) else {
                    return Ok(out.is_empty());
                };
                let n = match front {
                    BacklogFront::Bytes(data) => {
                        crate::storage::backlog::write_now(fd, data).await?
                    }
                    BacklogFront::Spliced(resp, skip) => {
                        crate::storage::zero_copy::write_now(fd, resp, skip).await?
                    }
                };
                out.written(n);
                if n == 0 {
                    // The socket is full. Tokio must see that itself (its WouldBlock clears the
                    // readiness the connection then waits on), or the wait would return at once:
                    // one small write from here, which takes whatever room appeared meanwhile.
                    match out.write_one(wr, 16 * 1024)? {
                        Wrote::Full => return Ok(false),
                        Wrote::Empty => return Ok(true),
                        Wrote::Backlog => {}
                    }
                }
            }
        }
    }
}

/// A finished request: its response (`Ok(None)`: none is due, acks=0 produce) and, timed, its
/// stages with when its frame was read and when its handler finished; its quota throttle (ms);
/// whether it carries backlog data.
type Handled = (
    Result<Option<handlers::Response>, handlers::CloseConnection>,
    Option<(RequestTimes, std::time::Instant, std::time::Instant)>,
    u32,
    bool,
);

/// Queues a finished request's response for writing (and, timed, records its stages so far and
/// keeps its entry in `unsent`). False when the request must close the connection.
fn release(
    (result, times, _throttle, backlog): Handled,
    out: &mut ResponseQueue,
    unsent: &mut VecDeque<Option<Unsent>>,
    stats: &BrokerStats,
) -> bool {
    let released = times.as_ref().map(|_| std::time::Instant::now());
    if let (Some((t, _, done_at)), Some(now)) = (&times, released) {
        stats.request_released(t, nanos(now.saturating_duration_since(*done_at)));
    }
    match result {
        Ok(Some(bytes)) => {
            if stats.enabled() && !bytes.is_empty() {
                unsent.push_back(
                    times
                        .zip(released)
                        .map(|((t, received, _), released)| Unsent {
                            api_key: t.api_key,
                            bytes: bytes.len() as u64,
                            received,
                            released,
                        }),
                );
            }
            out.push_classed(bytes, backlog);
            true
        }
        Ok(None) => true,
        Err(_) => {
            if let Some((t, _, _)) = times {
                stats.request_failed(t.api_key);
            }
            false
        }
    }
}

async fn serve(
    rd: Reader,
    wr: Writer,
    mut conn: Conn,
    broker: Arc<Broker>,
    budget: Option<RequestBudget>,
    shutdown: &mut watch::Receiver<bool>,
) {
    let peer = conn.peer;
    let stats = broker.stats.clone();
    let timed = stats.enabled();
    // One entry per response in `out` while metrics are on (see `note_written`).
    let mut unsent: VecDeque<Option<Unsent>> = VecDeque::new();
    let max_inflight = if broker.config.overlapped_processing {
        broker.config.max_inflight_per_connection
    } else {
        1
    };
    let idle = Duration::from_millis(broker.config.connections_max_idle_ms);
    let read_timeout = Duration::from_millis(broker.config.request_read_timeout_ms);
    let mut out = ResponseQueue::new(broker.config.response_vectored_writes);
    // Until a SASL client has authenticated, requests are small (`sasl.server.max.receive.size`).
    let unauthenticated_max = broker
        .config
        .security
        .sasl_max_receive_size
        .min(broker.config.max_request_bytes);
    let mut frames = FrameReader::new(
        rd,
        if conn.auth.is_some() {
            unauthenticated_max
        } else {
            broker.config.max_request_bytes
        },
    )
    .with_limits(read_timeout, budget);
    let mut inflight: FuturesOrdered<futures::future::BoxFuture<'static, Handled>> =
        FuturesOrdered::new();
    let mut closing = false;
    // Set when the peer stopped taking responses: queued responses are dropped, not written.
    let mut abandon = false;
    // The idle clock: checked lazily when the timer fires, so requests cost no timer updates.
    let mut last_active = Instant::now();
    // When the socket last took response bytes (checked while responses wait for it).
    let mut last_write = Instant::now();
    let idle_timer = tokio::time::sleep(idle);
    tokio::pin!(idle_timer);
    // A quota throttled a request: nothing more is read until then (KIP-219's channel muting).
    let mut muted_until: Option<Instant> = None;
    // With requests overlapped, produces still decide their appends to a partition in the
    // order they were read (handlers::produce_order); made at the first Produce.
    let mut produce_order: Option<Arc<handlers::produce_order::ProduceOrder>> = None;
    loop {
        tokio::select! {
            biased;
            done = inflight.next(), if !inflight.is_empty() && out.len() < max_inflight => {
                last_active = Instant::now();
                // Release this response and every later one already finished, then write them
                // all at once from this task (dynamic eager flush, one vectored write).
                let mut next = Some(done);
                while let Some(done) = next.take() {
                    if let Some(handled) = done {
                        if handled.2 > 0 {
                            let until = Instant::now() + Duration::from_millis(u64::from(handled.2));
                            muted_until = Some(muted_until.map_or(until, |m| m.max(until)));
                        }
                        if !release(handled, &mut out, &mut unsent, &stats) {
                            closing = true; // bad request: stop reading
                        }
                    }
                    if !inflight.is_empty() && out.len() < max_inflight {
                        next = inflight.next().now_or_never();
                    }
                }
                let was_empty = out.is_empty();
                let wrote = write_out(&mut out, &wr).await;
                note_written(&stats, &mut unsent, &out);
                match wrote {
                    Ok(_) if was_empty => {}
                    Ok(_) => last_write = Instant::now(),
                    Err(e) => {
                        tracing::debug!(%peer, error = %e, "connection reset while writing responses");
                        abandon = true;
                        break;
                    }
                }
            }
            ready = wr.ready(), if !out.is_empty() || wr.has_buffered() => {
                let writes = out.writes();
                let wrote = match ready {
                    Ok(()) => write_out(&mut out, &wr).await,
                    Err(e) => Err(e),
                };
                note_written(&stats, &mut unsent, &out);
                match wrote {
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
            _ = tokio::time::sleep_until(muted_until.unwrap_or_else(Instant::now)), if muted_until.is_some() => {
                muted_until = None;
            }
            frame = frames.next(), if !closing && muted_until.is_none() && inflight.len() < max_inflight && out.len() < max_inflight => {
                last_active = Instant::now();
                match frame {
                    Ok(frame) => {
                        let permit = frame.permit;
                        let received = std::time::Instant::now();
                        let frame_bytes = frame.payload.len() + 4;
                        if let Some(a) = conn.auth.as_mut().filter(|a| a.expects_bare_token()) {
                            // After a SaslHandshake v0 the frame is a bare SASL token.
                            drop(permit);
                            if queue_sasl(auth::sasl_bare_token(&broker, a, &frame.payload), &mut inflight) {
                                closing = true;
                            }
                            if a.session().is_some() {
                                frames.set_max_frame(broker.config.max_request_bytes);
                            }
                            continue;
                        }
                        match handlers::parse_request(frame.payload, peer, &conn.session()) {
                            Ok((mut ctx, body)) => {
                                if let Some(a) = conn.auth.as_mut() {
                                    if auth::sasl_exchange(ctx.api_key) {
                                        drop(permit);
                                        if queue_sasl(auth::sasl_request(&broker, a, &ctx, body), &mut inflight) {
                                            closing = true;
                                        }
                                        if a.session().is_some() {
                                            frames.set_max_frame(broker.config.max_request_bytes);
                                        }
                                        continue;
                                    }
                                    if !auth::allowed_before_authentication(ctx.api_key) {
                                        if a.session().is_none() {
                                            tracing::warn!(%peer, api = ?ctx.api_key,
                                                "closing connection: request before SASL authentication (only ApiVersions, SaslHandshake and SaslAuthenticate are allowed)");
                                            closing = true;
                                            continue;
                                        }
                                        if a.expired(std::time::Instant::now()) {
                                            tracing::info!(%peer, principal = %ctx.session.principal,
                                                "closing connection: SASL session expired without re-authentication (connections.max.reauth.ms)");
                                            closing = true;
                                            continue;
                                        }
                                    }
                                }
                                // Timed for the metrics, or for a request quota (KIP-124).
                                if timed || broker.security.quotas.requests_limited() {
                                    ctx.timing = RequestTiming::started(received, frame_bytes);
                                }
                                if max_inflight > 1 && ctx.api_key == kafka_protocol::messages::ApiKey::Produce {
                                    let order = produce_order.get_or_insert_with(handlers::produce_order::ProduceOrder::new);
                                    ctx.produce_ticket = handlers::produce_order::TicketSlot::new(order.ticket());
                                }
                                let fut = handlers::handle(broker.clone(), ctx, body);
                                // The request's budget returns when its handler is done.
                                inflight.push_back(
                                    async move {
                                        let h = fut.await;
                                        drop(permit);
                                        let times = h.times.map(|t| (t, received, std::time::Instant::now()));
                                        (h.response, times, h.throttle_ms, h.backlog)
                                    }
                                    .boxed(),
                                );
                            }
                            Err(reject) => {
                                drop(permit);
                                // An early answer (ApiVersions of an unsupported version) still
                                // goes out in order; otherwise the connection closes.
                                if let Some(resp) = reject {
                                    inflight.push_back(async move { (Ok(Some(handlers::Response::Bytes(resp))), None, 0, false) }.boxed());
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
                    Err(FrameError::Io(e)) if matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted) => {
                        // A client that closes with unread responses (librdkafka dropping a
                        // coordinator's connection) resets it: nothing wrong with its frames.
                        tracing::debug!(%peer, error = %e, "connection reset by the client");
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
        if closing && inflight.is_empty() && out.is_empty() && !wr.has_buffered() {
            break;
        }
    }
    if !abandon {
        wr.shutdown().await;
    }
}
