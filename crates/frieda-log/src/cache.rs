//! In-memory tail cache: the most recent whole batches, so fetches at the log end skip the disk.
//!
//! Entries are contiguous in offset order and always end at the newest appended batch; eviction is
//! from the oldest end, so the cache holds every batch from its first entry to the log end offset.

use std::collections::VecDeque;

use bytes::Bytes;

#[derive(Debug)]
struct Cached {
    base_offset: i64,
    last_offset: i64,
    data: Bytes,
}

/// Bounded FIFO of recent batches (capacity in bytes).
#[derive(Debug)]
pub(crate) struct TailCache {
    entries: VecDeque<Cached>,
    bytes: usize,
    capacity: usize,
}

/// Batches served from the cache.
pub(crate) struct CacheHit {
    pub chunks: Vec<Bytes>,
    pub bytes: usize,
    pub first_offset: i64,
    pub next_offset: i64,
}

impl TailCache {
    pub fn new(capacity: usize) -> Self {
        TailCache {
            entries: VecDeque::new(),
            bytes: 0,
            capacity,
        }
    }

    /// Adds one whole batch (offsets `base..=last`), evicting the oldest to stay within capacity. A
    /// batch larger than the capacity empties the cache (entries must stay contiguous to the end).
    pub fn push(&mut self, base_offset: i64, last_offset: i64, data: Bytes) {
        self.bytes += data.len();
        self.entries.push_back(Cached {
            base_offset,
            last_offset,
            data,
        });
        self.evict();
    }

    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.evict();
    }

    fn evict(&mut self) {
        while self.bytes > self.capacity {
            match self.entries.pop_front() {
                Some(e) => self.bytes -= e.data.len(),
                None => break,
            }
        }
    }

    /// Drops batches entirely below `log_start_offset` (after retention).
    pub fn trim_below(&mut self, log_start_offset: i64) {
        while let Some(e) = self.entries.front() {
            if e.last_offset >= log_start_offset {
                break;
            }
            self.bytes -= e.data.len();
            self.entries.pop_front();
        }
    }

    /// Drops every batch containing an offset at or past `end_offset` (the log was truncated).
    pub fn trim_from(&mut self, end_offset: i64) {
        while let Some(e) = self.entries.back() {
            if e.last_offset < end_offset {
                break;
            }
            self.bytes -= e.data.len();
            self.entries.pop_back();
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// Whole batches starting with the one containing `offset`, within `max_bytes` (the first batch
    /// always, KIP-74) and with last offsets `< max_offset`. `None` if `offset` is not cached.
    pub fn read(&self, offset: i64, max_bytes: usize, max_offset: i64) -> Option<CacheHit> {
        let idx = self.entries.partition_point(|e| e.last_offset < offset);
        let first = self.entries.get(idx)?;
        if first.base_offset > offset {
            return None;
        }
        let mut hit = CacheHit {
            chunks: Vec::new(),
            bytes: 0,
            first_offset: offset,
            next_offset: offset,
        };
        for e in self.entries.range(idx..) {
            if e.last_offset >= max_offset {
                break;
            }
            if hit.bytes > 0 && hit.bytes + e.data.len() > max_bytes {
                break;
            }
            if hit.chunks.is_empty() {
                hit.first_offset = e.base_offset;
            }
            hit.bytes += e.data.len();
            hit.next_offset = e.last_offset + 1;
            hit.chunks.push(e.data.clone());
        }
        Some(hit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_and_stays_contiguous() {
        let mut c = TailCache::new(25);
        c.push(0, 4, Bytes::from(vec![0; 10]));
        c.push(5, 9, Bytes::from(vec![1; 10]));
        c.push(10, 14, Bytes::from(vec![2; 10]));
        assert!(c.read(3, 100, i64::MAX).is_none());
        let hit = c.read(7, 100, i64::MAX).unwrap();
        assert_eq!((hit.first_offset, hit.next_offset, hit.bytes), (5, 15, 20));
        // Bounded by max_offset and max_bytes (first batch always).
        let hit = c.read(7, 1, 15).unwrap();
        assert_eq!((hit.chunks.len(), hit.next_offset), (1, 10));
        let hit = c.read(7, 100, 14).unwrap();
        assert_eq!((hit.chunks.len(), hit.next_offset), (1, 10));
        c.push(15, 15, Bytes::from(vec![3; 100]));
        assert!(c.read(15, 100, i64::MAX).is_none());
        c.push(16, 16, Bytes::from(vec![4; 5]));
        c.trim_below(17);
        assert!(c.read(16, 100, i64::MAX).is_none());
    }
}
