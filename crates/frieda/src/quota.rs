//! Client quotas (Kafka's `ClientQuotaManager`, KIP-13, KIP-55, KIP-219): produce and fetch byte
//! rates per user and client id, set with AlterClientQuotas (`kafka-configs --entity-type
//! users/clients`).
//!
//! **Which quota applies** to a request of user `U` (the principal's name) and client id `C`:
//! the first of `users=U,clients=C`, `users=U,clients=<default>`, `users=U`,
//! `users=<default>,clients=C`, `users=<default>,clients=<default>`, `users=<default>`,
//! `clients=C`, `clients=<default>` that sets the key (Kafka's `DefaultQuotaCallback`). Its level
//! also decides who shares the rate: a `users=U` quota is shared by all of U's client ids.
//!
//! **How the rate is measured**: bytes per second over `quota.window.num` (11) windows of
//! `quota.window.size.seconds` (1 s), at least `num - 1` windows long (Kafka's `Rate`). A
//! request that takes the rate over the quota is answered at once with
//! `throttle_time_ms = (rate - quota) / quota * window`, at most the whole window span, and the
//! connection reads nothing more for that long (KIP-219's muting; clients also wait). A
//! throttled fetch returns no records (they are fetched again after the wait), as Kafka's.
//!
//! **Request quotas** (`request_percentage`, KIP-124): the time a request keeps the broker busy
//! (its handler's time without waits for followers, new data or fsync), as a percentage of one
//! thread per second, is measured the same way; over the quota the connection is muted (and
//! Produce and Fetch answers carry the throttle time). ApiVersions and the SASL requests are
//! exempt, as in Kafka. `controller_mutation_rate` is stored and described, not enforced.
//!
//! Nothing is measured while no quota of the kind exists (one atomic load per request).

use frieda_meta::{ClientQuotas, QuotaEntity};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Quota keys of user and client-id entities, with whether the value must be integral.
pub const USER_CLIENT_KEYS: &[(&str, bool)] = &[
    (PRODUCER_BYTE_RATE, true),
    (CONSUMER_BYTE_RATE, true),
    (REQUEST_PERCENTAGE, false),
    ("controller_mutation_rate", false),
];
/// Quota keys of IP entities.
pub const IP_KEYS: &[(&str, bool)] = &[("connection_creation_rate", true)];
/// Produce bytes per second.
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
/// Fetch response bytes per second.
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
/// Request time: percent of one thread per second (KIP-124).
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
/// Entity types.
pub const USER: &str = "user";
/// Entity types.
pub const CLIENT_ID: &str = "client-id";
/// Entity types.
pub const IP: &str = "ip";
/// Most sensors kept; idle ones beyond it are dropped (they restart at zero).
pub const MAX_SENSORS: usize = 100_000;

/// What a quota limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaKind {
    /// Produce request bytes.
    Produce,
    /// Fetch response bytes.
    Fetch,
    /// Request time, in percent of one thread for a second.
    Request,
}

impl QuotaKind {
    fn key(self) -> &'static str {
        match self {
            QuotaKind::Produce => PRODUCER_BYTE_RATE,
            QuotaKind::Fetch => CONSUMER_BYTE_RATE,
            QuotaKind::Request => REQUEST_PERCENTAGE,
        }
    }
}

/// Settings (`quota.window.num`, `quota.window.size.seconds`).
#[derive(Debug, Clone, Copy)]
pub struct QuotaWindow {
    /// Windows kept.
    pub samples: usize,
    /// Width of one window.
    pub width: Duration,
}

impl Default for QuotaWindow {
    fn default() -> Self {
        QuotaWindow {
            samples: 11,
            width: Duration::from_secs(1),
        }
    }
}

/// The sliding rate of one sensor: `samples` windows of `width`.
#[derive(Debug)]
struct Sensor {
    windows: Vec<(Instant, f64)>,
    last_used: Instant,
}

impl Sensor {
    fn new(now: Instant) -> Self {
        Sensor {
            windows: vec![(now, 0.0)],
            last_used: now,
        }
    }

    /// Adds `amount` at `now` (negative: takes it back).
    fn record(&mut self, w: QuotaWindow, amount: f64, now: Instant) {
        self.last_used = now;
        let current = self.windows.last().map(|x| x.0).unwrap_or(now);
        if now.duration_since(current) >= w.width {
            self.windows.push((now, 0.0));
            if self.windows.len() > w.samples {
                let drop = self.windows.len() - w.samples;
                self.windows.drain(..drop);
            }
        }
        if let Some(last) = self.windows.last_mut() {
            last.1 += amount;
        }
    }

