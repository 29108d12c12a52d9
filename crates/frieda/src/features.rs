//! Feature flags (KIP-584): the levels of each feature this broker supports, the finalized
//! levels in force, and the rules UpdateFeatures (API key 57, `kafka-features
//! upgrade/downgrade/disable`) checks before a level changes.
//!
//! Finalized levels are cluster metadata: on a single broker they are kept in
//! `meta/features.json`, in a cluster in the metadata image (`finalized_features`), and both
//! start from [`FEATURES`]' default levels. ApiVersions v3+ reports them; clients read them
//! (the Java producer uses transactions v2 only when `transaction.version` >= 2 is finalized,
//! consumers with `group.protocol=consumer` need `group.version` >= 1, which
//! ConsumerGroupHeartbeat checks).

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// `(feature, supported min level, supported max level, default finalized level)` of Kafka's
/// feature flags, as ApiVersions v3+ reports them and `kafka-features describe` prints them.
/// `metadata.version` levels are Kafka's `MetadataVersion` feature levels (7 = 3.3-IV3, the KRaft
/// minimum; 33 = 4.4-IV2, Kafka 4.4.0's latest production level): Frieda speaks the 4.4
/// metadata of the APIs it advertises. What 4.4's levels gate: CIDR ACL hosts from 4.4-IV1 (32,
/// [`METADATA_VERSION_CIDR_ACLS`]), controller unregistration from 4.4-IV2 (33,
/// [`METADATA_VERSION_CONTROLLER_UNREGISTRATION`]).
/// `group.version` 1: KIP-848 consumer groups (ConsumerGroupHeartbeat).
/// `eligible.leader.replicas.version` 1: KIP-966 ELR in the controller
/// ([`frieda_meta::partition_change`]), and the high watermark held while an ISR is below
/// `min.insync.replicas`; level 0 turns ELR off and clears every ELR.
/// `transaction.version` 2 (KIP-890 part 2): the Java producer 4.x then bumps its epoch at every
/// commit and abort and lets the partition leaders add partitions; clients that predate it keep
/// transactions v1 (the broker serves both, by request version).
/// `kraft.version` 1 (KIP-853): the controller quorum's voters live in the metadata log and
/// change at run time (AddRaftVoter, RemoveRaftVoter), which Frieda's openraft quorum always
/// does; finalized 1 on a new cluster, as Kafka 4.4 formats a new quorum; a cluster at 0 (one
/// that finalized it before Frieda had it) refuses voter changes until upgraded, and it is
/// never lowered (Kafka's `FeatureControlManager`).
/// `streams.version` 1 (KIP-1071): streams groups, finalized 1 on a new cluster as in Kafka 4.4.
/// `share.version` 1 (KIP-932): share groups; 2 (KIP-1191) adds their dead-letter queue
/// (`errors.deadletterqueue.topic.name`). Finalized 2 on a new cluster, as Kafka 4.4.
pub const FEATURES: &[(&str, i16, i16, i16)] = &[
    ("metadata.version", 7, 33, 33),
    (KRAFT_VERSION, 0, 1, 1),
    ("transaction.version", 0, 2, 2),
    ("group.version", 0, 1, 1),
    (
        frieda_meta::partition_change::ELR_FEATURE,
        0,
        1,
        frieda_meta::partition_change::ELR_DEFAULT_LEVEL,
    ),
    (SHARE_VERSION, 0, 2, 2),
    (STREAMS_VERSION, 0, 1, 1),
];

/// The feature whose level 1 lets the controller quorum's voters change (KIP-853).
pub const KRAFT_VERSION: &str = "kraft.version";
/// The feature that enables KIP-1071 streams groups at level 1 (Kafka 4.2's `StreamsVersion.SV_1`,
/// finalized on a new Kafka 4.4 cluster).
pub const STREAMS_VERSION: &str = "streams.version";
/// The feature that enables KIP-932 share groups at level 1 (Kafka's `ShareVersion.SV_1`).
pub const SHARE_VERSION: &str = "share.version";
/// The feature that enables KIP-848 consumer groups at level 1.
pub const GROUP_VERSION: &str = "group.version";
/// The feature whose level Kafka refuses to lower (a downgrade could lose metadata).
pub const METADATA_VERSION: &str = "metadata.version";
/// The `metadata.version` level from which ACL hosts may be CIDR ranges (4.4-IV1, Kafka's
/// `MetadataVersion.isCidrAclSupported`).
pub const METADATA_VERSION_CIDR_ACLS: i16 = 32;
/// The `metadata.version` level from which UnregisterController is served (4.4-IV2, Kafka's
/// `MetadataVersion.isControllerUnregistrationSupported`, KIP-1312).
pub const METADATA_VERSION_CONTROLLER_UNREGISTRATION: i16 = 33;

