//! UpdateFeatures (KIP-584) on the broker: validated by [`crate::features::plan_update`],
//! persisted before it applies: on a single broker in `meta/features.json` (written durably,
//! then put in force), in a cluster through the metadata quorum (the image's
//! `finalized_features`, which every broker's reconciler puts in force).

use super::{AdminError, Broker};
use crate::durable;
use crate::features::{plan_update, Finalized};
use crate::membership::CONTROLLER_TIMEOUT;
use frieda_meta::ControllerRequest;
use kafka_protocol::error::ResponseError;
use std::path::Path;
use std::sync::Arc;

/// File of a single broker's finalized feature levels, under `meta/`.
pub const FILE: &str = "features.json";

/// Reads `meta/features.json` (the defaults when absent).
///
/// Errors: the file exists but cannot be read or parsed (the broker refuses to start rather
/// than run with other levels than the ones an operator finalized).
pub fn load(meta_dir: &Path) -> anyhow::Result<Finalized> {
    let path = meta_dir.join(FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let stored: Finalized = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("parsing {}: {e}", path.display()))?;
            Ok(Finalized::with_changes(&stored.levels, stored.epoch as u64))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Finalized::default()),
        Err(e) => Err(anyhow::anyhow!("reading {}: {e}", path.display())),
    }
}

impl Broker {
    /// UpdateFeatures: checks `updates` (`(feature, level, upgrade type)`) against the levels in
    /// force and, unless `validate_only`, finalizes the new levels, persisted first.
    ///
    /// Errors: INVALID_UPDATE_VERSION (95) with Kafka's message when an update is refused
    /// (nothing changes); KAFKA_STORAGE_ERROR (56) when `meta/features.json` cannot be written;
    /// REQUEST_TIMED_OUT (7) when the quorum does not commit the change in time.
    pub async fn update_features(
        self: &Arc<Self>,
        updates: &[(String, i16, i8)],
        validate_only: bool,
    ) -> Result<(), AdminError> {
        let refused = |why: String| {
            AdminError::new(
                ResponseError::InvalidUpdateVersion,
                format!("The update failed for all features since the following feature had an error: {why}"),
            )
        };
        let me = self.config.node_id;
        if let Some(node) = self.cluster() {
            let levels = plan_update(&self.features.get(), updates, me).map_err(refused)?;
            if validate_only || levels.is_empty() {
                return Ok(());
            }
            let wanted = levels.clone();
            node.controller(
                ControllerRequest::UpdateFeatures { levels },
                CONTROLLER_TIMEOUT,
            )
            .await?;
            let seen = node
                .wait_for(CONTROLLER_TIMEOUT, |img| {
                    wanted
                        .iter()
                        .all(|(f, l)| img.finalized_features.get(f) == Some(l))
                })
                .await;
            if !seen {
                return Err(AdminError::new(
                    ResponseError::RequestTimedOut,
                    "the feature change was committed but has not reached this broker yet",
                ));
            }
            let img = node.image();
            self.features.set(Finalized::with_changes(
                &img.finalized_features,
                img.features_epoch,
            ));
            return Ok(());
        }
        let _admin = self.admin.lock().await;
        let current = self.features.get();
        let levels = plan_update(&current, updates, me).map_err(refused)?;
        if validate_only || levels.is_empty() {
            return Ok(());
        }
        let mut next = (*current).clone();
        next.levels.extend(levels);
        next.epoch += 1;
        let text = serde_json::to_string_pretty(&next)
            .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?;
        let broker = self.clone();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            durable::write_or_halt(
                &broker.meta_dir.join(FILE),
                &text,
                "writing the finalized feature levels",
            )?;
            broker.features.set(next);
            Ok(())
        })
        .await
        .map_err(|e| AdminError::new(ResponseError::UnknownServerError, e.to_string()))?
        .map_err(|e| AdminError::new(ResponseError::KafkaStorageError, e.to_string()))
    }
}
