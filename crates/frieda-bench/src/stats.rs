//! Latency histograms (microseconds, 3 significant digits) and the summary every subcommand
//! prints and writes as JSON.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Highest trackable latency: one hour. Larger values are clamped (and counted in `clamped`).
pub const MAX_TRACKABLE_US: u64 = 3_600_000_000;

pub struct Latency {
    pub hist: Histogram<u64>,
    pub clamped: u64,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    pub fn new() -> Self {
        Latency {
            hist: Histogram::new_with_bounds(1, MAX_TRACKABLE_US, 3).expect("histogram bounds"),
            clamped: 0,
        }
    }

    /// Records a latency; sub-microsecond values count as 1 µs.
    #[allow(dead_code)]
    #[inline]
    pub fn record(&mut self, d: Duration) {
        self.record_us(d.as_micros() as u64);
    }

    #[inline]
    pub fn record_us(&mut self, us: u64) {
        let v = us.clamp(1, MAX_TRACKABLE_US);
        if v != us && us > MAX_TRACKABLE_US {
            self.clamped += 1;
        }
        self.hist.record(v).expect("value within bounds");
    }

    /// Records `n` values `first, first+step, ...` (µs): the latencies of records scheduled
    /// evenly and acknowledged together.
    #[allow(dead_code)]
    pub fn record_arith(&mut self, first_us: i64, step_ns: f64, n: u64) {
        for i in 0..n {
            let v = first_us as f64 - (i as f64) * step_ns / 1000.0;
            self.record_us(v.max(1.0) as u64);
        }
    }

    pub fn merge(&mut self, other: &Latency) {
        self.hist.add(&other.hist).expect("same bounds");
        self.clamped += other.clamped;
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn pct(&self, p: f64) -> u64 {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.value_at_quantile(p / 100.0)
        }
    }

    /// The distribution on a fixed grid: 0..89 % in steps of 1, then "nines"
    /// 1 - 10^(-x) for x = 1.0, 1.1, ... 6.0 (90 % .. 99.9999 %), then 100 % (max).
    /// This is what the CDF and percentile-curve plots draw.
    pub fn distribution(&self) -> Vec<PercentilePoint> {
        let mut out = Vec::new();
        if self.hist.is_empty() {
            return out;
        }
        for p in 0..90 {
            let p = p as f64;
            out.push(PercentilePoint { p, us: self.pct(p) });
        }
        for i in 10..=60 {
            let x = i as f64 / 10.0;
            let p = 100.0 * (1.0 - 10f64.powf(-x));
            // round to keep the JSON readable
            let p = (p * 1e6).round() / 1e6;
            out.push(PercentilePoint { p, us: self.pct(p) });
        }
        out.push(PercentilePoint {
            p: 100.0,
            us: self.hist.max(),
        });
        out
    }
}

#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct PercentilePoint {
    pub p: f64,
    pub us: u64,
}

#[derive(Serialize, Clone, Debug, Default)]
pub struct BrokerProc {
    pub pid: u32,
    pub cpu_s: Option<f64>,
    pub rss_max_kb: Option<u64>,
}

/// Counted failures, by kind; never hidden.
#[derive(Serialize, Default, Clone, Debug)]
pub struct Errors {
    /// Records whose produce failed with a Kafka error code, by code name.
    pub by_code: BTreeMap<String, u64>,
    /// Records whose request got no response within the request timeout.
    pub timeout_records: u64,
    /// Records in flight on a connection that broke.
    pub connection_lost_records: u64,
    /// Records never sent (schedule ended before the broker took them, or the drain deadline expired).
    pub unsent_records: u64,
    /// Connection or handshake failures (each followed by a reconnect attempt).
    pub connect_failures: u64,
    /// Responses that could not be decoded or did not match the request.
    pub protocol_errors: u64,
    /// Consumer (e2e): fetch errors, by code name or kind.
    pub fetch_errors: BTreeMap<String, u64>,
    /// First few error messages, for the human.
    pub messages: Vec<String>,
}

impl Errors {
    pub fn record_total(&self) -> u64 {
        self.by_code.values().sum::<u64>()
            + self.timeout_records
            + self.connection_lost_records
            + self.unsent_records
    }

    pub fn code(&mut self, code: i16, n: u64) {
        let name = match kafka_protocol::ResponseError::try_from_code(code) {
            Some(e) => format!("{e:?}({code})"),
            None => format!("code {code}"),
        };
        *self.by_code.entry(name).or_default() += n;
    }

