use kafka_protocol::messages::ApiKey;

#[test]
fn api_key_iter() {
    assert_eq!(ApiKey::iter().count(), 91); // Frieda patch: + 88, 89, 93 (KIP-1071 streams groups), 94 (KIP-1312)
    assert_eq!(ApiKey::iter().next().unwrap(), ApiKey::Produce);
}