    /// Bytes per second and the span it was measured over (Kafka's `Rate.windowSize`).
    fn rate(&self, w: QuotaWindow, now: Instant) -> (f64, Duration) {
        let span_limit = w.width * w.samples as u32;
        let live: Vec<&(Instant, f64)> = self
            .windows
            .iter()
            .filter(|(start, _)| now.duration_since(*start) < span_limit)
            .collect();
        let total: f64 = live.iter().map(|x| x.1).sum();
        let oldest = live.first().map(|x| x.0).unwrap_or(now);
        let min_span = w.width * (w.samples.saturating_sub(1)) as u32;
        let span = now.duration_since(oldest).max(min_span).max(w.width);
        (total / span.as_secs_f64(), span)
    }
}

/// The quotas in force, parsed for lookups.
#[derive(Debug, Default)]
struct Limits {
    by_entity: HashMap<QuotaEntity, HashMap<String, f64>>,
}

/// Client quotas: the configured limits and one rate sensor per (kind, user, client id) group.
#[derive(Debug)]
pub struct QuotaManager {
    window: QuotaWindow,
    limits: RwLock<Arc<Limits>>,
    /// Whether any byte-rate quota exists (the fast path when none does).
    active: AtomicBool,
    /// Whether any request quota exists.
    requests: AtomicBool,
    sensors: Mutex<HashMap<(QuotaKind, String, String), Sensor>>,
}

impl QuotaManager {
    /// No quotas yet; rates measured with `window`.
    pub fn new(window: QuotaWindow) -> Self {
        QuotaManager {
            window,
            limits: RwLock::new(Arc::new(Limits::default())),
            active: AtomicBool::new(false),
            requests: AtomicBool::new(false),
            sensors: Mutex::new(HashMap::new()),
        }
    }

    /// Takes the configured quotas (from `meta/security.json` or the metadata image).
    pub fn replace(&self, quotas: &ClientQuotas) {
        let mut limits = Limits::default();
        let mut active = false;
        let mut requests = false;
        for (entity, keys) in &quotas.0 {
            let parsed: HashMap<String, f64> = keys
                .iter()
                .filter_map(|(k, v)| v.parse::<f64>().ok().map(|v| (k.clone(), v)))
                .collect();
            active |=
                parsed.contains_key(PRODUCER_BYTE_RATE) || parsed.contains_key(CONSUMER_BYTE_RATE);
            requests |= parsed.contains_key(REQUEST_PERCENTAGE);
            limits.by_entity.insert(entity.clone(), parsed);
        }
        *self.limits.write() = Arc::new(limits);
        self.active.store(active, Ordering::Relaxed);
        self.requests.store(requests, Ordering::Relaxed);
    }

    /// Whether some request quota exists (requests are then timed).
    pub fn requests_limited(&self) -> bool {
        self.requests.load(Ordering::Relaxed)
    }

    fn kind_active(&self, kind: QuotaKind) -> bool {
        match kind {
            QuotaKind::Request => self.requests_limited(),
            _ => self.active.load(Ordering::Relaxed),
        }
    }

    /// The quota for `kind` of user `user` and client id `client`, with the sensor group it is
    /// measured in (Kafka's precedence; see the module doc).
    fn lookup(&self, kind: QuotaKind, user: &str, client: &str) -> Option<(f64, String, String)> {
        let limits = self.limits.read().clone();
        let e = |u: Option<Option<&str>>, c: Option<Option<&str>>| -> QuotaEntity {
            let mut v = Vec::new();
            if let Some(c) = c {
                v.push((CLIENT_ID.to_string(), c.map(str::to_string)));
            }
            if let Some(u) = u {
                v.push((USER.to_string(), u.map(str::to_string)));
            }
            v
        };
        let (u, c) = (Some(user), Some(client));
        let order: [(QuotaEntity, bool, bool); 8] = [
            (e(Some(u), Some(c)), true, true),
            (e(Some(u), Some(None)), true, true),
            (e(Some(u), None), true, false),
            (e(Some(None), Some(c)), true, true),
            (e(Some(None), Some(None)), true, true),
            (e(Some(None), None), true, false),
            (e(None, Some(c)), false, true),
            (e(None, Some(None)), false, true),
        ];
        for (entity, by_user, by_client) in order {
            if let Some(v) = limits
                .by_entity
                .get(&entity)
                .and_then(|m| m.get(kind.key()))
            {
                return Some((
                    *v,
                    if by_user {
                        user.to_string()
                    } else {
                        String::new()
                    },
                    if by_client {
                        client.to_string()
                    } else {
                        String::new()
                    },
                ));
            }
        }
        None
    }

