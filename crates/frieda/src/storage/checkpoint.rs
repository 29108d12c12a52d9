//! Kafka's offset checkpoint files, one per data directory: `recovery-point-offset-checkpoint`
//! (every offset below it was fsync'ed: recovery after an unclean shutdown validates only what
//! lies above) and `cleaner-offset-checkpoint` (where the log cleaner's next pass starts).
//!
//! Format (Kafka's `CheckpointFile` / `OffsetCheckpointFile`), text:
//! ```text
//! 0                  version
//! 2                  number of entries
//! orders 0 1234      <topic> <partition> <offset>
//! __consumer_offsets 0 99
//! ```
//! Written to a temporary file, fsync'ed and renamed over the old one, then the directory is
//! fsync'ed, so a crash leaves the old or the new file whole.

use crate::durable;
use std::collections::BTreeMap;
use std::path::Path;

/// File name of the recovery points (Kafka's).
pub const RECOVERY_POINT_FILE: &str = "recovery-point-offset-checkpoint";
/// File name of the cleaner's first dirty offsets (Kafka's).
pub const CLEANER_OFFSET_FILE: &str = "cleaner-offset-checkpoint";

/// Offsets by topic and partition.
pub type Offsets = BTreeMap<(String, i32), i64>;

/// Reads a checkpoint file. A missing file is empty. A damaged one is reported with a warning
/// and read as empty, as Kafka does: for recovery points that means validating every segment,
/// for the cleaner cleaning from the log start, both safe.
pub fn read(path: &Path) -> Offsets {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text).unwrap_or_else(|why| {
            tracing::warn!(file = %path.display(), why, "ignoring a damaged checkpoint file");
            Offsets::new()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Offsets::new(),
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "cannot read a checkpoint file; ignoring it");
            Offsets::new()
        }
    }
}

fn parse(text: &str) -> Result<Offsets, String> {
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some("0") => {}
        other => return Err(format!("unrecognised version {other:?}")),
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("no entry count")?;
    let mut out = Offsets::new();
    for line in lines.by_ref().take(count) {
        let mut f = line.split_whitespace();
        let (Some(topic), Some(p), Some(o), None) = (f.next(), f.next(), f.next(), f.next()) else {
            return Err(format!("malformed entry {line:?}"));
        };
        let p: i32 = p
            .parse()
            .map_err(|_| format!("bad partition in {line:?}"))?;
        let o: i64 = o.parse().map_err(|_| format!("bad offset in {line:?}"))?;
        out.insert((topic.to_string(), p), o);
    }
    if out.len() != count {
        return Err(format!("expected {count} entries, found {}", out.len()));
    }
    Ok(out)
}

/// Writes a checkpoint file durably (temporary file, fsync, rename, directory fsync).
///
/// Errors: the `std::io::Error` of the write; the old file is then intact.
pub fn write(path: &Path, offsets: &Offsets) -> std::io::Result<()> {
    let mut text = format!("0\n{}\n", offsets.len());
    for ((topic, p), o) in offsets {
        text.push_str(&format!("{topic} {p} {o}\n"));
    }
    durable::write(path, &text).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RECOVERY_POINT_FILE);
        assert!(read(&path).is_empty());
        let mut o = Offsets::new();
        o.insert(("orders".into(), 3), 1234);
        o.insert(("__consumer_offsets".into(), 0), 7);
        write(&path, &o).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "0\n2\n__consumer_offsets 0 7\norders 3 1234\n"
        );
        assert_eq!(read(&path), o);
        for bad in [
            "1\n0\n",
            "0\n2\na 0 1\n",
            "0\n1\na x 1\n",
            "0\n1\na 0 1 2\n",
            "",
        ] {
            std::fs::write(&path, bad).unwrap();
            assert!(read(&path).is_empty(), "{bad:?}");
        }
    }
}
