//! Topic administration in a cluster: the active controller decides (placement, creation,
//! deletion, configs), the metadata quorum commits it, and the request is answered once this
//! broker's own image shows the change, so a client's next Metadata request here sees it (as
//! Kafka's brokers wait for the controller's change to be replicated to them).

use super::{AdminError, Broker};
use crate::membership::{ClusterError, ClusterNode, CONTROLLER_TIMEOUT};
use crate::storage::topic::Topic;
use crate::storage::topic_config::TopicConfigs;
use frieda_meta::{ControllerRequest, MetadataImage};
use kafka_protocol::error::ResponseError;
use parking_lot::RwLock;
use std::sync::Arc;

impl From<ClusterError> for AdminError {
    fn from(e: ClusterError) -> Self {
        AdminError {
            code: e.code,
            message: e.message,
        }
    }
}

/// A change committed by the controller that this broker's image did not show in time.
fn not_seen(what: &str) -> AdminError {
    AdminError::new(
        ResponseError::RequestTimedOut,
        format!("{what} was committed but this broker's metadata did not show it in time"),
    )
}

impl Broker {
    /// The replication factor of a topic (its first partition's replica count); 1 on a single
    /// broker.
    pub fn replication_factor(&self, topic: &Topic) -> i16 {
        match self.cluster() {
            None => 1,
            Some(node) => node
                .image()
                .topics
                .get(&*topic.name)
                .and_then(|t| t.partitions.first())
                .map_or(-1, |p| p.replicas.len() as i16),
        }
    }

    /// The local topic object for an image topic (made now if the reconciler has not yet).
    fn topic_from_image(&self, image: &MetadataImage, name: &str) -> Option<Arc<Topic>> {
        let t = image.topics.get(name)?;
        Some(self.cluster_topic(
            name,
            t.id,
            TopicConfigs(t.configs.clone()),
            t.partitions.len(),
        ))
    }

    /// CreateTopics in a cluster: placed by the controller (`replication_factor` replicas per
    /// partition over the live brokers) unless `assignment` is given.
    ///
    /// Errors: TOPIC_ALREADY_EXISTS (36), INVALID_REPLICATION_FACTOR (38) when fewer brokers
    /// are live, INVALID_REPLICA_ASSIGNMENT (39), REQUEST_TIMED_OUT (7) without a controller.
    #[allow(clippy::too_many_arguments)]
    pub async fn cluster_create_topic(
        self: &Arc<Self>,
        node: &Arc<ClusterNode>,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        assignment: Option<Vec<Vec<i32>>>,
        configs: TopicConfigs,
        validate_only: bool,
    ) -> Result<Arc<Topic>, AdminError> {
        if node.image().topics.contains_key(name) {
            return Err(AdminError::new(
                ResponseError::TopicAlreadyExists,
                format!("Topic '{name}' already exists."),
            ));
        }
        node.controller(
            ControllerRequest::CreateTopic {
                name: name.to_string(),
                partitions,
                replication_factor,
                assignment,
                configs: configs.0.clone(),
                validate_only,
            },
            CONTROLLER_TIMEOUT,
        )
        .await?;
        if validate_only {
            return Ok(Arc::new(Topic {
                name: Arc::from(name),
                id: uuid::Uuid::nil(),
                partitions: RwLock::new(Vec::new()),
                configs: RwLock::new(configs),
            }));
        }
        if !node
            .wait_for(CONTROLLER_TIMEOUT, |img| img.topics.contains_key(name))
            .await
        {
            return Err(not_seen("the topic"));
        }
        tracing::info!(
            topic = name,
            partitions,
            replication_factor,
            "created topic"
        );
        self.topic_from_image(&node.image(), name)
            .ok_or_else(|| not_seen("the topic"))
    }