    /// Records `amount` of `kind` (bytes, or percent-seconds of request time) for
    /// `user`/`client` at `now`; the throttle time (ms) the request earned, 0 within the quota.
    pub fn record(
        &self,
        kind: QuotaKind,
        user: &str,
        client: &str,
        amount: f64,
        now: Instant,
    ) -> u32 {
        if !self.kind_active(kind) {
            return 0;
        }
        let Some((quota, u, c)) = self.lookup(kind, user, client) else {
            return 0;
        };
        let mut sensors = self.sensors.lock();
        if sensors.len() >= MAX_SENSORS {
            let idle = Duration::from_secs(3600);
            sensors.retain(|_, s| now.duration_since(s.last_used) < idle);
        }
        let sensor = sensors
            .entry((kind, u, c))
            .or_insert_with(|| Sensor::new(now));
        sensor.record(self.window, amount, now);
        let (rate, span) = sensor.rate(self.window, now);
        if rate <= quota || quota <= 0.0 {
            return 0;
        }
        let max = self.window.width * self.window.samples as u32;
        let throttle = span.mul_f64((rate - quota) / quota).min(max);
        throttle.as_millis().min(u32::MAX as u128) as u32
    }

    /// Takes back `bytes` recorded for a response that was not sent (a throttled fetch).
    pub fn unrecord(&self, kind: QuotaKind, user: &str, client: &str, bytes: usize, now: Instant) {
        if !self.kind_active(kind) {
            return;
        }
        if let Some((_, u, c)) = self.lookup(kind, user, client) {
            if let Some(s) = self.sensors.lock().get_mut(&(kind, u, c)) {
                s.record(self.window, -(bytes as f64), now);
            }
        }
    }
}

/// Checks one AlterClientQuotas entity and its operations as Kafka's
/// `ClientQuotaControlManager` does.
///
/// Errors: the INVALID_REQUEST message (empty entity, unknown or duplicate entity type, empty
/// name, IP combined with user or client id, unknown key, a value not above 0, a fractional
/// value of an integral key).
pub fn validate(entity: &QuotaEntity, ops: &[(String, Option<f64>)]) -> Result<(), String> {
    if entity.is_empty() {
        return Err("Invalid empty client quota entity".into());
    }
    let mut seen = Vec::new();
    for (t, name) in entity {
        if seen.contains(&t.as_str()) {
            return Err(format!(
                "Invalid client quota entity, duplicate entity entry {t}"
            ));
        }
        if ![USER, CLIENT_ID, IP].contains(&t.as_str()) {
            return Err(format!("Unhandled client quota entity type: {t}"));
        }
        if name.as_deref() == Some("") {
            return Err(format!("Empty {t} not supported"));
        }
        seen.push(t.as_str());
    }
    let keys = if seen.contains(&IP) {
        if seen.len() > 1 {
            return Err("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId".into());
        }
        IP_KEYS
    } else {
        USER_CLIENT_KEYS
    };
    let mut keys_seen = Vec::new();
    for (key, value) in ops {
        if keys_seen.contains(key) {
            return Err(format!("Duplicate quota key {key}"));
        }
        keys_seen.push(key.clone());
        let Some(value) = value else { continue };
        let Some((_, integral)) = keys.iter().find(|(k, _)| k == key) else {
            return Err(format!("Invalid configuration key {key}"));
        };
        if *value <= 0.0 {
            return Err(format!("Quota {key} must be greater than 0"));
        }
        if *integral && (value % 1.0).abs() > 1e-6 {
            return Err(format!("{key} cannot be a fractional value."));
        }
    }
    Ok(())
}