/// UpdateFeatures' upgrade types (`FeatureUpdate.UpgradeType`, KIP-778).
pub mod upgrade_type {
    /// Raise the level (or keep it).
    pub const UPGRADE: i8 = 1;
    /// Lower the level where no metadata is lost.
    pub const SAFE_DOWNGRADE: i8 = 2;
    /// Lower the level even if metadata is lost.
    pub const UNSAFE_DOWNGRADE: i8 = 3;
}

/// Finalized levels with their epoch, as ApiVersions reports them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finalized {
    /// Level of every feature of [`FEATURES`] (0: disabled).
    pub levels: BTreeMap<String, i16>,
    /// Bumped by every change (Kafka: the metadata offset of the last feature change).
    pub epoch: i64,
}

impl Default for Finalized {
    fn default() -> Self {
        Finalized {
            levels: FEATURES
                .iter()
                .map(|(f, _, _, level)| (f.to_string(), *level))
                .collect(),
            epoch: 1,
        }
    }
}

impl Finalized {
    /// The defaults overlaid with `changes` (the metadata image's `finalized_features`), at
    /// `epoch` (the image's `features_epoch`; 0 when nothing was changed: reported as 1).
    pub fn with_changes(changes: &BTreeMap<String, i16>, epoch: u64) -> Self {
        let mut f = Finalized::default();
        for (name, level) in changes {
            if let Some(l) = f.levels.get_mut(name) {
                *l = *level;
            }
        }
        f.epoch = (epoch as i64).max(1);
        f
    }

    /// The finalized level of `feature` (0 when disabled or unknown).
    pub fn level(&self, feature: &str) -> i16 {
        self.levels.get(feature).copied().unwrap_or(0)
    }
}

/// The finalized levels in force on this broker, swapped whole on a change.
#[derive(Debug, Default)]
pub struct FeatureLevels(RwLock<Arc<Finalized>>);

impl FeatureLevels {
    /// The levels now.
    pub fn get(&self) -> Arc<Finalized> {
        self.0.read().clone()
    }

    /// Puts `f` in force (no-op when equal).
    pub fn set(&self, f: Finalized) {
        if **self.0.read() != f {
            *self.0.write() = Arc::new(f);
        }
    }

    /// Whether the controller quorum's voters may change (`kraft.version` >= 1, KIP-853).
    pub fn voter_changes_enabled(&self) -> bool {
        self.get().level(KRAFT_VERSION) >= 1
    }

    /// Whether KIP-848 consumer groups are enabled (`group.version` >= 1).
    pub fn consumer_groups_enabled(&self) -> bool {
        self.get().level(GROUP_VERSION) >= 1
    }

    /// Whether KIP-1071 streams groups are enabled (`streams.version` >= 1); StreamsGroupHeartbeat
    /// answers UNSUPPORTED_VERSION (35) otherwise.
    pub fn streams_groups_enabled(&self) -> bool {
        self.get().level(STREAMS_VERSION) >= 1
    }

    /// Whether KIP-932 share groups are enabled (`share.version` >= 1); every share group API
    /// answers UNSUPPORTED_VERSION (35) otherwise, as Kafka 4.4's KafkaApis does first.
    pub fn share_groups_enabled(&self) -> bool {
        self.get().level(SHARE_VERSION) >= 1
    }

    /// Whether share groups' dead-letter queues are on (`share.version` >= 2, KIP-1191, Kafka's
    /// `ShareVersion.supportsShareGroupDLQ`).
    pub fn share_dlq_enabled(&self) -> bool {
        self.get().level(SHARE_VERSION) >= 2
    }
}

