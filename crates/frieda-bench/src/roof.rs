//! Machine roofs for the roofline trajectory: loopback TCP bandwidth and sequential disk write
//! bandwidth (with fdatasync), measured the simplest way that gives a ceiling.

use anyhow::{Context, Result};
use serde::Serialize;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Serialize, Debug)]
pub struct NetRoof {
    pub kind: &'static str,
    pub streams: usize,
    pub write_size: usize,
    pub seconds: f64,
    pub bytes: u64,
    pub bytes_per_s: f64,
}

/// `streams` connections over 127.0.0.1, each writing `write_size` chunks for `secs`.
pub fn net(secs: f64, streams: usize, write_size: usize) -> Result<NetRoof> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    let mut writers = Vec::new();
    for _ in 0..streams {
        let w = TcpStream::connect(addr)?;
        let (r, _) = listener.accept()?;
        readers.push(std::thread::spawn(move || -> u64 {
            let mut r = r;
            let mut buf = vec![0u8; 1 << 20];
            let mut n = 0u64;
            loop {
                match r.read(&mut buf) {
                    Ok(0) | Err(_) => return n,
                    Ok(k) => n += k as u64,
                }
            }
        }));
        let stop = stop.clone();
        writers.push(std::thread::spawn(move || {
            let mut w = w;
            let buf = vec![0x5au8; write_size];
            while !stop.load(Ordering::Relaxed) {
                if w.write_all(&buf).is_err() {
                    break;
                }
            }
        }));
    }
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        let _ = w.join();
    }
    let elapsed = t.elapsed().as_secs_f64();
    let bytes: u64 = readers.into_iter().map(|r| r.join().unwrap_or(0)).sum();
    Ok(NetRoof {
        kind: "loopback_tcp",
        streams,
        write_size,
        seconds: elapsed,
        bytes,
        bytes_per_s: bytes as f64 / elapsed,
    })
}

#[derive(Serialize, Debug)]
pub struct DiskRoof {
    pub kind: &'static str,
    pub dir: String,
    pub bytes: u64,
    /// write() of every chunk, before fdatasync (page cache speed)
    pub buffered_bytes_per_s: f64,
    /// including the final fdatasync (what the device sustains)
    pub synced_bytes_per_s: f64,
}

/// Sequential 1 MiB writes of `mb` MiB into a temp file in `dir`, then fdatasync; file removed.
pub fn disk(dir: &Path, mb: usize) -> Result<DiskRoof> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!(".frieda-bench-roof-{}", std::process::id()));
    let mut f =
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let chunk = vec![0xa5u8; 1 << 20];
    let t = Instant::now();
    for _ in 0..mb {
        f.write_all(&chunk)?;
    }
    let buffered = t.elapsed().as_secs_f64();
    // SAFETY: valid fd.
    let rc = unsafe { libc::fdatasync(f.as_raw_fd()) };
    let synced = t.elapsed().as_secs_f64();
    drop(f);
    let _ = std::fs::remove_file(&path);
    if rc != 0 {
        anyhow::bail!("fdatasync: {}", std::io::Error::last_os_error());
    }
    let bytes = (mb as u64) << 20;
    Ok(DiskRoof {
        kind: "disk_seq_write",
        dir: dir.display().to_string(),
        bytes,
        buffered_bytes_per_s: bytes as f64 / buffered,
        synced_bytes_per_s: bytes as f64 / synced,
    })
}

/// The machine's wake-up floor: latency percentiles (µs) of a do-nothing loopback TCP echo
/// (one byte each way, a blocking server thread) paced at `rate` round trips per second, and of
/// a bare 100 µs `nanosleep`'s overshoot. No broker can answer faster than its machine wakes
/// threads: these bound from below what a broker's percentiles can show here.
#[derive(Serialize, Debug)]
pub struct WakeRoof {
    pub kind: &'static str,
    pub seconds: f64,
    pub rate: u64,
    pub echo_samples: u64,
    pub echo_p50_us: u64,
    pub echo_p99_us: u64,
    pub echo_p999_us: u64,
    pub echo_p9999_us: u64,
    pub echo_max_us: u64,
    pub sleep_samples: u64,
    pub sleep_overshoot_p50_us: u64,
    pub sleep_overshoot_p99_us: u64,
    pub sleep_overshoot_p999_us: u64,
    pub sleep_overshoot_p9999_us: u64,
    pub sleep_overshoot_max_us: u64,
}

/// Measures [`WakeRoof`]: `secs` of echo round trips at `rate`/s, then `secs` of 100 µs sleeps.
pub fn wake(secs: f64, rate: u64) -> Result<WakeRoof> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut b = [0u8; 1];
        loop {
            if s.read(&mut b)? == 0 {
                return Ok(());
            }
            s.write_all(&b)?;
        }
    });
    let mut echo = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    {
        let mut c = TcpStream::connect(addr)?;
        c.set_nodelay(true)?;
        let interval = Duration::from_nanos(1_000_000_000 / rate.max(1));
        let start = Instant::now();
        let end = start + Duration::from_secs_f64(secs);
        let mut due = start;
        let mut b = [1u8; 1];
        while due < end {
            let now = Instant::now();
            if now < due {
                std::thread::sleep(due - now);
            }
            c.write_all(&b)?;
            c.read_exact(&mut b)?;
            // from the scheduled time: a late wake-up of the client counts too (open loop)
            echo.saturating_record(due.elapsed().as_micros() as u64);
            due += interval;
        }
    }
    let _ = server.join();
    let mut sleep = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let nap = Duration::from_micros(100);
    while Instant::now() < end {
        let t = Instant::now();
        std::thread::sleep(nap);
        sleep.saturating_record(t.elapsed().saturating_sub(nap).as_micros() as u64);
    }
    Ok(WakeRoof {
        kind: "wake",
        seconds: secs,
        rate,
        echo_samples: echo.len(),
        echo_p50_us: echo.value_at_quantile(0.5),
        echo_p99_us: echo.value_at_quantile(0.99),
        echo_p999_us: echo.value_at_quantile(0.999),
        echo_p9999_us: echo.value_at_quantile(0.9999),
        echo_max_us: echo.max(),
        sleep_samples: sleep.len(),
        sleep_overshoot_p50_us: sleep.value_at_quantile(0.5),
        sleep_overshoot_p99_us: sleep.value_at_quantile(0.99),
        sleep_overshoot_p999_us: sleep.value_at_quantile(0.999),
        sleep_overshoot_p9999_us: sleep.value_at_quantile(0.9999),
        sleep_overshoot_max_us: sleep.max(),
    })
}