/// An entity in its canonical form: sorted by type.
pub fn canonical(mut entity: QuotaEntity) -> QuotaEntity {
    entity.sort();
    entity
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (entity, key, value) of a test quota.
    type Entry<'a> = (&'a [(&'a str, Option<&'a str>)], &'a str, &'a str);

    fn quotas(entries: &[Entry]) -> ClientQuotas {
        let mut q = ClientQuotas::default();
        for (entity, k, v) in entries {
            let e = canonical(
                entity
                    .iter()
                    .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                    .collect(),
            );
            q.set(&e, k, Some(v));
        }
        q
    }

    #[test]
    fn precedence_as_kafkas_default_callback() {
        let m = QuotaManager::new(QuotaWindow::default());
        m.replace(&quotas(&[
            (
                &[(USER, Some("alice")), (CLIENT_ID, Some("app"))],
                PRODUCER_BYTE_RATE,
                "100",
            ),
            (&[(USER, Some("alice"))], PRODUCER_BYTE_RATE, "200"),
            (&[(USER, None)], PRODUCER_BYTE_RATE, "300"),
            (&[(CLIENT_ID, Some("tool"))], PRODUCER_BYTE_RATE, "400"),
            (&[(CLIENT_ID, None)], CONSUMER_BYTE_RATE, "500"),
        ]));
        let get = |u: &str, c: &str, k| m.lookup(k, u, c);
        assert_eq!(
            get("alice", "app", QuotaKind::Produce),
            Some((100.0, "alice".into(), "app".into()))
        );
        assert_eq!(
            get("alice", "other", QuotaKind::Produce),
            Some((200.0, "alice".into(), String::new()))
        );
        assert_eq!(
            get("bob", "tool", QuotaKind::Produce),
            Some((300.0, "bob".into(), String::new()))
        );
        assert_eq!(
            get("bob", "x", QuotaKind::Fetch),
            Some((500.0, String::new(), "x".into()))
        );
    }

    #[test]
    fn throttle_grows_with_the_excess_and_the_fast_path_measures_nothing() {
        let w = QuotaWindow {
            samples: 11,
            width: Duration::from_secs(1),
        };
        let m = QuotaManager::new(w);
        let t0 = Instant::now();
        assert_eq!(
            m.record(QuotaKind::Produce, "u", "c", 1e9, t0),
            0,
            "no quotas: no throttle"
        );
        m.replace(&quotas(&[(
            &[(USER, Some("u"))],
            PRODUCER_BYTE_RATE,
            "1000",
        )]));
        // 5000 bytes over a 10 s minimum span is 500 B/s: within the quota.
        assert_eq!(m.record(QuotaKind::Produce, "u", "c", 5000.0, t0), 0);
        // 20000 more: 2500 B/s, 1.5 times over the quota: 15 s of throttle, capped at 11 s.
        let t = m.record(QuotaKind::Produce, "u", "c", 20000.0, t0);
        assert!((10_000..=11_000).contains(&t), "{t}");
        // Another user is not throttled; the fetch rate is separate.
        assert_eq!(m.record(QuotaKind::Produce, "v", "c", 20000.0, t0), 0);
        assert_eq!(m.record(QuotaKind::Fetch, "u", "c", 20000.0, t0), 0);
        m.unrecord(QuotaKind::Produce, "u", "c", 20000, t0);
        assert_eq!(m.record(QuotaKind::Produce, "u", "c", 1.0, t0), 0);
    }

    #[test]
    fn request_time_is_limited_separately_from_bytes() {
        let w = QuotaWindow {
            samples: 11,
            width: Duration::from_secs(1),
        };
        let m = QuotaManager::new(w);
        let t0 = Instant::now();
        m.replace(&quotas(&[(
            &[(USER, Some("u"))],
            PRODUCER_BYTE_RATE,
            "1000",
        )]));
        assert!(
            !m.requests_limited(),
            "a byte-rate quota does not time requests"
        );
        assert_eq!(m.record(QuotaKind::Request, "u", "c", 1e6, t0), 0);
        m.replace(&quotas(&[(&[(USER, Some("u"))], REQUEST_PERCENTAGE, "1")]));
        assert!(m.requests_limited());
        // 5 percent-seconds (50 ms of handler time) over the 10 s minimum span: 0.5 %, within.
        assert_eq!(m.record(QuotaKind::Request, "u", "c", 5.0, t0), 0);
        // 10 more: 1.5 % of a thread, over 1 %: throttled.
        assert!(m.record(QuotaKind::Request, "u", "c", 10.0, t0) > 0);
        // Asking with nothing to add sees the same excess (the pre-dispatch check).
        assert!(m.record(QuotaKind::Request, "u", "c", 0.0, t0) > 0);
        // The byte rates are no longer limited; another user is not throttled.
        assert_eq!(m.record(QuotaKind::Produce, "u", "c", 1e9, t0), 0);
        assert_eq!(m.record(QuotaKind::Request, "v", "c", 100.0, t0), 0);
    }

    #[test]
    fn validation_as_kafka() {
        let e = |v: &[(&str, Option<&str>)]| -> QuotaEntity {
            v.iter()
                .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                .collect()
        };
        let op = |k: &str, v: f64| vec![(k.to_string(), Some(v))];
        assert!(validate(&e(&[(USER, Some("a"))]), &op(PRODUCER_BYTE_RATE, 1024.0)).is_ok());
        assert!(validate(&e(&[]), &op(PRODUCER_BYTE_RATE, 1.0)).is_err());
        assert!(validate(&e(&[(USER, Some(""))]), &op(PRODUCER_BYTE_RATE, 1.0)).is_err());
        assert!(validate(&e(&[(USER, None)]), &op("nope", 1.0)).is_err());
        assert!(validate(&e(&[(USER, None)]), &op(PRODUCER_BYTE_RATE, 0.0)).is_err());
        assert!(validate(&e(&[(USER, None)]), &op(PRODUCER_BYTE_RATE, 1.5)).is_err());
        assert!(validate(&e(&[(USER, None)]), &op("request_percentage", 1.5)).is_ok());
        assert!(validate(
            &e(&[(IP, Some("1.2.3.4")), (USER, None)]),
            &op(PRODUCER_BYTE_RATE, 1.0)
        )
        .is_err());
        assert!(validate(
            &e(&[(IP, Some("1.2.3.4"))]),
            &op("connection_creation_rate", 5.0)
        )
        .is_ok());
    }
}
