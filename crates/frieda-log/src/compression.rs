//! Record batch compression codecs (attributes bits 0-2), with bounded decompression.
//!
//! Kafka compresses the records section of a v2 batch (everything after the 61-byte header) as
//! one stream: gzip (RFC 1952), snappy in xerial-snappy framing (the Java client's
//! `SnappyOutputStream`; raw snappy is read too, as Java's `SnappyInputStream` does), lz4 frames
//! (KIP-57) and zstd frames. The codecs themselves come from well-kept crates (`flate2`, `snap`,
//! `lz4_flex`, `zstd`); this module only frames them and bounds what a decompression may
//! allocate, so a small hostile batch cannot make the broker allocate gigabytes
//! ([`MAX_DECOMPRESSED_BYTES`]).
//!
//! The broker decompresses only where Kafka does: validating compacted topics (every record needs
//! a key), recompressing for a topic's `compression.type`, ListOffsets `MAX_TIMESTAMP`, and the
//! log cleaner. Batches are otherwise stored and served as the producer compressed them.

use std::io::{Read, Write};

use crate::batch::BatchError;

/// Largest records section a decompression may produce, bytes (128 MiB). A batch that inflates
/// beyond it is refused with `CorruptMessage` (Kafka has no such bound; it streams, we do not).
pub const MAX_DECOMPRESSED_BYTES: usize = 128 << 20;

/// xerial-snappy stream header: magic `\x82SNAPPY\0`, version 1, compatible version 1.
const SNAPPY_XERIAL_HEADER: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// Uncompressed bytes per xerial-snappy block, as the Java client writes them (32 KiB).
const SNAPPY_BLOCK: usize = 32 * 1024;

/// A compression codec as encoded in the batch attributes (bits 0-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// 0: uncompressed.
    None,
    /// 1: gzip.
    Gzip,
    /// 2: snappy (xerial framing).
    Snappy,
    /// 3: lz4 frame.
    Lz4,
    /// 4: zstd.
    Zstd,
}

impl Codec {
    /// The codec of attribute bits 0-2; ids 5-7 are not codecs (`CorruptMessage`, as Kafka's
    /// `CompressionType.forId` fails).
    pub fn from_id(id: u8) -> Result<Codec, BatchError> {
        Ok(match id {
            0 => Codec::None,
            1 => Codec::Gzip,
            2 => Codec::Snappy,
            3 => Codec::Lz4,
            4 => Codec::Zstd,
            other => {
                return Err(BatchError::CorruptMessage(format!(
                    "unknown compression codec id {other}"
                )))
            }
        })
    }

    /// The codec's attribute bits.
    pub fn id(self) -> u8 {
        match self {
            Codec::None => 0,
            Codec::Gzip => 1,
            Codec::Snappy => 2,
            Codec::Lz4 => 3,
            Codec::Zstd => 4,
        }
    }

    /// The codec named by a topic's `compression.type` (`uncompressed`, `gzip`, `snappy`, `lz4`,
    /// `zstd`); `None` for `producer` (keep what the producer sent) and unknown names.
    pub fn from_topic_config(name: &str) -> Option<Codec> {
        Some(match name {
            "uncompressed" | "none" => Codec::None,
            "gzip" => Codec::Gzip,
            "snappy" => Codec::Snappy,
            "lz4" => Codec::Lz4,
            "zstd" => Codec::Zstd,
            _ => return None,
        })
    }
}

fn corrupt(codec: Codec, e: impl std::fmt::Display) -> BatchError {
    BatchError::CorruptMessage(format!("cannot decompress {codec:?} records: {e}"))
}

/// Reads all of `r` into a vector, refusing more than [`MAX_DECOMPRESSED_BYTES`].
fn read_bounded(codec: Codec, r: impl Read) -> Result<Vec<u8>, BatchError> {
    let mut out = Vec::new();
    r.take(MAX_DECOMPRESSED_BYTES as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| corrupt(codec, e))?;
    if out.len() > MAX_DECOMPRESSED_BYTES {
        return Err(BatchError::CorruptMessage(format!(
            "{codec:?} records inflate beyond {MAX_DECOMPRESSED_BYTES} bytes"
        )));
    }
    Ok(out)
}

