//! What the request path counts for the metrics endpoint: per API (and version) requests, bytes
//! and the time each request spent in each stage of Frieda's pipeline; connections.
//!
//! Recording is lock-free: atomic counters and [`LatencyHistogram`]s (relaxed `fetch_add`s),
//! one table entry per API key allocated on the API's first request. The exporter
//! (`metrics`) reads them at scrape time. Nothing here knows the broker; the broker holds one
//! [`BrokerStats`] and the server records into it. Off (`metrics.listen` unset) no request is
//! timed or counted; the two connection counters are always kept.
//!
//! The stages follow Kafka's `kafka.network:type=RequestMetrics` timers (RequestQueueTimeMs,
//! LocalTimeMs, RemoteTimeMs, ResponseQueueTimeMs, ResponseSendTimeMs, TotalTimeMs), split finer
//! where Frieda's pipeline has its own steps (decode, log append, encode): the per-stage tracing
//! of the HDFS bottleneck study (`seeds/000_00b2c58f2a1e5093.txt`).

pub use frieda_log::stats::{bucket_bound_us, nanos, HistogramSnapshot, LatencyHistogram, BUCKETS};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::OnceLock;

/// API keys with a table entry: 0..MAX_API_KEYS (Kafka 4.3's highest key is 92).
pub const MAX_API_KEYS: usize = 128;
/// Versions counted per API: 0..MAX_VERSIONS (the highest any API has in Kafka 4.3 is 17).
pub const MAX_VERSIONS: usize = 32;

/// A stage of a request's life in Frieda, from the moment its frame was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Frame read until its handler first ran (Kafka: RequestQueueTimeMs).
    Queue = 0,
    /// Decoding the request body.
    Decode = 1,
    /// The handler's own work: handler time minus decode, append, remote and encode (Kafka:
    /// LocalTimeMs, which also holds decode and append).
    Local = 2,
    /// Produce: the write into the partition log on its writer thread, including the fsync
    /// when `flush.messages` asks for one (the longest partition of the request).
    Append = 3,
    /// Waiting on others: Produce `acks=all` for the in-sync replicas, Fetch for data or its
    /// `max.wait.ms` (Kafka: RemoteTimeMs).
    Remote = 4,
    /// Encoding the response.
    Encode = 5,
    /// Response done until its turn to be written (earlier responses of the connection first;
    /// Kafka: ResponseQueueTimeMs).
    ResponseQueue = 6,
    /// Released until the socket took its last byte (Kafka: ResponseSendTimeMs).
    Send = 7,
    /// Frame read until the socket took the response's last byte (Kafka: TotalTimeMs).
    Total = 8,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 9] = [
        Stage::Queue,
        Stage::Decode,
        Stage::Local,
        Stage::Append,
        Stage::Remote,
        Stage::Encode,
        Stage::ResponseQueue,
        Stage::Send,
        Stage::Total,
    ];

    /// The `stage` label value.
    pub fn label(self) -> &'static str {
        match self {
            Stage::Queue => "queue",
            Stage::Decode => "decode",
            Stage::Local => "local",
            Stage::Append => "append",
            Stage::Remote => "remote",
            Stage::Encode => "encode",
            Stage::ResponseQueue => "response_queue",
            Stage::Send => "send",
            Stage::Total => "total",
        }
    }
}

/// One API's counters.
#[derive(Debug)]
pub struct ApiStats {
    /// Requests by version.
    pub requests: [AtomicU64; MAX_VERSIONS],
    /// Request frame bytes (size prefix included).
    pub request_bytes: AtomicU64,
    /// Response bytes written (size prefix included).
    pub response_bytes: AtomicU64,
    /// Requests that closed their connection (malformed body, unencodable response).
    pub errors: AtomicU64,
    /// Per [`Stage`], in `Stage as usize` order.
    pub stages: [LatencyHistogram; 9],
}

impl ApiStats {
    fn new() -> Self {
        ApiStats {
            requests: [const { AtomicU64::new(0) }; MAX_VERSIONS],
            request_bytes: AtomicU64::new(0),
            response_bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            stages: [const { LatencyHistogram::new() }; 9],
        }
    }

    /// Records `ns` nanoseconds spent in `stage`.
    pub fn stage(&self, stage: Stage, ns: u64) {
        self.stages[stage as usize].record_ns(ns);
    }
}

/// What one request spent where, handed from its handler to the connection (ns).
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestTimes {
    /// Kafka API key.
    pub api_key: i16,
    /// Request version.
    pub api_version: i16,
    /// Request frame bytes.
    pub request_bytes: u64,
    /// [`Stage::Queue`].
    pub queue_ns: u64,
    /// [`Stage::Decode`].
    pub decode_ns: u64,
    /// Handler start to response encoded (decode, local, append, remote, encode together).
    pub handler_ns: u64,
    /// [`Stage::Append`].
    pub append_ns: u64,
    /// [`Stage::Remote`].
    pub remote_ns: u64,
    /// [`Stage::Encode`].
    pub encode_ns: u64,
}

