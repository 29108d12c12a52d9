//! Request handlers: one module per API family. [`parse_request`] reads the header and checks
//! the API and version; [`handle`] decodes the body, runs the handler and encodes the response
//! with its header, ready for the sequencer.
//!
//! Supported APIs, their versions and handlers are listed once, in [`table::APIS`].

pub mod acls;
pub mod admin;
pub mod api_versions;
pub mod cluster;
pub mod config_resources;
pub mod configs;
pub mod consumer_groups;
pub mod delegation_tokens;
pub mod delete_records;
pub mod envelope;
pub mod features;
pub mod fetch;
pub(crate) mod fetch_diskless;
pub mod groups;
pub mod leader_epoch;
pub mod leadership;
pub mod list_offsets;
pub mod log_dirs;
pub mod metadata;
pub mod offsets;
pub mod produce;
pub mod produce_order;
pub mod producer_id;
pub mod quorum;
pub mod quotas;
pub mod scram;
pub mod share_dlq;
pub mod share_fetch;
pub mod share_groups;
mod share_source;
pub mod share_state;
pub mod splice;
pub mod streams_groups;
pub mod table;
pub mod topic_partitions;
pub mod transactions;

use crate::broker::Broker;
use crate::security::Session;
use crate::stats::{nanos, RequestTimes};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The request cannot be answered and the connection must close; the reason was logged
/// (malformed body: INVALID_REQUEST; a response that cannot be encoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseConnection;

/// What a handler knows of its request besides the body.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// API of the request.
    pub api_key: ApiKey,
    /// Version of the request (and of its response).
    pub api_version: i16,
    /// Echoed in the response header.
    pub correlation_id: i32,
    /// `client.id` of the sender, if given.
    pub client_id: Option<String>,
    /// Remote address.
    pub peer: SocketAddr,
    /// Who sent it: principal, listener, client address (ACL checks).
    pub session: Arc<Session>,
    /// Size of the request frame, bytes (size prefix included): what a produce quota counts.
    pub request_bytes: usize,
    /// Throttle time a quota gave this request (ms); the connection reads nothing more for that
    /// long after its response (KIP-219).
    pub throttle: Throttle,
    /// Where the request's time goes (recorded only with metrics on).
    pub timing: RequestTiming,
    /// Set by a handler whose response carries backlog data (a consumer fetch read from the
    /// segment files): the connection writes it from the backlog lane, at its low CPU
    /// priority ([`crate::storage::backlog::write_now`]).
    pub backlog: BacklogResponse,
    /// A Produce request's place in its connection's order of appends (overlapped
    /// processing; [`produce_order`]).
    pub produce_ticket: produce_order::TicketSlot,
    /// File ranges the response carries, sent with `sendfile` (a consumer's Fetch of the
    /// segment files over plain TCP; [`splice`]).
    pub splice: splice::Splice,
}

/// An encoded response (size prefix included): bytes, or bytes with file ranges to send with
/// `sendfile` ([`splice`]).
#[derive(Debug, Clone)]
pub enum Response {
    /// Every byte in memory.
    Bytes(Bytes),
    /// Records in the segment files.
    Spliced(Arc<crate::storage::zero_copy::SplicedResponse>),
}

impl Response {
    /// Bytes of the whole response.
    pub fn len(&self) -> usize {
        match self {
            Response::Bytes(b) => b.len(),
            Response::Spliced(s) => s.len(),
        }
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole response in memory (file ranges read).
    ///
    /// Errors: a file's read (a segment shorter than its range now).
    pub fn to_bytes(&self) -> std::io::Result<Bytes> {
        match self {
            Response::Bytes(b) => Ok(b.clone()),
            Response::Spliced(s) => s.copy_range(0, s.len()),
        }
    }
}

/// Whether a response belongs to the backlog class (see [`RequestContext::backlog`]).
#[derive(Debug, Default)]
pub struct BacklogResponse(std::sync::atomic::AtomicBool);

impl Clone for BacklogResponse {
    fn clone(&self) -> Self {
        BacklogResponse(std::sync::atomic::AtomicBool::new(self.get()))
    }
}

impl BacklogResponse {
    /// Marks the response as backlog data.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether it is.
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The throttle time (ms) a quota gave a request; the largest of several counts.
#[derive(Debug, Default)]
pub struct Throttle(std::sync::atomic::AtomicU32);

impl Clone for Throttle {
    fn clone(&self) -> Self {
        Throttle(std::sync::atomic::AtomicU32::new(self.get()))
    }
}

impl Throttle {
    /// Raises the throttle to at least `ms`.
    pub fn at_least(&self, ms: u32) {
        if ms > 0 {
            self.0.fetch_max(ms, Ordering::Relaxed);
        }
    }