    pub fn note(&mut self, msg: String) {
        if self.messages.len() < 10 {
            self.messages.push(msg);
        }
    }

    pub fn merge(&mut self, o: &Errors) {
        for (k, v) in &o.by_code {
            *self.by_code.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.fetch_errors {
            *self.fetch_errors.entry(k.clone()).or_default() += v;
        }
        self.timeout_records += o.timeout_records;
        self.connection_lost_records += o.connection_lost_records;
        self.unsent_records += o.unsent_records;
        self.connect_failures += o.connect_failures;
        self.protocol_errors += o.protocol_errors;
        for m in &o.messages {
            self.note(m.clone());
        }
    }
}

/// One scheduled second of a run with `--timeline` (t_s: its start, seconds after the start of
/// the measured window; 2 significant digits).
#[derive(Serialize, Clone, Debug, Default)]
pub struct SecondOut {
    pub t_s: f64,
    pub records: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

/// A stretch without a single acknowledgement (from_s: seconds after the start of the measured
/// window, to the acknowledgement bucket's resolution).
#[derive(Serialize, Clone, Debug, Default)]
pub struct GapOut {
    pub from_s: f64,
    pub ms: u64,
}

/// Measured records scheduled in [from_s, to_s) of the measured window.
#[derive(Serialize, Clone, Debug, Default)]
pub struct PhaseOut {
    pub from_s: f64,
    pub to_s: f64,
    pub records: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub p9999_us: u64,
    pub max_us: u64,
}

#[derive(Serialize, Clone, Debug, Default)]
pub struct TimelineOut {
    pub ack_bucket_ms: u64,
    /// Longest stretch without an acknowledgement after the measured window began, ms.
    pub longest_ack_gap_ms: u64,
    /// Every such stretch of at least 100 ms.
    pub ack_gaps: Vec<GapOut>,
    pub phases: Vec<PhaseOut>,
    pub per_second: Vec<SecondOut>,
}

/// `--pause-pid`: the process stopped (SIGSTOP) and continued (SIGCONT) during the run.
#[derive(Serialize, Clone, Debug, Default)]
pub struct PauseOut {
    pub pid: u32,
    /// Planned, seconds after the start of the measured window.
    pub at_s: f64,
    pub secs: f64,
    /// When the signals were actually sent (same clock), None if not sent.
    pub stopped_at_s: Option<f64>,
    pub continued_at_s: Option<f64>,
    /// The same, as Unix time (s), to line up with other records (ISR changes).
    pub stopped_at_unix: Option<f64>,
    pub continued_at_unix: Option<f64>,
    pub error: Option<String>,
}

/// The result of one run: the human summary and the JSON line.
#[derive(Serialize, Clone, Debug, Default)]
pub struct Summary {
    pub mode: String,
    pub label: String,
    pub broker: String,
    pub bootstrap: String,
    pub topic: String,
    pub acks: i16,
    pub record_size: usize,
    pub keys: u64,
    pub partitions: usize,
    pub producers: usize,
    /// Aggregate offered rate, records/s; 0 = unthrottled.
    pub offered_rate: f64,
    pub max_in_flight: usize,
    pub linger_us: u64,
    pub batch_bytes: usize,
    pub tick_us: u64,
    pub warmup_s: f64,
    pub duration_s: f64,
    /// Acknowledged (or, for e2e, consumed) measured records per second.
    pub throughput_rps: f64,
    /// Value bytes per second (record_size × throughput), MB = 10^6 bytes.
    pub throughput_mb_s: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub p9999_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
    /// Measured records that were acknowledged (e2e: consumed) and are in the histogram.
    pub records: u64,
    /// Failed records (all kinds; see error_detail).
    pub errors: u64,
    pub error_detail: Errors,
    /// All records sent and all acknowledged without error, warm-up and drain included
    /// (a check against the log end offsets).
    pub sent_total: u64,
    pub acked_total: u64,
    /// Produce requests sent (all, including warm-up) and records per request.
    pub requests: u64,
    pub records_per_request: f64,
    /// Broker process CPU (utime+stime) over the measured window, if --broker-pid was given.
    pub broker_cpu_s: Option<f64>,
    pub broker_cpu_s_per_million: Option<f64>,
    pub broker_rss_max_kb: Option<u64>,
    /// With several --broker-pid: each process's CPU seconds and max RSS (KiB) over the window
    /// (broker_cpu_s is their sum, broker_rss_max_kb the sum of the maxima).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub broker_procs: Vec<BrokerProc>,
    /// This load generator's own CPU over the measured window.
    pub client_cpu_s: f64,
    /// The whole machine's busy CPU seconds (all cores, /proc/stat) over the measured window,
    /// and what is left of it after the brokers and this generator: other processes (and the
    /// kernel's work not charged to a process), i.e. how noisy the machine was.
    pub machine_cpu_s: Option<f64>,
    pub other_cpu_s: Option<f64>,
    pub window_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause: Option<PauseOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<TimelineOut>,
    pub api_versions: BTreeMap<String, i16>,
    pub started_at_unix: f64,
    /// e2e only: the produce→ack latency of the same records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub produce_ack: Option<Box<Summary>>,
    /// Produce only: each measured request's round trip as this client saw it (request written
    /// to response read, µs; no scheduling delay), what `frieda-bench observe` sees on the wire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_rtt_us: Option<RttOut>,
    pub percentiles: Vec<PercentilePoint>,
}

/// Percentiles of request round trips (µs).
#[derive(Serialize, Clone, Debug, Default)]
pub struct RttOut {
    pub count: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
}

impl RttOut {
    pub fn of(l: &Latency) -> RttOut {
        RttOut {
            count: l.count(),
            p50: l.pct(50.0),
            p90: l.pct(90.0),
            p99: l.pct(99.0),
            p999: l.pct(99.9),
            p9999: l.pct(99.99),
            max: l.pct(100.0),
        }
    }
}

impl Summary {
    pub fn fill_latency(&mut self, l: &Latency) {
        self.p50_us = l.pct(50.0);
        self.p90_us = l.pct(90.0);
        self.p99_us = l.pct(99.0);
        self.p999_us = l.pct(99.9);
        self.p9999_us = l.pct(99.99);
        self.max_us = if l.hist.is_empty() { 0 } else { l.hist.max() };
        self.mean_us = if l.hist.is_empty() {
            0.0
        } else {
            (l.hist.mean() * 10.0).round() / 10.0
        };
        self.records = l.count();
        self.percentiles = l.distribution();
    }

