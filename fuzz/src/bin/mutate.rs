//! Stable-toolchain fallback for `cargo fuzz` (no libFuzzer, no coverage guidance): random
//! mutations (bit flips, byte sets, inserts, deletes, splices, interesting integers) of the seed
//! corpus through the same target functions, for a bounded time.
//!
//!     cargo run --release --bin mutate -- TARGET SECONDS [SEED]
//!     cargo run --release --bin mutate -- --write-seeds TARGET DIR
//!
//! The corpus: the committed seeds (`fuzz/seeds/TARGET`), the working corpus of libFuzzer runs
//! (`fuzz/corpus/TARGET`) and the seeds generated from the broker's API table
//! ([`frieda_fuzz::table_seeds`]: every version of every API). Each seed runs once unmodified,
//! then mutations until SECONDS are up, however many seeds there are.
//!
//! Prints `TARGET: N executions in S s` and exits non-zero on the first panic, after writing
//! the input to `fuzz/artifacts/TARGET/crash-mutate-*`. `--write-seeds` writes the table's seeds
//! of TARGET as files into DIR (created if missing) for libFuzzer (`scripts/fuzz`).

use std::path::Path;
use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(rng: &mut Rng, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    const INTERESTING: [i64; 10] = [
        0,
        1,
        -1,
        127,
        128,
        255,
        0x7fff,
        0x7fff_ffff,
        -0x8000_0000,
        61,
    ];
    for _ in 0..1 + rng.below(4) {
        let len = input.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(16);
                for _ in 0..n {
                    input.insert(i, rng.next() as u8);
                }
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(64));
                input.drain(i..i + n);
            }
            4 if len >= 4 => {
                let v = INTERESTING[rng.below(INTERESTING.len())];
                let w = [1usize, 2, 4, 8][rng.below(4)].min(len);
                let i = rng.below(len - w + 1);
                let b = v.to_be_bytes();
                input[i..i + w].copy_from_slice(&b[8 - w..]);
            }
            5 if !corpus.is_empty() => {
                let other = &corpus[rng.below(corpus.len())];
                let i = rng.below(len + 1);
                let j = rng.below(other.len() + 1);
                input.truncate(i);
                input.extend_from_slice(&other[j..]);
            }
            _ if len > 0 => {
                input.truncate(rng.below(len));
            }
            _ => input.push(rng.next() as u8),
        }
    }
    input.truncate(1 << 20);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--write-seeds") {
        let (Some(target), Some(dir)) = (args.get(2), args.get(3)) else {
            eprintln!("usage: mutate --write-seeds TARGET DIR");
            std::process::exit(2);
        };
        std::process::exit(match write_seeds(target, Path::new(dir)) {
            Ok(n) => {
                println!("{target}: {n} table seeds written to {dir}");
                0
            }
            Err(e) => {
                eprintln!("{target}: cannot write the table seeds to {dir}: {e}");
                1
            }
        });
    }
    let target = args.get(1).map(String::as_str).unwrap_or("");
    let seconds: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let run: fn(&[u8]) = match target {
        "request_frame" => frieda_fuzz::request_frame,
        "request_stream" => frieda_fuzz::request_stream,
        "record_batch" => frieda_fuzz::record_batch,
        "log_recovery" => frieda_fuzz::log_recovery,
        _ => {
            eprintln!("usage: mutate request_frame|request_stream|record_batch|log_recovery SECONDS [SEED]");
            std::process::exit(2);
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    for dir in [
        root.join("seeds").join(target),
        root.join("corpus").join(target),
    ] {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if let Ok(b) = std::fs::read(e.path()) {
                    corpus.push(b);
                }
            }
        }
    }
    let table = frieda_fuzz::table_seeds(target);
    let table_count = table.len();
    corpus.extend(table.into_iter().map(|(_, bytes)| bytes));
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    let crash_dir = root.join("artifacts").join(target);
    let mut rng = Rng(seed | 1);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let mut execs = 0u64;
    // seeds first, unmodified
    let mut queue: Vec<Vec<u8>> = corpus.clone();
    while Instant::now() < deadline {
        let input = match queue.pop() {
            Some(i) => i,
            None => {
                let mut i = corpus[rng.below(corpus.len())].clone();
                mutate(&mut rng, &mut i, &corpus);
                i
            }
        };
        let r = std::panic::catch_unwind(|| run(&input));
        execs += 1;
        if r.is_err() {
            let _ = std::fs::create_dir_all(&crash_dir);
            let path = crash_dir.join(format!("crash-mutate-{seed}-{execs}"));
            let _ = std::fs::write(&path, &input);
            eprintln!(
                "{target}: panic after {execs} executions; input saved to {}",
                path.display()
            );
            std::process::exit(1);
        }
    }
    println!(
        "{target}: {execs} executions in {:.0} s (stable mutation runner, {} seeds of which {table_count} from the API table), 0 crashes",
        start.elapsed().as_secs_f64(),
        corpus.len()
    );
}

/// Writes the API table's seeds of `target` into `dir`, one file each; returns how many.
fn write_seeds(target: &str, dir: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let seeds = frieda_fuzz::table_seeds(target);
    for (name, bytes) in &seeds {
        std::fs::write(dir.join(name), bytes)?;
    }
    Ok(seeds.len())
}
