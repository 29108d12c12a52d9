//! Responses whose records stay in the segment files (issue 58, goal 4): the Fetch handler
//! registers each file range it answers with ([`Splice::file`]) and puts the marker it gets
//! in that partition's `records`; encoding the response ([`super::encode`]) then writes every
//! byte but those and notes where each range goes ([`SpliceBuf`]), giving a
//! [`SplicedResponse`] the connection sends with `sendfile`.
//!
//! A marker is a one-byte buffer of its own allocation, known by its address: the encoder hands
//! the records field to [`bytes::BufMut::put_slice`] as it stands, so the slice it passes is the
//! marker itself, and no other field of the response can have the same address.

use std::sync::{Arc, Mutex};

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use frieda_log::FileSlice;
use kafka_protocol::protocol::buf::ByteBufMut;

use crate::storage::zero_copy::SplicedResponse;

/// The file ranges a response carries, and the response once encoded with them.
#[derive(Debug, Default)]
pub struct Splice(Mutex<SpliceState>);

#[derive(Debug, Default, Clone)]
struct SpliceState {
    /// Each marker (kept alive, so no other allocation takes its address) and the ranges that
    /// go in its place, back to back.
    files: Vec<(Bytes, Vec<FileSlice>)>,
    /// The records field's length is a compact (unsigned varint, length + 1) one: flexible
    /// versions, Fetch v12+; else an int32.
    compact: bool,
    encoded: Option<Arc<SplicedResponse>>,
}

impl Clone for Splice {
    fn clone(&self) -> Self {
        Splice(Mutex::new(self.lock().clone()))
    }
}

impl Splice {
    fn lock(&self) -> std::sync::MutexGuard<'_, SpliceState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `files` to go, back to back, where the returned marker is encoded (put it in
    /// a records field as it is). `compact`: the response's version encodes bytes fields
    /// compactly (KIP-482).
    pub fn files(&self, files: Vec<FileSlice>, compact: bool) -> Bytes {
        let marker = Bytes::from(vec![0u8]);
        let mut st = self.lock();
        st.compact = compact;
        st.files.push((marker.clone(), files));
        marker
    }

    /// Forgets the registered ranges (a response sent without them: a throttled fetch).
    pub fn clear(&self) {
        self.lock().files.clear();
    }

    /// Whether ranges were registered (the response must be encoded with a [`SpliceBuf`]).
    pub fn has_files(&self) -> bool {
        !self.lock().files.is_empty()
    }

    /// The registered ranges with their markers, and whether the lengths are compact.
    fn take_files(&self) -> (Vec<(Bytes, Vec<FileSlice>)>, bool) {
        let mut st = self.lock();
        (std::mem::take(&mut st.files), st.compact)
    }

    /// The encoded response, once [`super::encode`] made it.
    pub fn take_encoded(&self) -> Option<Arc<SplicedResponse>> {
        self.lock().encoded.take()
    }

    /// Encodes with `f` into a [`SpliceBuf`] holding this response's ranges, then keeps the
    /// result (taken with [`take_encoded`](Self::take_encoded)) and returns its bytes without
    /// the files. `f` must write the 4-byte size prefix first; it is set here to the whole
    /// response's size.
    ///
    /// Errors: `f`'s; a marker not preceded by its one-byte length, or a range never encoded.
    pub fn encode(
        &self,
        f: impl FnOnce(&mut SpliceBuf) -> anyhow::Result<()>,
    ) -> anyhow::Result<Bytes> {
        let (files, compact) = self.take_files();
        let mut buf = SpliceBuf {
            out: BytesMut::with_capacity(256),
            markers: files,
            compact,
            placed: Vec::new(),
            found: 0,
            error: None,
        };
        f(&mut buf)?;
        if let Some(e) = buf.error {
            anyhow::bail!(e);
        }
        if buf.found != buf.markers.len() {
            anyhow::bail!(
                "{} of {} records fields in files were not encoded",
                buf.markers.len() - buf.found,
                buf.markers.len()
            );
        }
        let files: usize = buf.placed.iter().map(|(_, f)| f.len()).sum();
        let size = i32::try_from(buf.out.len() - 4 + files)?;
        buf.out[0..4].copy_from_slice(&size.to_be_bytes());
        let head = buf.out.freeze();
        let resp = SplicedResponse::new(head.clone(), buf.placed);
        self.lock().encoded = Some(Arc::new(resp));
        Ok(head)
    }
}