    pub fn human(&self) -> String {
        let mut s = String::new();
        let rate = if self.offered_rate > 0.0 {
            format!("{:.0} rec/s offered", self.offered_rate)
        } else {
            "unthrottled".into()
        };
        s += &format!(
            "{} {}{}: {} producers, {} partitions, {} B records, acks={}, {}, in-flight {}, linger {} µs, batch {} B, {:.0}s (+{:.0}s warm-up)\n",
            self.mode,
            self.broker,
            if self.label.is_empty() { String::new() } else { format!(" [{}]", self.label) },
            self.producers,
            self.partitions,
            self.record_size,
            self.acks,
            rate,
            self.max_in_flight,
            self.linger_us,
            self.batch_bytes,
            self.duration_s,
            self.warmup_s
        );
        s += &format!(
            "  throughput {:.0} rec/s ({:.2} MB/s), {} records, {} errors, {:.1} records/request\n",
            self.throughput_rps,
            self.throughput_mb_s,
            self.records,
            self.errors,
            self.records_per_request
        );
        s += &format!(
            "  latency µs: p50 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}  max {}  mean {:.0}\n",
            self.p50_us,
            self.p90_us,
            self.p99_us,
            self.p999_us,
            self.p9999_us,
            self.max_us,
            self.mean_us
        );
        if let Some(pa) = &self.produce_ack {
            s += &format!(
                "  produce ack µs: p50 {}  p99 {}  p99.9 {}  p99.99 {}  max {}\n",
                pa.p50_us, pa.p99_us, pa.p999_us, pa.p9999_us, pa.max_us
            );
        }
        if let (Some(c), Some(r)) = (self.broker_cpu_s, self.broker_rss_max_kb) {
            s += &format!(
                "  broker cpu {:.2} s ({:.2} s per million records), rss max {} MiB; client cpu {:.2} s\n",
                c,
                self.broker_cpu_s_per_million.unwrap_or(0.0),
                r / 1024,
                self.client_cpu_s
            );
        } else {
            s += &format!("  client cpu {:.2} s\n", self.client_cpu_s);
        }
        if let Some(t) = &self.timeline {
            s += &format!(
                "  longest stretch without an ack {} ms; gaps >= 100 ms: {}\n",
                t.longest_ack_gap_ms,
                t.ack_gaps
                    .iter()
                    .map(|g| format!("{} ms at {:.2} s", g.ms, g.from_s))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for ph in &t.phases {
                s += &format!(
                    "  scheduled {:.1}-{:.1} s: {} records, p50 {} p99 {} p99.9 {} p99.99 {} max {} µs\n",
                    ph.from_s, ph.to_s, ph.records, ph.p50_us, ph.p99_us, ph.p999_us, ph.p9999_us, ph.max_us
                );
            }
        }
        if let Some(p) = &self.pause {
            s += &format!(
                "  pid {} SIGSTOP at {:?} s, SIGCONT at {:?} s{}\n",
                p.pid,
                p.stopped_at_s,
                p.continued_at_s,
                p.error
                    .as_ref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            );
        }
        if self.errors > 0
            || self.error_detail.connect_failures > 0
            || self.error_detail.protocol_errors > 0
        {
            s += &format!(
                "  errors: {}\n",
                serde_json::to_string(&self.error_detail).unwrap_or_default()
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_uniform_1_to_10000() {
        let mut l = Latency::new();
        for v in 1..=10_000u64 {
            l.record_us(v);
        }
        assert_eq!(l.count(), 10_000);
        // 3 significant digits: values within 0.1 %
        let within =
            |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 0.001 + 1.0;
        assert!(within(l.pct(50.0), 5_000), "{}", l.pct(50.0));
        assert!(within(l.pct(99.0), 9_900), "{}", l.pct(99.0));
        assert!(within(l.pct(99.9), 9_990), "{}", l.pct(99.9));
        assert!(within(l.hist.max(), 10_000));
    }

    #[test]
    fn tail_is_not_hidden() {
        let mut l = Latency::new();
        for _ in 0..99_900 {
            l.record_us(100);
        }
        for _ in 0..100 {
            l.record_us(50_000);
        }
        assert_eq!(l.pct(50.0), 100);
        assert_eq!(l.pct(99.0), 100);
        assert!(l.pct(99.95) >= 49_950);
        assert!(l.pct(99.99) >= 49_950);
    }

    #[test]
    fn clamping_and_sub_microsecond() {
        let mut l = Latency::new();
        l.record(Duration::from_nanos(10));
        l.record_us(MAX_TRACKABLE_US * 2);
        assert_eq!(l.clamped, 1);
        assert_eq!(l.hist.min(), 1);
        assert!(l.hist.max() >= MAX_TRACKABLE_US * 999 / 1000);
    }

    #[test]
    fn arithmetic_series_records_each_record() {
        // 4 records scheduled 1 ms apart, acknowledged together 10 ms after the first one's
        // schedule: latencies 10, 9, 8, 7 ms.
        let mut l = Latency::new();
        l.record_arith(10_000, 1_000_000.0, 4);
        assert_eq!(l.count(), 4);
        assert_eq!(l.hist.min(), 7_000);
        assert!((l.hist.max() as i64 - 10_000).abs() <= 10);
    }

    #[test]
    fn merge_and_distribution_monotone() {
        let mut a = Latency::new();
        let mut b = Latency::new();
        for v in 1..1000u64 {
            a.record_us(v);
            b.record_us(v * 10);
        }
        a.merge(&b);
        assert_eq!(a.count(), 1998);
        let d = a.distribution();
        assert_eq!(d.first().unwrap().p, 0.0);
        assert_eq!(d.last().unwrap().p, 100.0);
        for w in d.windows(2) {
            assert!(w[0].p < w[1].p, "{:?}", w);
            assert!(w[0].us <= w[1].us, "{:?}", w);
        }
        assert!(d.iter().any(|x| x.p == 99.9));
        assert!(d.iter().any(|x| x.p == 99.99));
    }

    #[test]
    fn errors_are_counted() {
        let mut e = Errors::default();
        e.code(2, 5); // CORRUPT_MESSAGE
        e.code(-1, 1);
        e.timeout_records = 3;
        assert_eq!(e.record_total(), 9);
        assert!(e.by_code.keys().any(|k| k.contains("(2)")));
    }
}