    /// The throttle time, ms.
    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A handled request: its response (`Ok(None)`: none is due; `Err`: close the connection), its
/// stages when timed, and the quota throttle time (ms) the connection applies after it.
pub struct Handled {
    /// The encoded response.
    pub response: Result<Option<Response>, CloseConnection>,
    /// Stage times (metrics on).
    pub times: Option<RequestTimes>,
    /// Throttle time, ms (0: none).
    pub throttle_ms: u32,
    /// The response carries backlog data ([`RequestContext::backlog`]).
    pub backlog: bool,
}

/// A request's clock for the metrics endpoint ([`crate::stats`]): when its frame was read and
/// what the stages that are not the handler's own work took (ns). Handlers note their waits
/// with [`appended`](Self::appended) and [`waited`](Self::waited); everything is a no-op for an
/// untimed request (metrics off).
#[derive(Debug, Default)]
pub struct RequestTiming {
    /// When the request's frame was read; `None`: the request is not timed.
    pub received: Option<Instant>,
    /// Frame bytes, size prefix included.
    pub request_bytes: u64,
    decode_ns: AtomicU64,
    encode_ns: AtomicU64,
    append_ns: AtomicU64,
    remote_ns: AtomicU64,
}

impl Clone for RequestTiming {
    fn clone(&self) -> Self {
        let copy = |a: &AtomicU64| AtomicU64::new(a.load(Ordering::Relaxed));
        RequestTiming {
            received: self.received,
            request_bytes: self.request_bytes,
            decode_ns: copy(&self.decode_ns),
            encode_ns: copy(&self.encode_ns),
            append_ns: copy(&self.append_ns),
            remote_ns: copy(&self.remote_ns),
        }
    }
}

impl RequestTiming {
    /// A timed request whose `bytes`-long frame was read at `received`.
    pub fn started(received: Instant, bytes: usize) -> Self {
        RequestTiming {
            received: Some(received),
            request_bytes: bytes as u64,
            ..Default::default()
        }
    }

    /// A log append (Produce) took `d`; of several partitions appended at once the longest
    /// counts.
    pub fn appended(&self, d: Duration) {
        if self.on() {
            self.append_ns.fetch_max(nanos(d), Ordering::Relaxed);
        }
    }

    /// The request waited `d` on others (replication, new data); of several waits at once the
    /// longest counts.
    pub fn waited(&self, d: Duration) {
        if self.on() {
            self.remote_ns.fetch_max(nanos(d), Ordering::Relaxed);
        }
    }

    /// Whether the request is timed.
    pub fn on(&self) -> bool {
        self.received.is_some()
    }