/// Checks the requested `(feature, level, upgrade type)` updates against `current` as Kafka's
/// `FeatureControlManager` does, and returns the new levels of the features named.
///
/// Errors (Kafka's INVALID_UPDATE_VERSION, 95, with its message for the first bad update): a
/// feature this broker does not know, a level outside the supported range, a lower level with
/// type UPGRADE, a higher level with a downgrade type, any lowering of `metadata.version`, an
/// unknown upgrade type. `controller` is the node id named in the messages.
pub fn plan_update(
    current: &Finalized,
    updates: &[(String, i16, i8)],
    controller: i32,
) -> Result<BTreeMap<String, i16>, String> {
    let mut out = BTreeMap::new();
    for (feature, level, kind) in updates {
        let invalid =
            |why: String| format!("Invalid update version {level} for feature {feature}. {why}");
        let Some((_, min, max, _)) = FEATURES.iter().find(|(f, ..)| f == feature) else {
            return Err(invalid(format!(
                "Local controller {controller} does not support this feature."
            )));
        };
        if !(*min..=*max).contains(level) {
            return Err(invalid(format!(
                "Local controller {controller} only supports versions {min}-{max}"
            )));
        }
        let now = current.level(feature);
        match *kind {
            upgrade_type::UPGRADE if *level < now => {
                return Err(invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.".into()));
            }
            upgrade_type::SAFE_DOWNGRADE | upgrade_type::UNSAFE_DOWNGRADE if *level > now => {
                return Err(invalid("Can't downgrade to a newer version.".into()));
            }
            upgrade_type::UPGRADE
            | upgrade_type::SAFE_DOWNGRADE
            | upgrade_type::UNSAFE_DOWNGRADE => {}
            other => return Err(invalid(format!("Unknown upgrade type {other}."))),
        }
        if feature == KRAFT_VERSION && *kind != upgrade_type::UPGRADE && *level != now {
            return Err(invalid(
                "Can't downgrade the version of this feature.".into(),
            ));
        }
        if feature == METADATA_VERSION && *level < now {
            let why = if *kind == upgrade_type::UNSAFE_DOWNGRADE {
                "Unsafe metadata downgrade is not supported in this version."
            } else {
                "Refusing to perform the requested downgrade because it might delete metadata information."
            };
            return Err(format!(
                "Unsupported metadata.version downgrade from {now} to {level}. {why}"
            ));
        }
        out.insert(feature.clone(), *level);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::upgrade_type::*;
    use super::*;

    fn plan(updates: &[(&str, i16, i8)]) -> Result<BTreeMap<String, i16>, String> {
        let updates: Vec<_> = updates
            .iter()
            .map(|(f, l, t)| (f.to_string(), *l, *t))
            .collect();
        plan_update(&Finalized::default(), &updates, 1)
    }

    #[test]
    fn defaults_are_within_the_supported_ranges() {
        for (name, min, max, level) in FEATURES {
            assert!(min <= max, "{name}");
            assert!((min..=max).contains(&level), "{name}");
        }
    }

    #[test]
    fn kafka_rules() {
        // Messages as Apache Kafka 4.3.1 answers them.
        assert_eq!(
            plan(&[("foo.version", 1, UPGRADE)]).unwrap_err(),
            "Invalid update version 1 for feature foo.version. Local controller 1 does not support this feature."
        );
        assert_eq!(
            plan(&[("group.version", 2, UPGRADE)]).unwrap_err(),
            "Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1"
        );
        assert_eq!(
            plan(&[("group.version", 0, UPGRADE)]).unwrap_err(),
            "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
        );
        assert_eq!(
            plan(&[("metadata.version", 21, SAFE_DOWNGRADE)]).unwrap_err(),
            "Unsupported metadata.version downgrade from 33 to 21. Refusing to perform the requested downgrade because it might delete metadata information."
        );
        assert_eq!(
            plan(&[("metadata.version", 21, UNSAFE_DOWNGRADE)]).unwrap_err(),
            "Unsupported metadata.version downgrade from 33 to 21. Unsafe metadata downgrade is not supported in this version."
        );
        assert!(plan(&[("metadata.version", 0, SAFE_DOWNGRADE)])
            .unwrap_err()
            .ends_with("only supports versions 7-33"));
        // The first bad update fails the whole request.
        assert!(plan(&[("group.version", 1, UPGRADE), ("foo", 1, UPGRADE)]).is_err());
        let ok = plan(&[
            ("group.version", 0, SAFE_DOWNGRADE),
            ("transaction.version", 2, UPGRADE),
        ]);
        assert_eq!(
            ok.unwrap(),
            BTreeMap::from([
                ("group.version".into(), 0),
                ("transaction.version".into(), 2)
            ])
        );
        let mut lowered = Finalized::default();
        lowered.levels.insert("transaction.version".into(), 1);
        let up = plan_update(
            &lowered,
            &[("transaction.version".into(), 2, SAFE_DOWNGRADE)],
            1,
        );
        assert_eq!(
            up.unwrap_err(),
            "Invalid update version 2 for feature transaction.version. Can't downgrade to a newer version."
        );
    }

    #[test]
    fn kraft_version_is_never_lowered() {
        // Kafka 4.4.0's FeatureControlManager: any downgrade type to another level.
        for kind in [SAFE_DOWNGRADE, UNSAFE_DOWNGRADE] {
            assert_eq!(
                plan(&[("kraft.version", 0, kind)]).unwrap_err(),
                "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."
            );
        }
        assert!(plan(&[("kraft.version", 1, SAFE_DOWNGRADE)]).is_ok());
        let mut old = Finalized::default();
        old.levels.insert("kraft.version".into(), 0);
        let up = plan_update(&old, &[("kraft.version".into(), 1, UPGRADE)], 1);
        assert_eq!(up.unwrap(), BTreeMap::from([("kraft.version".into(), 1)]));
    }

    #[test]
    fn image_changes_overlay_the_defaults() {
        let f = Finalized::with_changes(&BTreeMap::from([("group.version".into(), 0)]), 42);
        assert_eq!(f.level("group.version"), 0);
        assert_eq!(f.level("transaction.version"), 2);
        assert_eq!(f.epoch, 42);
        assert_eq!(Finalized::with_changes(&BTreeMap::new(), 0).epoch, 1);
    }
}
