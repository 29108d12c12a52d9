//! `frieda-bench observe`: measures any Kafka-protocol broker (Frieda, Apache Kafka, ...) from
//! its traffic alone, the FSObserver idea of the HDFS-bottleneck paper
//! (`../shared/seeds/000_00b2c58f2a1e5093.txt`): packets captured on an interface (loopback
//! included), each connection's byte streams rebuilt, requests matched to responses by
//! correlation id. Reports per-API latency percentiles (request's first byte to response's last
//! byte, µs, kernel timestamps), request and response sizes, and per-client-id request rates,
//! live every `--every` seconds and as JSON at the end.
//!
//! Limits: plaintext listeners only (TLS hides the headers); Produce with acks=0 has no response
//! (counted, not timed); a connection open before the capture joins at its next request boundary.

pub mod capture;
pub mod stream;

use crate::stats::Latency;
use anyhow::Result;
use capture::Capture;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use stream::{Connection, Exchange, Request};

/// Connections followed at once; beyond it new ones are ignored (counted).
const MAX_CONNECTIONS: usize = 65_536;

/// What to observe.
pub struct ObserveCfg {
    pub interface: String,
    /// Broker ports: traffic to them is requests, from them responses.
    pub ports: Vec<u16>,
    /// Capture duration (s).
    pub secs: f64,
    /// Live report interval (s); 0: none.
    pub every: f64,
}

#[derive(Default)]
struct ApiStats {
    latency: Latency,
    versions: BTreeMap<i16, u64>,
    requests: u64,
    request_bytes: u64,
    response_bytes: u64,
}

#[derive(Default)]
struct ClientStats {
    requests: u64,
    request_bytes: u64,
}

/// One API's figures in the report.
#[derive(Serialize)]
pub struct ApiOut {
    pub api: String,
    pub key: i16,
    /// Requests seen (answered or not).
    pub requests: u64,
    /// Requests by version.
    pub versions: BTreeMap<String, u64>,
    /// Exchanges timed (responses matched).
    pub count: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub p9999_us: u64,
    pub max_us: u64,
    pub request_bytes: u64,
    pub response_bytes: u64,
}

/// A client id's figures.
#[derive(Serialize)]
pub struct ClientOut {
    pub client_id: String,
    pub requests: u64,
    pub requests_per_s: f64,
    pub request_bytes: u64,
}

/// The whole report.
#[derive(Serialize)]
pub struct Report {
    pub interface: String,
    pub ports: Vec<u16>,
    pub secs: f64,
    pub packets: u64,
    /// Frames the kernel dropped (the capture fell behind): figures may miss exchanges.
    pub kernel_drops: u64,
    pub connections: u64,
    pub connections_ignored: u64,
    pub resyncs: u64,
    pub unanswered: u64,
    pub apis: Vec<ApiOut>,
    pub clients: Vec<ClientOut>,
}

fn api_name(key: i16) -> String {
    kafka_protocol::messages::ApiKey::try_from(key)
        .map(|k| format!("{k:?}"))
        .unwrap_or_else(|_| format!("Api{key}"))
}

#[derive(Default)]
struct Tally {
    apis: BTreeMap<i16, ApiStats>,
    clients: BTreeMap<String, ClientStats>,
}

impl Tally {
    fn request(&mut self, r: &Request) {
        let a = self.apis.entry(r.api_key).or_default();
        a.requests += 1;
        a.request_bytes += r.bytes as u64;
        *a.versions.entry(r.api_version).or_default() += 1;
        let c = self.clients.entry(r.client_id.clone()).or_default();
        c.requests += 1;
        c.request_bytes += r.bytes as u64;
    }

    fn exchange(&mut self, e: &Exchange) {
        let a = self.apis.entry(e.request.api_key).or_default();
        a.latency.record_us(e.latency_us());
        a.response_bytes += e.response_bytes as u64;
    }

    fn apis_out(&self) -> Vec<ApiOut> {
        self.apis
            .iter()
            .map(|(k, a)| ApiOut {
                api: api_name(*k),
                key: *k,
                requests: a.requests,
                versions: a
                    .versions
                    .iter()
                    .map(|(v, n)| (v.to_string(), *n))
                    .collect(),
                count: a.latency.count(),
                p50_us: a.latency.pct(50.0),
                p90_us: a.latency.pct(90.0),
                p99_us: a.latency.pct(99.0),
                p999_us: a.latency.pct(99.9),
                p9999_us: a.latency.pct(99.99),
                max_us: a.latency.pct(100.0),
                request_bytes: a.request_bytes,
                response_bytes: a.response_bytes,
            })
            .collect()
    }
}

