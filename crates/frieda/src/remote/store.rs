//! The bucket: the S3 client (the `object_store` crate) and where each remote segment's objects
//! go (docs/tiered-storage.md, "Objects in the bucket"). Keys follow Aiven's plugin:
//! `<key.prefix><topic>-<topic id>/<partition>/<base offset, 20 digits>-<segment id>.<suffix>`,
//! ids in Kafka's text form (URL-safe base64 without padding).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use base64::Engine;
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use uuid::Uuid;

use super::config::S3Config;

/// The three objects of a remote segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// The segment's `.log`, byte for byte.
    Log,
    /// Its indexes (`frieda_log::ClosedSegment::indexes`).
    Indexes,
    /// JSON: sizes, CRC-32C of each object, format version; written last.
    Manifest,
}

impl ObjectKind {
    /// Every kind, in upload order.
    pub const ALL: [ObjectKind; 3] = [ObjectKind::Log, ObjectKind::Indexes, ObjectKind::Manifest];

    fn suffix(self) -> &'static str {
        match self {
            ObjectKind::Log => "log",
            ObjectKind::Indexes => "indexes",
            ObjectKind::Manifest => "rsm-manifest",
        }
    }
}

/// Kafka's text form of a UUID (`Uuid.toString`: URL-safe base64, no padding).
pub fn kafka_uuid(id: Uuid) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes())
}

/// One remote segment's place: topic, topic id, partition, base offset and segment id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentKey<'a> {
    /// Topic name.
    pub topic: &'a str,
    /// Topic id.
    pub topic_id: Uuid,
    /// Partition index.
    pub partition: i32,
    /// First offset of the segment.
    pub base_offset: i64,
    /// The segment id (new per copy attempt).
    pub segment_id: Uuid,
}

/// The bucket, through `object_store`'s S3 client.
#[derive(Debug)]
pub struct RemoteStore {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    part_size: usize,
}

impl RemoteStore {
    /// A client for `cfg`'s bucket: static credentials if given, else the `AWS_*` environment;
    /// plain `http://` endpoints allowed (local S3-compatible servers); requests time out after
    /// 30 s and are retried by the client (its backoff, up to 3 times).
    ///
    /// Errors: a bucket missing or an endpoint the client refuses.
    pub fn new(cfg: &S3Config) -> anyhow::Result<RemoteStore> {
        let bucket = cfg.bucket.as_deref().context("no bucket named")?;
        // reqwest speaks TLS through rustls with the process's default provider (it panics
        // without one): ring, as the broker's own TLS. Already installed is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut b = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_region(&cfg.region)
            .with_virtual_hosted_style_request(!cfg.path_style)
            .with_client_options(
                ClientOptions::new()
                    .with_allow_http(true)
                    .with_timeout(Duration::from_secs(30))
                    .with_connect_timeout(Duration::from_secs(5)),
            )
            .with_retry(RetryConfig {
                max_retries: 3,
                retry_timeout: Duration::from_secs(60),
                ..Default::default()
            });
        if let Some(e) = &cfg.endpoint {
            b = b.with_endpoint(e);
        }
        if let (Some(id), Some(secret)) = (&cfg.access_key_id, &cfg.secret_access_key) {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
        }
        let store = b.build().context("the S3 client")?;
        Ok(RemoteStore {
            store: Arc::new(store),
            prefix: cfg.key_prefix.clone(),
            part_size: cfg.part_size as usize,
        })
    }

    /// A store in memory (`object_store`'s `InMemory`), for tests of what reads and writes it.
    #[cfg(test)]
    pub(crate) fn in_memory() -> RemoteStore {
        RemoteStore {
            store: Arc::new(object_store::memory::InMemory::new()),
            prefix: String::new(),
            part_size: 5 << 20,
        }
    }

    /// Bytes per multipart upload part.
    pub fn part_size(&self) -> usize {
        self.part_size
    }

    /// The key prefix of a topic's objects: `<prefix><topic>-<topic id>/`.
    pub fn topic_prefix(&self, topic: &str, topic_id: Uuid) -> String {
        format!("{}{topic}-{}/", self.prefix, kafka_uuid(topic_id))
    }