/// The broker's request and connection counters.
#[derive(Debug)]
pub struct BrokerStats {
    enabled: bool,
    apis: [OnceLock<Box<ApiStats>>; MAX_API_KEYS],
    /// Open client connections.
    pub connections: AtomicI64,
    /// Client connections accepted since start.
    pub connections_accepted: AtomicU64,
    /// Successful authentications (a TLS handshake on an SSL listener, a SASL exchange).
    pub authentications: AtomicU64,
    /// Failed authentications (a TLS handshake refused, wrong SASL credentials or mechanism).
    pub authentication_failures: AtomicU64,
}

impl BrokerStats {
    /// Counters that record (`enabled`) or stay empty.
    pub fn new(enabled: bool) -> Self {
        BrokerStats {
            enabled,
            apis: [const { OnceLock::new() }; MAX_API_KEYS],
            connections: AtomicI64::new(0),
            connections_accepted: AtomicU64::new(0),
            authentications: AtomicU64::new(0),
            authentication_failures: AtomicU64::new(0),
        }
    }

    /// Whether requests are timed and counted (`metrics.listen` set).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The counters of API `key`, created on first use; `None` for a key out of the table.
    pub fn api(&self, key: i16) -> Option<&ApiStats> {
        let slot = self.apis.get(usize::try_from(key).ok()?)?;
        Some(slot.get_or_init(|| Box::new(ApiStats::new())))
    }

    /// The APIs that have seen requests, by key.
    pub fn apis(&self) -> impl Iterator<Item = (i16, &ApiStats)> {
        self.apis
            .iter()
            .enumerate()
            .filter_map(|(k, s)| s.get().map(|s| (k as i16, &**s)))
    }

    /// Records a handled request's stages up to encoding, when its response is released to the
    /// socket `response_queue_ns` after it was encoded.
    pub fn request_released(&self, t: &RequestTimes, response_queue_ns: u64) {
        let Some(api) = self.api(t.api_key) else {
            return;
        };
        if let Some(n) = usize::try_from(t.api_version)
            .ok()
            .and_then(|v| api.requests.get(v))
        {
            n.fetch_add(1, Ordering::Relaxed);
        }
        api.request_bytes
            .fetch_add(t.request_bytes, Ordering::Relaxed);
        let local = t
            .handler_ns
            .saturating_sub(t.decode_ns + t.append_ns + t.remote_ns + t.encode_ns);
        api.stage(Stage::Queue, t.queue_ns);
        api.stage(Stage::Decode, t.decode_ns);
        api.stage(Stage::Local, local);
        if t.append_ns > 0 {
            api.stage(Stage::Append, t.append_ns);
        }
        if t.remote_ns > 0 {
            api.stage(Stage::Remote, t.remote_ns);
        }
        api.stage(Stage::Encode, t.encode_ns);
        api.stage(Stage::ResponseQueue, response_queue_ns);
    }

    /// Records a response whose last byte the socket took: `send_ns` after release,
    /// `total_ns` after its request frame was read.
    pub fn response_sent(&self, api_key: i16, bytes: u64, send_ns: u64, total_ns: u64) {
        if let Some(api) = self.api(api_key) {
            api.response_bytes.fetch_add(bytes, Ordering::Relaxed);
            api.stage(Stage::Send, send_ns);
            api.stage(Stage::Total, total_ns);
        }
    }

    /// Counts a request that closed its connection.
    pub fn request_failed(&self, api_key: i16) {
        if let Some(api) = self.api(api_key) {
            api.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_add_up_and_local_is_the_rest() {
        let s = BrokerStats::new(true);
        let t = RequestTimes {
            api_key: 0,
            api_version: 9,
            request_bytes: 100,
            queue_ns: 1_000,
            decode_ns: 2_000,
            handler_ns: 50_000,
            append_ns: 10_000,
            remote_ns: 30_000,
            encode_ns: 3_000,
        };
        s.request_released(&t, 4_000);
        s.response_sent(0, 40, 5_000, 70_000);
        let api = s.api(0).unwrap();
        assert_eq!(api.requests[9].load(Ordering::Relaxed), 1);
        assert_eq!(api.request_bytes.load(Ordering::Relaxed), 100);
        assert_eq!(api.response_bytes.load(Ordering::Relaxed), 40);
        let sum = |st: Stage| api.stages[st as usize].snapshot().sum_ns;
        assert_eq!(sum(Stage::Local), 5_000);
        assert_eq!(sum(Stage::Remote), 30_000);
        assert_eq!(sum(Stage::Total), 70_000);
        assert_eq!(s.apis().count(), 1);
        assert!(s.api(-1).is_none() && s.api(MAX_API_KEYS as i16).is_none());
    }
}