/// Captures for `cfg.secs` and returns the report; prints a live table to stderr every
/// `cfg.every` seconds. Errors: the capture cannot be opened (interface, permission).
pub fn run(cfg: &ObserveCfg) -> Result<Report> {
    let mut cap = Capture::open(&cfg.interface, Duration::from_millis(100))?;
    eprintln!(
        "observe: capturing on {} for ports {:?} for {} s",
        cfg.interface, cfg.ports, cfg.secs
    );
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(cfg.secs);
    let mut next_live = start + Duration::from_secs_f64(cfg.every.max(0.001));
    let mut conns: HashMap<(SocketAddr, SocketAddr), Connection> = HashMap::new();
    let (mut total, mut live) = (Tally::default(), Tally::default());
    let (mut packets, mut seen, mut ignored, mut resyncs, mut unanswered) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    while Instant::now() < end {
        if cfg.every > 0.0 && Instant::now() >= next_live {
            print_live(&live, cfg.every);
            live = Tally::default();
            next_live += Duration::from_secs_f64(cfg.every);
        }
        let Some(seg) = cap.next()? else { continue };
        let (to_broker, key) = if cfg.ports.contains(&seg.dst.port()) {
            (true, (seg.src, seg.dst))
        } else if cfg.ports.contains(&seg.src.port()) {
            (false, (seg.dst, seg.src))
        } else {
            continue;
        };
        packets += 1;
        if !conns.contains_key(&key) {
            if conns.len() >= MAX_CONNECTIONS {
                ignored += 1;
                continue;
            }
            seen += 1;
        }
        let c = conns.entry(key).or_default();
        if to_broker {
            for r in c.client_segment(seg.seq, seg.syn, &seg.payload, seg.ts_ns) {
                total.request(&r);
                live.request(&r);
            }
        } else {
            for e in c.broker_segment(seg.seq, seg.syn, &seg.payload, seg.ts_ns) {
                total.exchange(&e);
                live.exchange(&e);
            }
        }
        if seg.fin_or_rst {
            if let Some(c) = conns.remove(&key) {
                resyncs += c.resyncs;
                unanswered += c.unanswered;
            }
        }
    }
    for c in conns.values() {
        resyncs += c.resyncs;
        unanswered += c.unanswered;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok(Report {
        interface: cfg.interface.clone(),
        ports: cfg.ports.clone(),
        secs,
        packets,
        kernel_drops: cap.drops(),
        connections: seen,
        connections_ignored: ignored,
        resyncs,
        unanswered,
        apis: total.apis_out(),
        clients: total
            .clients
            .iter()
            .map(|(id, c)| ClientOut {
                client_id: id.clone(),
                requests: c.requests,
                requests_per_s: c.requests as f64 / secs.max(1e-9),
                request_bytes: c.request_bytes,
            })
            .collect(),
    })
}

fn print_live(t: &Tally, every: f64) {
    for a in t.apis_out() {
        eprintln!(
            "observe: {:<22} {:>8.0} req/s  p50 {:>6} µs  p99 {:>7} µs  p99.9 {:>7} µs  max {:>7} µs",
            a.api,
            a.requests as f64 / every,
            a.p50_us,
            a.p99_us,
            a.p999_us,
            a.max_us
        );
    }
}

/// The report as a human table (stdout at the end).
pub fn human(r: &Report) -> String {
    let mut s = format!(
        "observed {:.1} s on {} ports {:?}: {} packets, {} connections, {} kernel drops, {} resyncs, {} unanswered\n",
        r.secs, r.interface, r.ports, r.packets, r.connections, r.kernel_drops, r.resyncs, r.unanswered
    );
    s += &format!(
        "{:<24} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "api", "requests", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "p99.99 µs", "max µs"
    );
    for a in &r.apis {
        s += &format!(
            "{:<24} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            a.api, a.requests, a.p50_us, a.p90_us, a.p99_us, a.p999_us, a.p9999_us, a.max_us
        );
    }
    s
}