/// The buffer a response with file ranges is encoded into: a marker's bytes are not written;
/// its length prefix is rewritten to the range's length and the range is noted at that
/// position.
pub struct SpliceBuf {
    out: BytesMut,
    markers: Vec<(Bytes, Vec<FileSlice>)>,
    compact: bool,
    placed: Vec<(usize, FileSlice)>,
    /// Markers met so far.
    found: usize,
    error: Option<String>,
}

impl SpliceBuf {
    /// The range whose marker `src` is, if any.
    fn marker(&self, src: &[u8]) -> Option<usize> {
        if src.len() != 1 {
            return None;
        }
        self.markers
            .iter()
            .position(|(m, _)| std::ptr::eq(m.as_ptr(), src.as_ptr()))
    }

    /// Replaces the marker's length prefix (just written) with `len`'s and notes the range.
    fn place(&mut self, i: usize) {
        let prefix = if self.compact { 1 } else { 4 };
        let len: usize = self.markers[i].1.iter().map(FileSlice::len).sum();
        let expected: &[u8] = if self.compact { &[2] } else { &[0, 0, 0, 1] };
        if self.out.len() < prefix || &self.out[self.out.len() - prefix..] != expected {
            self.error = Some("a file range's marker was not encoded as a records field".into());
            return;
        }
        self.out.truncate(self.out.len() - prefix);
        if self.compact {
            // Unsigned varint of length + 1 (KIP-482's compact bytes).
            let mut v = len as u64 + 1;
            while v >= 0x80 {
                self.out.put_u8((v as u8) | 0x80);
                v >>= 7;
            }
            self.out.put_u8(v as u8);
        } else {
            self.out.put_i32(len as i32);
        }
        let at = self.out.len();
        self.placed
            .extend(self.markers[i].1.iter().map(|f| (at, f.clone())));
        self.found += 1;
    }
}

// SAFETY: every method delegates to the inner `BytesMut`, which upholds `BufMut`'s contract;
// `put_slice` either delegates or writes nothing (a marker).
unsafe impl BufMut for SpliceBuf {
    fn remaining_mut(&self) -> usize {
        self.out.remaining_mut()
    }
    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller initialised `cnt` bytes of the chunk the inner buffer gave.
        unsafe { self.out.advance_mut(cnt) }
    }
    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.out.chunk_mut()
    }
    fn put_slice(&mut self, src: &[u8]) {
        match self.marker(src) {
            Some(i) => self.place(i),
            None => self.out.put_slice(src),
        }
    }
}

