use kafka_protocol::messages::ApiKey;

#[test]
fn api_key_iter() {
    assert_eq!(ApiKey::iter().count(), 90); // Frieda patch: + 88, 89, 93 (KIP-1071 streams groups)
    assert_eq!(ApiKey::iter().next().unwrap(), ApiKey::Produce);
}
