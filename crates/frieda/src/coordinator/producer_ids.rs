//! Producer id allocation for InitProducerId (KIP-98, epoch bumps of KIP-360).
//!
//! Ids are handed out from blocks of [`BLOCK`] reserved durably in `meta/producer_ids` before
//! use, so an id is never reused after a restart or a crash, the way Kafka's controller hands
//! out blocks (KIP-730).

use crate::durable;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};

/// Ids reserved per durable write.
pub const BLOCK: i64 = 1000;

/// Allocates producer ids; thread safe.
#[derive(Debug)]
pub struct ProducerIdAllocator {
    path: PathBuf,
    state: Mutex<(i64, i64)>, // (next id, end of the reserved block, exclusive)
}

impl ProducerIdAllocator {
    /// Opens the allocator; the first id after a restart is the end of the last reserved block.
    ///
    /// Errors: the file exists but cannot be read or does not hold a non-negative integer (a
    /// silent reset would hand out producer ids again, and idempotent producers would collide).
    pub fn open(meta_dir: &Path) -> anyhow::Result<Self> {
        let path = meta_dir.join("producer_ids");
        let next = match std::fs::read_to_string(&path) {
            Ok(s) => s.trim().parse::<i64>().ok().filter(|&n| n >= 0).ok_or_else(|| {
                anyhow::anyhow!(
                    "{} is corrupt ({:?}); refusing to start, since producer ids could be handed out twice",
                    path.display(),
                    s.chars().take(40).collect::<String>()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!("reading {}", path.display())))
            }
        };
        Ok(ProducerIdAllocator {
            path,
            state: Mutex::new((next, next)),
        })
    }

    /// A fresh producer id. Errors only if the reservation cannot be written (disk full); a
    /// reservation whose durability is unknown stops the broker (handing out ids a restart could
    /// hand out again would break idempotence).
    pub fn next_id(&self) -> std::io::Result<i64> {
        let mut st = self.state.lock();
        if st.0 >= st.1 {
            let end = st.1 + BLOCK;
            durable::write_or_halt(&self.path, &end.to_string(), "reserving producer ids")?;
            st.1 = end;
        }
        let id = st.0;
        st.0 += 1;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("producer_ids"), "12x").unwrap();
        let e = ProducerIdAllocator::open(dir.path()).unwrap_err();
        assert!(format!("{e:#}").contains("producer_ids"), "{e:#}");
        std::fs::write(dir.path().join("producer_ids"), "-5").unwrap();
        assert!(ProducerIdAllocator::open(dir.path()).is_err());
    }

    #[test]
    fn ids_are_unique_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let a = ProducerIdAllocator::open(dir.path()).unwrap();
        let first: Vec<i64> = (0..3).map(|_| a.next_id().unwrap()).collect();
        assert_eq!(first, vec![0, 1, 2]);
        drop(a);
        let b = ProducerIdAllocator::open(dir.path()).unwrap();
        let next = b.next_id().unwrap();
        assert!(next >= BLOCK, "reused an id after restart: {next}");
    }
}