impl ByteBufMut for SpliceBuf {
    fn offset(&self) -> usize {
        self.out.len()
    }
    fn seek(&mut self, offset: usize) {
        self.out.resize(offset, 0);
    }
    fn range(&mut self, r: std::ops::Range<usize>) -> &mut [u8] {
        &mut self.out[r]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::testing::value_batch;
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kafka_protocol::messages::FetchResponse;
    use kafka_protocol::protocol::Encodable;

    /// A log on disk of 40 one-record batches over several segments, and a zero-copy read of
    /// all of it.
    fn log_with_files(dir: &std::path::Path) -> (frieda_log::PartitionLog, frieda_log::FileFetch) {
        let config = frieda_log::LogConfig {
            tail_cache_bytes: 0,
            segment_bytes: 4_000,
            index_interval_bytes: 500,
            ..Default::default()
        };
        let (mut log, _) = frieda_log::PartitionLog::open(dir, config, 0).unwrap();
        for i in 0..40u8 {
            log.append(value_batch(vec![i; 100 + 7 * i as usize]).0, 0)
                .unwrap();
        }
        let r = log.reader();
        let fetch = r
            .plan_file_read(3, 1 << 20, i64::MAX)
            .unwrap()
            .run_unread(|_, _, _| None)
            .unwrap();
        assert!(fetch.slices.len() > 2, "{} slices", fetch.slices.len());
        (log, fetch)
    }

    fn response(records: &[Bytes]) -> FetchResponse {
        let partitions = records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                PartitionData::default()
                    .with_partition_index(i as i32)
                    .with_high_watermark(40)
                    .with_records(Some(r.clone()))
            })
            .collect();
        FetchResponse::default().with_responses(vec![
            FetchableTopicResponse::default().with_partitions(partitions)
        ])
    }

    /// A response encoded with file ranges in place of two partitions' records is, byte for
    /// byte, the response encoded with those records in memory, in a flexible (v12+, compact
    /// lengths) and an older version; its size prefix counts the files.
    #[test]
    fn a_spliced_response_is_the_response_with_its_records_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let (_log, fetch) = log_with_files(dir.path());
        let mut in_memory = Vec::new();
        for s in &fetch.slices {
            let mut b = vec![0u8; s.len()];
            s.read_at(&mut b, 0).unwrap();
            in_memory.extend_from_slice(&b);
        }
        let in_memory = Bytes::from(in_memory);
        for version in [4i16, 11, 12, 16] {
            let splice = Splice::default();
            let compact = version >= 12;
            let a = splice.files(fetch.slices.clone(), compact);
            let b = splice.files(fetch.slices[1..].to_vec(), compact);
            let tail: usize = fetch.slices[1..].iter().map(FileSlice::len).sum();
            let plain = response(&[
                in_memory.clone(),
                Bytes::from_static(b"xyz"),
                in_memory.slice(in_memory.len() - tail..),
            ]);
            let mut expect = BytesMut::new();
            expect.put_i32(0);
            plain.encode(&mut expect, version).unwrap();
            let size = (expect.len() - 4) as i32;
            expect[0..4].copy_from_slice(&size.to_be_bytes());

            let marked = response(&[a, Bytes::from_static(b"xyz"), b]);
            let head = splice
                .encode(|buf| {
                    buf.put_i32(0);
                    marked.encode(buf, version)
                })
                .unwrap();
            let spliced = splice.take_encoded().unwrap();
            assert_eq!(spliced.len(), expect.len(), "v{version}");
            assert_eq!(spliced.file_bytes(), in_memory.len() + tail);
            assert_eq!(head.len() + spliced.file_bytes(), expect.len());
            assert_eq!(
                &spliced.copy_range(0, usize::MAX).unwrap()[..],
                &expect[..],
                "v{version}"
            );
            // Any part of it, as the connection writes it in pieces.
            for skip in (0..expect.len()).step_by(97) {
                let got = spliced.copy_range(skip, 1000).unwrap();
                assert_eq!(&got[..], &expect[skip..(skip + 1000).min(expect.len())]);
            }
        }
    }

    /// Ranges registered but never encoded (their marker dropped from the response) fail the
    /// encoding rather than send a response without them.
    #[test]
    fn a_marker_left_out_of_the_response_fails_the_encoding() {
        let dir = tempfile::tempdir().unwrap();
        let (_log, fetch) = log_with_files(dir.path());
        let splice = Splice::default();
        let _marker = splice.files(fetch.slices.clone(), true);
        let plain = response(&[Bytes::from_static(b"abc")]);
        let r = splice.encode(|buf| {
            buf.put_i32(0);
            plain.encode(buf, 12)
        });
        assert!(r.is_err());
        assert!(splice.take_encoded().is_none());
    }
}