    /// The key prefix of a partition's objects: `<prefix><topic>-<topic id>/<partition>/`.
    pub fn partition_prefix(&self, topic: &str, topic_id: Uuid, partition: i32) -> String {
        format!("{}{partition}/", self.topic_prefix(topic, topic_id))
    }

    /// The key of one object of a remote segment.
    pub fn key(&self, s: &SegmentKey<'_>, kind: ObjectKind) -> Path {
        Path::from(format!(
            "{}{:020}-{}.{}",
            self.partition_prefix(s.topic, s.topic_id, s.partition),
            s.base_offset,
            kafka_uuid(s.segment_id),
            kind.suffix()
        ))
    }

    /// The key of a diskless topic's shared object `id` (docs/diskless.md, "The write path"):
    /// `<prefix>diskless/wal/<UUIDv7, 32 hex digits>.wal`.
    pub fn wal_key(&self, id: Uuid) -> Path {
        Path::from(format!("{}{}.wal", self.wal_prefix(), id.simple()))
    }

    /// The key prefix of diskless topics' shared objects: `<prefix>diskless/wal/`.
    pub fn wal_prefix(&self) -> String {
        format!("{}diskless/wal/", self.prefix)
    }

    /// Writes one object in one PUT.
    ///
    /// Errors: the store's, after the client's retries.
    pub async fn put(&self, key: &Path, data: Bytes) -> Result<(), object_store::Error> {
        self.store
            .put(key, PutPayload::from(data))
            .await
            .map(|_| ())
    }

    /// Starts a multipart upload of `key`.
    ///
    /// Errors: the store's.
    pub async fn put_multipart(
        &self,
        key: &Path,
    ) -> Result<Box<dyn object_store::MultipartUpload>, object_store::Error> {
        self.store.put_multipart(key).await
    }

    /// Deletes `key`; a missing key is not an error.
    ///
    /// Errors: the store's.
    pub async fn delete(&self, key: &Path) -> Result<(), object_store::Error> {
        match self.store.delete(key).await {
            Err(object_store::Error::NotFound { .. }) => Ok(()),
            r => r,
        }
    }

    /// The keys under `prefix` with their sizes, bytes.
    ///
    /// Errors: the store's.
    pub async fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, object_store::Error> {
        let prefix = Path::from(prefix);
        self.store
            .list(Some(&prefix))
            .map_ok(|m| (m.location.to_string(), m.size))
            .try_collect()
            .await
    }

    /// The whole object `key`.
    ///
    /// Errors: the store's (`NotFound` for a missing key).
    pub async fn get(&self, key: &Path) -> Result<Bytes, object_store::Error> {
        self.store.get(key).await?.bytes().await
    }

    /// `len` bytes of `key` from `start`.
    ///
    /// Errors: the store's (`NotFound` for a missing key).
    pub async fn get_range(
        &self,
        key: &Path,
        start: u64,
        len: u64,
    ) -> Result<Bytes, object_store::Error> {
        self.store.get_range(key, start..start + len).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_aivens_layout() {
        let cfg = S3Config {
            bucket: Some("b".into()),
            key_prefix: "kafka/".into(),
            endpoint: Some("http://127.0.0.1:1".into()),
            path_style: true,
            ..crate::remote::config::TieredConfig::default().s3
        };
        let store = RemoteStore::new(&cfg).unwrap();
        let k = SegmentKey {
            topic: "orders",
            topic_id: Uuid::from_u128(1),
            partition: 3,
            base_offset: 4200,
            segment_id: Uuid::from_u128(2),
        };
        assert_eq!(
            store.key(&k, ObjectKind::Log).to_string(),
            "kafka/orders-AAAAAAAAAAAAAAAAAAAAAQ/3/00000000000000004200-AAAAAAAAAAAAAAAAAAAAAg.log"
        );
        assert!(store
            .key(&k, ObjectKind::Manifest)
            .to_string()
            .ends_with(".rsm-manifest"));
    }
}
