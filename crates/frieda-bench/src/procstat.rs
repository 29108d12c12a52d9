//! CPU time and RSS of processes from /proc (the brokers under test, and ourselves), and the
//! machine's busy CPU time (to tell how much of it other processes took during a window).

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

/// Busy CPU seconds of the whole machine since boot (all cores): user + nice + system + irq +
/// softirq + steal from the first line of /proc/stat (guest time is already inside user).
pub fn machine_busy_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().next()?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal
    let busy = f.first()? + f.get(1)? + f.get(2)? + f.get(5)? + f.get(6)? + f.get(7).unwrap_or(&0);
    Some(busy as f64 / clk_tck())
}

/// Samples the RSS of one or more processes (the brokers of a cluster) every 250 ms in the
/// background; CPU is read at the window's edges and summed over the processes.
pub struct BrokerSampler {
    pub pids: Vec<String>,
    rss_max: Arc<Vec<AtomicU64>>,
    stop: Arc<AtomicBool>,
    cpu_start: Mutex<Vec<Option<f64>>>,
}

impl BrokerSampler {
    pub fn start(pids: &[u32]) -> Self {
        let pids: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
        let rss_max = Arc::new(pids.iter().map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
        let stop = Arc::new(AtomicBool::new(false));
        {
            let (pids, rss_max, stop) = (pids.clone(), rss_max.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for (i, pid) in pids.iter().enumerate() {
                        if let Some(r) = rss_kb(pid) {
                            rss_max[i].fetch_max(r, Ordering::Relaxed);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(250));
                }
            });
        }
        let n = pids.len();
        BrokerSampler {
            pids,
            rss_max,
            stop,
            cpu_start: Mutex::new(vec![None; n]),
        }
    }

    /// Marks the start of the measured window.
    pub fn mark(&self) {
        let mut c = self.cpu_start.lock().unwrap();
        for (i, pid) in self.pids.iter().enumerate() {
            c[i] = cpu_seconds(pid);
            self.rss_max[i].store(rss_kb(pid).unwrap_or(0), Ordering::Relaxed);
        }
    }

    /// Per process: (pid, cpu seconds since mark, max rss KiB since mark).
    pub fn finish(&self) -> Vec<(String, Option<f64>, Option<u64>)> {
        self.stop.store(true, Ordering::Relaxed);
        let c = self.cpu_start.lock().unwrap();
        self.pids
            .iter()
            .enumerate()
            .map(|(i, pid)| {
                let cpu = match (c[i], cpu_seconds(pid)) {
                    (Some(a), Some(b)) => Some(b - a),
                    _ => None,
                };
                let r = self.rss_max[i].load(Ordering::Relaxed);
                (pid.clone(), cpu, if r > 0 { Some(r) } else { None })
            })
            .collect()
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
        assert!(super::machine_busy_seconds().unwrap() > 0.0);
    }
}