    /// Creates `__diskless_coordinator` (one partition, `diskless.coordinator.replication.factor`
    /// replicas capped at the live brokers) unless it exists: before the first diskless topic.
    ///
    /// Errors: the controller's (INVALID_REPLICATION_FACTOR (38), REQUEST_TIMED_OUT (7)).
    pub(crate) async fn ensure_diskless_coordinator(
        self: &Arc<Self>,
        node: &Arc<ClusterNode>,
    ) -> Result<(), AdminError> {
        let name = crate::storage::topic::DISKLESS_COORDINATOR_TOPIC;
        let image = node.image();
        if image.topics.contains_key(name) {
            return Ok(());
        }
        let live = image.live_brokers().count().max(1);
        let rf = self
            .config
            .diskless
            .coordinator_replication_factor
            .min(i16::try_from(live).unwrap_or(i16::MAX));
        let mut configs = super::diskless_coordinator_topic_configs(&self.config);
        let min_isr = self.config.diskless.coordinator_min_isr.min(rf as usize);
        let _ = configs.set("min.insync.replicas", &min_isr.to_string());
        match self
            .cluster_create_topic(node, name, 1, rf, None, configs, false)
            .await
        {
            Ok(_) => {
                tracing::info!(
                    topic = name,
                    replication_factor = rf,
                    "created an internal topic"
                );
                Ok(())
            }
            Err(e) if e.code == ResponseError::TopicAlreadyExists => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// DeleteTopics in a cluster. Errors: UNKNOWN_TOPIC_OR_PARTITION (3), REQUEST_TIMED_OUT (7).
    pub(crate) async fn cluster_delete_topic(
        &self,
        node: &Arc<ClusterNode>,
        topic: &Topic,
    ) -> Result<(), AdminError> {
        let name = topic.name.to_string();
        node.controller(
            ControllerRequest::DeleteTopic { name: name.clone() },
            CONTROLLER_TIMEOUT,
        )
        .await?;
        let id = topic.id;
        if !node
            .wait_for(CONTROLLER_TIMEOUT, |img| {
                img.topics.get(&name).is_none_or(|t| t.id != id)
            })
            .await
        {
            return Err(not_seen("the deletion"));
        }
        tracing::info!(topic = %name, "deleted topic");
        Ok(())
    }

    /// CreatePartitions in a cluster. Errors: INVALID_PARTITIONS (37), INVALID_REPLICA_ASSIGNMENT
    /// (39), REQUEST_TIMED_OUT (7).
    pub(crate) async fn cluster_create_partitions(
        &self,
        node: &Arc<ClusterNode>,
        topic: &Topic,
        count: i32,
        assignment: Option<Vec<Vec<i32>>>,
        validate_only: bool,
    ) -> Result<(), AdminError> {
        let name = topic.name.to_string();
        node.controller(
            ControllerRequest::CreatePartitions {
                name: name.clone(),
                count,
                assignment,
                validate_only,
            },
            CONTROLLER_TIMEOUT,
        )
        .await?;
        if validate_only {
            return Ok(());
        }
        if !node
            .wait_for(CONTROLLER_TIMEOUT, |img| {
                img.topics
                    .get(&name)
                    .is_some_and(|t| t.partitions.len() as i32 >= count)
            })
            .await
        {
            return Err(not_seen("the new partitions"));
        }
        self.topic_from_image(&node.image(), &name);
        Ok(())
    }

    /// The dynamic configs of a broker resource in a cluster (already validated): through the
    /// controller, then applied here from the image. Errors: REQUEST_TIMED_OUT (7).
    pub(crate) async fn cluster_set_broker_configs(
        &self,
        node: &Arc<ClusterNode>,
        resource: &str,
        configs: std::collections::BTreeMap<String, String>,
    ) -> Result<(), AdminError> {
        let wanted = configs.clone();
        node.controller(
            ControllerRequest::SetBrokerConfigs {
                resource: resource.to_string(),
                configs,
            },
            CONTROLLER_TIMEOUT,
        )
        .await?;
        let seen = node
            .wait_for(CONTROLLER_TIMEOUT, |img| {
                img.broker_configs
                    .get(resource)
                    .cloned()
                    .unwrap_or_default()
                    == wanted
            })
            .await;
        if !seen {
            return Err(not_seen("the broker config change"));
        }
        self.apply_dynamic_configs(&node.image().broker_configs);
        Ok(())
    }

    /// A group's new config set in a cluster (already validated), through the metadata quorum.
    /// Errors: REQUEST_TIMED_OUT (7).
    pub(crate) async fn cluster_set_group_configs(
        &self,
        node: &Arc<ClusterNode>,
        group: &str,
        configs: std::collections::BTreeMap<String, String>,
    ) -> Result<(), AdminError> {
        let wanted = configs.clone();
        node.controller(
            ControllerRequest::SetGroupConfigs {
                group: group.to_string(),
                configs,
            },
            CONTROLLER_TIMEOUT,
        )
        .await?;
        let seen = node
            .wait_for(CONTROLLER_TIMEOUT, |img| {
                img.group_configs.get(group).cloned().unwrap_or_default() == wanted
            })
            .await;
        if !seen {
            return Err(not_seen("the group config change"));
        }
        self.apply_group_configs(&node.image().group_configs);
        Ok(())
    }

    /// AlterConfigs of a topic in a cluster (already validated). Errors: REQUEST_TIMED_OUT (7).
    pub(crate) async fn cluster_set_topic_configs(
        &self,
        node: &Arc<ClusterNode>,
        topic: &Topic,
        configs: TopicConfigs,
    ) -> Result<(), AdminError> {
        let name = topic.name.to_string();
        let wanted = configs.0.clone();
        node.controller(
            ControllerRequest::SetTopicConfigs {
                name: name.clone(),
                configs: configs.0,
            },
            CONTROLLER_TIMEOUT,
        )
        .await?;
        if !node
            .wait_for(CONTROLLER_TIMEOUT, |img| {
                img.topics.get(&name).is_some_and(|t| t.configs == wanted)
            })
            .await
        {
            return Err(not_seen("the config change"));
        }
        self.topic_from_image(&node.image(), &name);
        Ok(())
    }
}
