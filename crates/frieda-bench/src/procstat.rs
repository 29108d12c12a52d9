//! CPU time and RSS of a process from /proc (the broker under test, and ourselves).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn clk_tck() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// utime + stime of `pid` in seconds ("self" for this process).
pub fn cpu_seconds(pid: &str) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // comm (field 2) may contain spaces: fields after the closing paren.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime is field 14, stime field 15.
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / clk_tck())
}

/// Resident set size in KiB.
pub fn rss_kb(pid: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Samples a process's RSS every 250 ms in the background; CPU is read at window edges.
pub struct BrokerSampler {
    pub pid: String,
    rss_max: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    cpu_start: Mutex<Option<f64>>,
}

impl BrokerSampler {
    pub fn start(pid: u32) -> Self {
        let pid = pid.to_string();
        let rss_max = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (pid, rss_max, stop) = (pid.clone(), rss_max.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(r) = rss_kb(&pid) {
                        rss_max.fetch_max(r, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(250));
                }
            });
        }
        BrokerSampler {
            pid,
            rss_max,
            stop,
            cpu_start: Mutex::new(None),
        }
    }

    /// Marks the start of the measured window.
    pub fn mark(&self) {
        *self.cpu_start.lock().unwrap() = cpu_seconds(&self.pid);
        self.rss_max
            .store(rss_kb(&self.pid).unwrap_or(0), Ordering::Relaxed);
    }

    /// (cpu seconds since mark, max rss KiB since mark).
    pub fn finish(&self) -> (Option<f64>, Option<u64>) {
        self.stop.store(true, Ordering::Relaxed);
        let cpu = match (*self.cpu_start.lock().unwrap(), cpu_seconds(&self.pid)) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        let r = self.rss_max.load(Ordering::Relaxed);
        (cpu, if r > 0 { Some(r) } else { None })
    }
}

impl Drop for BrokerSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_own_stat() {
        let c = super::cpu_seconds("self").unwrap();
        assert!(c >= 0.0);
        assert!(super::rss_kb("self").unwrap() > 0);
    }
}
