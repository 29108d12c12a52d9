//! `meta.properties` in the data directory, in Kafka's format (version 1: `node.id`,
//! `cluster.id`, `directory.id`), so that Kafka's tools that read a node's data directory work
//! on Frieda's: `kafka-metadata-quorum add-controller --command-config server.properties` reads
//! the new controller's directory id from `log.dirs` (or `metadata.log.dir`) there (KIP-853).
//!
//! Written once the node knows the cluster id (from the metadata log), crash-safely; an
//! existing file keeps its directory id.

use crate::durable;
use std::path::Path;

/// The file's name in the data directory.
pub const FILE: &str = "meta.properties";

/// A directory id as Kafka writes one: 16 random bytes, URL-safe base64 without padding
/// (22 characters, Kafka's `Uuid.toString`), never starting with `-`
/// ([`frieda_meta::controller::random_uuid`]).
fn new_directory_id() -> String {
    frieda_meta::controller::base64_url(frieda_meta::controller::random_uuid().as_bytes())
}

/// The `directory.id` of an existing `meta.properties` text, if any.
pub fn directory_id(text: &str) -> Option<&str> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("directory.id="))
        .map(str::trim)
        .find(|v| !v.is_empty())
}

/// Writes `<data_dir>/meta.properties` for `node_id` in `cluster_id` unless it already names
/// this cluster and node; keeps an existing directory id. Returns the directory id.
///
/// Errors: the file cannot be read or written durably.
pub fn ensure(data_dir: &Path, node_id: i32, cluster_id: &str) -> std::io::Result<String> {
    let path = data_dir.join(FILE);
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let dir_id = old
        .as_deref()
        .and_then(directory_id)
        .map(str::to_string)
        .unwrap_or_else(new_directory_id);
    let text = format!(
        "#\n#Written by Frieda (Kafka's meta.properties, version 1)\nnode.id={node_id}\ndirectory.id={dir_id}\nversion=1\ncluster.id={cluster_id}\n"
    );
    if old.as_deref() != Some(text.as_str()) {
        durable::write(&path, &text)?;
    }
    Ok(dir_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_once_with_a_stable_directory_id() {
        let d = tempfile::tempdir().unwrap();
        let id = ensure(d.path(), 4, "c1").unwrap();
        assert_eq!(id.len(), 22);
        let text = std::fs::read_to_string(d.path().join(FILE)).unwrap();
        assert!(text.contains("node.id=4\n") && text.contains("cluster.id=c1\n"));
        assert!(text.contains("version=1\n"));
        assert_eq!(directory_id(&text), Some(id.as_str()));
        assert_eq!(ensure(d.path(), 4, "c1").unwrap(), id);
    }
}