/// Decompresses a records section. `Codec::None` returns a copy.
///
/// Errors: `CorruptMessage` for undecodable input or output beyond [`MAX_DECOMPRESSED_BYTES`].
pub fn decompress(codec: Codec, data: &[u8]) -> Result<Vec<u8>, BatchError> {
    match codec {
        Codec::None => Ok(data.to_vec()),
        Codec::Gzip => read_bounded(codec, flate2::read::GzDecoder::new(data)),
        Codec::Lz4 => read_bounded(codec, lz4_flex::frame::FrameDecoder::new(data)),
        Codec::Zstd => {
            let d = zstd::stream::read::Decoder::new(data).map_err(|e| corrupt(codec, e))?;
            read_bounded(codec, d)
        }
        Codec::Snappy => snappy_decompress(data),
    }
}

fn snappy_block(data: &[u8], out: &mut Vec<u8>) -> Result<(), BatchError> {
    let n = snap::raw::decompress_len(data).map_err(|e| corrupt(Codec::Snappy, e))?;
    if out.len().saturating_add(n) > MAX_DECOMPRESSED_BYTES {
        return Err(BatchError::CorruptMessage(format!(
            "snappy records inflate beyond {MAX_DECOMPRESSED_BYTES} bytes"
        )));
    }
    let start = out.len();
    out.resize(start + n, 0);
    let written = snap::raw::Decoder::new()
        .decompress(data, &mut out[start..])
        .map_err(|e| corrupt(Codec::Snappy, e))?;
    out.truncate(start + written);
    Ok(())
}

fn snappy_decompress(data: &[u8]) -> Result<Vec<u8>, BatchError> {
    let mut out = Vec::new();
    let Some(mut rest) = data.strip_prefix(&SNAPPY_XERIAL_HEADER[..]) else {
        snappy_block(data, &mut out)?;
        return Ok(out);
    };
    while !rest.is_empty() {
        if rest.len() < 4 {
            return Err(corrupt(Codec::Snappy, "truncated block length"));
        }
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let block = rest
            .get(4..4 + len)
            .ok_or_else(|| corrupt(Codec::Snappy, "truncated block"))?;
        snappy_block(block, &mut out)?;
        rest = &rest[4 + len..];
    }
    Ok(out)
}

/// Compresses a records section with `codec` (`Codec::None` returns a copy), in the framing
/// Kafka's clients read (see the module docs).
pub fn compress(codec: Codec, data: &[u8]) -> Vec<u8> {
    match codec {
        Codec::None => data.to_vec(),
        Codec::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).expect("writing to a Vec cannot fail");
            e.finish().expect("writing to a Vec cannot fail")
        }
        Codec::Lz4 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            e.write_all(data).expect("writing to a Vec cannot fail");
            e.finish().expect("writing to a Vec cannot fail")
        }
        Codec::Zstd => zstd::bulk::compress(data, 3).expect("zstd compression of memory"),
        Codec::Snappy => {
            let mut out = SNAPPY_XERIAL_HEADER.to_vec();
            let mut enc = snap::raw::Encoder::new();
            for block in data.chunks(SNAPPY_BLOCK) {
                let c = enc
                    .compress_vec(block)
                    .expect("snappy compression of a 32 KiB block");
                out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                out.extend_from_slice(&c);
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect();
        for codec in [
            Codec::None,
            Codec::Gzip,
            Codec::Snappy,
            Codec::Lz4,
            Codec::Zstd,
        ] {
            let c = compress(codec, &data);
            assert_eq!(decompress(codec, &c).unwrap(), data, "{codec:?}");
            assert_eq!(Codec::from_id(codec.id()).unwrap(), codec);
        }
        assert!(Codec::from_id(5).is_err());
        assert_eq!(Codec::from_topic_config("producer"), None);
        assert_eq!(Codec::from_topic_config("zstd"), Some(Codec::Zstd));
    }

    #[test]
    fn raw_snappy_is_read_too() {
        let data = b"hello hello hello hello".repeat(10);
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(decompress(Codec::Snappy, &raw).unwrap(), data);
    }

    #[test]
    fn garbage_is_corrupt_not_a_panic() {
        for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
            for bytes in [&b""[..], b"\x00\x01\x02", &[0xff; 64][..]] {
                let _ = decompress(codec, bytes);
            }
            assert!(decompress(codec, b"definitely not compressed").is_err());
        }
    }

    #[test]
    fn inflation_is_bounded() {
        let zeros = vec![0u8; MAX_DECOMPRESSED_BYTES + 1];
        for codec in [Codec::Gzip, Codec::Lz4, Codec::Zstd, Codec::Snappy] {
            let bomb = compress(codec, &zeros);
            assert!(bomb.len() < zeros.len() / 20, "{codec:?} {}", bomb.len());
            assert!(
                matches!(decompress(codec, &bomb), Err(BatchError::CorruptMessage(m)) if m.contains("beyond")),
                "{codec:?}"
            );
        }
    }
}
