//! Where group configs live (`kafka-configs --entity-type groups`; the keys and their checks
//! are [`crate::coordinator::group::config`]). Persisted before applied: on a single broker in
//! `meta/group-configs.json`, in a cluster through the metadata quorum (the image's
//! `group_configs`, as Kafka keeps them in its metadata log).

use super::{AdminError, Broker};
use crate::coordinator::group::config::{self as gc, GroupConfigSets};
use crate::coordinator::share::GroupShareConfig;
use crate::durable;
use kafka_protocol::error::ResponseError;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// File of a single broker's group configs, under `meta/`.
pub const FILE: &str = "group-configs.json";

/// Reads a single broker's `meta/group-configs.json` (missing: none).
///
/// Errors: the file exists but is unreadable or not JSON of the right shape.
pub fn load(meta_dir: &Path) -> anyhow::Result<GroupConfigSets> {
    durable::read_json(&meta_dir.join(FILE))
}

/// The broker's value of a broker config that is a group config's synonym (its
/// `group.share.*`, `group.consumer.*` and `group.streams.*` settings), as Kafka spells it.
pub fn broker_value(config: &crate::config::BrokerConfig, key: &str) -> Option<String> {
    let c = &config.coordinator;
    let ms = |d: std::time::Duration| Some(d.as_millis().to_string());
    match key {
        "group.consumer.session.timeout.ms" => ms(c.consumer.session_timeout),
        "group.consumer.heartbeat.interval.ms" => ms(c.consumer.heartbeat_interval),
        "group.share.session.timeout.ms" => ms(c.share.session_timeout),
        "group.share.heartbeat.interval.ms" => ms(c.share.heartbeat_interval),
        "group.share.record.lock.duration.ms" => {
            Some(c.share_records.partition.lock_duration_ms.to_string())
        }
        "group.share.delivery.count.limit" => {
            Some(c.share_records.partition.delivery_count_limit.to_string())
        }
        "group.share.partition.max.record.locks" => {
            Some(c.share_records.partition.max_record_locks.to_string())
        }
        "group.streams.session.timeout.ms" => ms(c.streams.session_timeout),
        "group.streams.heartbeat.interval.ms" => ms(c.streams.heartbeat_interval),
        "group.streams.initial.rebalance.delay.ms" => ms(c.streams.initial_rebalance_delay),
        _ => None,
    }
}

impl Broker {
    /// The group configs in force, by group id.
    pub fn group_configs(&self) -> Arc<GroupConfigSets> {
        self.group_configs.read().clone()
    }

    /// The broker's value of a group config's broker synonym.
    pub fn group_config_broker_value(&self, key: &str) -> Option<String> {
        broker_value(&self.config, key)
    }

    /// `group`'s share settings in force: its group configs over the broker's.
    pub fn share_config_of(&self, group: &str) -> GroupShareConfig {
        let sets = self.group_configs();
        let value = |k: &str| self.group_config_broker_value(k);
        let effective = gc::EffectiveGroupConfig::new(sets.get(group), &value);
        self.groups.shares.config().for_group(&effective)
    }

    /// Takes `sets` as the group configs in force (the cluster's reconciler calls it with every
    /// image).
    pub fn apply_group_configs(&self, sets: &GroupConfigSets) {
        if **self.group_configs.read() == *sets {
            return;
        }
        *self.group_configs.write() = Arc::new(sets.clone());
        tracing::info!(groups = sets.len(), "applied group configs");
    }

    /// Replaces `group`'s configs with `configs` (validated here; empty removes them),
    /// persisted first (single broker: `meta/`; cluster: the metadata quorum) and then applied.
    /// `validate_only` checks without changing anything.
    ///
    /// Errors: INVALID_REQUEST for an empty group id, INVALID_CONFIG for unknown keys and bad
    /// values (Kafka's messages), KAFKA_STORAGE_ERROR when the file cannot be written,
    /// REQUEST_TIMED_OUT without a controller.
    pub async fn set_group_configs(
        self: &Arc<Self>,
        group: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), AdminError> {
        if group.is_empty() {
            return Err(AdminError::new(
                ResponseError::InvalidRequest,
                "Group name must not be empty",
            ));
        }
        gc::validate(&configs, &|k| self.group_config_broker_value(k))
            .map_err(|m| AdminError::new(ResponseError::InvalidConfig, m))?;
        if validate_only {
            return Ok(());
        }
        if let Some(node) = self.cluster() {
            return self.cluster_set_group_configs(node, group, configs).await;
        }
        let _admin = self.admin.lock().await;
        let mut sets = (*self.group_configs()).clone();
        if configs.is_empty() {
            sets.remove(group);
        } else {
            sets.insert(group.to_string(), configs);
        }
        let broker = self.clone();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            durable::write_json_or_halt(
                &broker.meta_dir.join(FILE),
                &sets,
                "writing the group configs",
            )?;
            broker.apply_group_configs(&sets);
            Ok(())
        })
        .await
        .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?
        .map_err(|e| AdminError::new(ResponseError::KafkaStorageError, e.to_string()))
    }
}