    /// Now, for a timed request: the start of a stage to measure.
    pub fn stopwatch(&self) -> Option<Instant> {
        self.on().then(Instant::now)
    }
}

/// Reads the request header. On `Err`, the connection is closed after the responses before it;
/// `Err(Some(response))` is an answer to send first (ApiVersions with an unsupported version gets
/// UNSUPPORTED_VERSION in a v0 response, so the client can pick a version: KIP-511).
pub fn parse_request(
    mut frame: Bytes,
    peer: SocketAddr,
    session: &Arc<Session>,
) -> Result<(RequestContext, Bytes), Option<Bytes>> {
    if frame.len() < 8 {
        tracing::warn!(%peer, len = frame.len(), "closing connection: request shorter than a header");
        return Err(None);
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let Some(spec) = table::lookup(key) else {
        tracing::warn!(%peer, api_key = key, "closing connection: unknown or unsupported API key");
        return Err(None);
    };
    let api_key = spec.key;
    if !spec.serves(version) {
        if api_key == ApiKey::ApiVersions {
            tracing::info!(%peer, version, "ApiVersions version not supported; answering with v0 and UNSUPPORTED_VERSION");
            return Err(Some(api_versions::unsupported_version_response(
                correlation_id,
            )));
        }
        tracing::warn!(%peer, api = ?api_key, version, "closing connection: unsupported API version");
        return Err(None);
    }
    let header_version = api_key.request_header_version(version);
    let header = match catch_decode(|| RequestHeader::decode(&mut frame, header_version)) {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!(%peer, api = ?api_key, version, error = %e, "closing connection: malformed request header");
            return Err(None);
        }
    };
    let ctx = RequestContext {
        api_key,
        api_version: version,
        correlation_id,
        client_id: header.client_id.map(|s| s.to_string()),
        peer,
        session: session.clone(),
        request_bytes: frame.len() + 4,
        throttle: Throttle::default(),
        backlog: BacklogResponse::default(),
        timing: RequestTiming::default(),
        produce_ticket: Default::default(),
        splice: Default::default(),
    };
    Ok((ctx, frame))
}

/// Runs a decoder, turning a panic inside it into an error: bad input never takes the broker down.
fn catch_decode<T>(f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err(anyhow::anyhow!("decoder panicked on malformed input")),
    }
}

/// Decodes a request body; on failure logs why (INVALID_REQUEST) and the connection closes.
pub fn decode<T: Decodable>(ctx: &RequestContext, mut body: Bytes) -> Result<T, CloseConnection> {
    let started = ctx.timing.stopwatch();
    let decoded = catch_decode(|| T::decode(&mut body, ctx.api_version));
    if let Some(t) = started {
        ctx.timing
            .decode_ns
            .store(nanos(t.elapsed()), Ordering::Relaxed);
    }
    match decoded {
        Ok(req) => {
            if body.has_remaining() {
                tracing::debug!(peer = %ctx.peer, api = ?ctx.api_key, extra = body.remaining(), "trailing bytes after request body");
            }
            Ok(req)
        }
        Err(e) => {
            tracing::warn!(peer = %ctx.peer, api = ?ctx.api_key, version = ctx.api_version, error = %e,
                "closing connection: malformed request body (INVALID_REQUEST)");
            Err(CloseConnection)
        }
    }
}

/// Encodes a response with its header and size prefix.
pub fn encode<T: Encodable>(ctx: &RequestContext, response: &T) -> Result<Bytes, CloseConnection> {
    let started = ctx.timing.stopwatch();
    let encoded = encode_now(ctx, response);
    if let Some(t) = started {
        ctx.timing
            .encode_ns
            .store(nanos(t.elapsed()), Ordering::Relaxed);
    }
    encoded
}

fn encode_now<T: Encodable>(ctx: &RequestContext, response: &T) -> Result<Bytes, CloseConnection> {
    let header = ResponseHeader::default().with_correlation_id(ctx.correlation_id);
    let header_version = ctx.api_key.response_header_version(ctx.api_version);
    if ctx.splice.has_files() {
        // Records left in the segment files (a zero-copy fetch).
        return ctx
            .splice
            .encode(|buf| {
                buf.put_i32(0);
                header.encode(buf, header_version)?;
                response.encode(buf, ctx.api_version)
            })
            .map_err(|e| {
                tracing::error!(peer = %ctx.peer, api = ?ctx.api_key, version = ctx.api_version, error = %e,
                    "closing connection: could not encode response");
                CloseConnection
            });
    }
    let mut buf = BytesMut::with_capacity(256);
    buf.put_i32(0);
    let result = header
        .encode(&mut buf, header_version)
        .and_then(|_| response.encode(&mut buf, ctx.api_version));
    if let Err(e) = result {
        tracing::error!(peer = %ctx.peer, api = ?ctx.api_key, version = ctx.api_version, error = %e,
            "closing connection: could not encode response");
        return Err(CloseConnection);
    }
    let size = (buf.len() - 4) as i32;
    buf[0..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

/// Decodes, handles and encodes one request. `Ok(None)`: no response is due (acks=0 produce).
/// `Err(CloseConnection)`: the connection must close (the reason is logged).
///
/// With metrics on, also what the request spent in each stage up to its encoded response
/// ([`RequestTimes`]; the connection adds the response queue and the send).
pub async fn handle(broker: Arc<Broker>, ctx: RequestContext, body: Bytes) -> Handled {
    let Some(received) = ctx.timing.received else {
        let response = table::dispatch(broker, &ctx, body).await;
        return Handled {
            response: spliced(&ctx, response),
            times: None,
            throttle_ms: ctx.throttle.get(),
            backlog: ctx.backlog.get(),
        };
    };
    let started = Instant::now();
    // A request quota already exceeded throttles this request too (and Produce and Fetch say
    // so in their answer); its own time is recorded once it is handled.
    charge_request_quota(&broker, &ctx, 0.0);
    let result = table::dispatch(broker.clone(), &ctx, body).await;
    let t = &ctx.timing;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let times = RequestTimes {
        api_key: ctx.api_key as i16,
        api_version: ctx.api_version,
        request_bytes: t.request_bytes,
        queue_ns: nanos(started.saturating_duration_since(received)),
        decode_ns: load(&t.decode_ns),
        handler_ns: nanos(started.elapsed()),
        append_ns: load(&t.append_ns),
        remote_ns: load(&t.remote_ns),
        encode_ns: load(&t.encode_ns),
    };
    // Its busy time (the handler without the waits for followers, new data or fsync), in
    // percent of one thread for a second (KIP-124).
    let busy_ns = times
        .handler_ns
        .saturating_sub(times.remote_ns)
        .saturating_sub(times.append_ns);
    charge_request_quota(&broker, &ctx, busy_ns as f64 / 1e9 * 100.0);
    Handled {
        response: spliced(&ctx, result),
        times: Some(times),
        throttle_ms: ctx.throttle.get(),
        backlog: ctx.backlog.get(),
    }
}

/// The handler's encoded response, or the one with file ranges its encoding made instead.
fn spliced(
    ctx: &RequestContext,
    response: Result<Option<Bytes>, CloseConnection>,
) -> Result<Option<Response>, CloseConnection> {
    let response = response?;
    Ok(match ctx.splice.take_encoded() {
        Some(s) if response.is_some() => Some(Response::Spliced(s)),
        _ => response.map(Response::Bytes),
    })
}

/// Records `percent_seconds` of request time (KIP-124: percent of one thread for a second) for
/// the request's user and client id and raises the request's throttle to the wait that brings
/// them back under their request quota (0 within it; called with 0 before the request is
/// handled, so a quota already exceeded throttles it too). Nothing is recorded without a request
/// quota; ApiVersions and the SASL requests are exempt, as in Kafka
/// ([`table::ApiSpec::quota_exempt`]).
fn charge_request_quota(broker: &Broker, ctx: &RequestContext, percent_seconds: f64) {
    let quotas = &broker.security.quotas;
    if !quotas.requests_limited() || table::spec(ctx.api_key).is_some_and(|s| s.quota_exempt()) {
        return;
    }
    let throttle = quotas.record(
        crate::quota::QuotaKind::Request,
        &ctx.session.principal.name,
        ctx.client_id.as_deref().unwrap_or(""),
        percent_seconds,
        Instant::now(),
    );
    ctx.throttle.at_least(throttle);
}

/// Whether the request's principal may do `operation` on resource `resource_type`/`name`
/// ([`crate::security::acl`] codes; always true without an authorizer).
pub fn authorized(
    broker: &Broker,
    ctx: &RequestContext,
    operation: i8,
    resource_type: i8,
    name: &str,
) -> bool {
    broker.security.authorize(
        &ctx.session,
        api_name(ctx.api_key),
        operation,
        resource_type,
        name,
    )
}

/// As [`authorized`] for a check that only filters what the request sees (an all-topics
/// listing, ListGroups): a denial is not an audit event at INFO (Kafka's `logIfDenied = false`).
pub fn authorized_filter(
    broker: &Broker,
    ctx: &RequestContext,
    operation: i8,
    resource_type: i8,
    name: &str,
) -> bool {
    broker.security.authorize_filter(
        &ctx.session,
        api_name(ctx.api_key),
        operation,
        resource_type,
        name,
    )
}

/// Kafka's name of an API (`ApiKeys.name`: `Produce`, `CreateTopics`), as the audit log
/// writes it.
pub fn api_name(key: ApiKey) -> &'static str {
    table::api_name(key)
}

/// Whether the request's principal may do `operation` on the cluster resource.
pub fn authorized_cluster(broker: &Broker, ctx: &RequestContext, operation: i8) -> bool {
    use crate::security::acl::{resource, CLUSTER_NAME};
    authorized(broker, ctx, operation, resource::CLUSTER, CLUSTER_NAME)
}

/// `StrBytes` from a `&str`.
pub fn str_bytes(s: &str) -> kafka_protocol::protocol::StrBytes {
    kafka_protocol::protocol::StrBytes::from_string(s.to_string())
}
