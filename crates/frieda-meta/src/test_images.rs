//! Metadata images the unit tests of the controller's decisions start from (compiled for tests
//! only).

use uuid::Uuid;

use crate::image::{BrokerId, BrokerRegistration, MetaCommand, MetadataImage};

/// Broker `id` registering, unfenced, without endpoints (incarnation `id`).
pub(crate) fn registered(id: BrokerId) -> MetaCommand {
    MetaCommand::RegisterBroker {
        registration: BrokerRegistration {
            id,
            incarnation: Uuid::from_u128(id as u128),
            endpoints: vec![],
            rack: None,
            fenced: false,
            epoch: 0,
            offline_replicas: Default::default(),
            clean_shutdown: true,
        },
    }
}

/// Brokers 1-3 registered, then topic `t` created with `assignment` (each partition's
/// replicas, the first its leader), all in sync.
pub(crate) fn brokers_and_topic(assignment: Vec<Vec<BrokerId>>) -> MetadataImage {
    let mut img = MetadataImage::default();
    for id in 1..=3 {
        img.apply(&registered(id), id as u64).unwrap();
    }
    img.apply(
        &MetaCommand::CreateTopic {
            name: "t".into(),
            id: crate::controller::random_uuid(),
            configs: Default::default(),
            assignment,
        },
        10,
    )
    .unwrap();
    img
}

/// `t`-`partition` elected to `leader` (must apply).
pub(crate) fn elect(img: &mut MetadataImage, partition: i32, leader: BrokerId) {
    let cmd = MetaCommand::ElectLeader {
        topic: "t".into(),
        partition,
        leader,
        unclean: false,
    };
    img.apply(&cmd, img.offset + 1).unwrap();
}
