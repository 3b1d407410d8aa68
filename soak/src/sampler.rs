//! The process's resident memory and open file descriptors, sampled over a run; the
//! verdicts on them, a small text plot and the CSV.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// End RSS may exceed the start by this much (allocator caches, thread-local pools).
pub const RSS_SLACK: u64 = 16 << 20;
/// End fds may exceed the start by this many.
pub const FD_SLACK: u64 = 2;
/// Most RSS growth over the second half of a run (the fitted slope times its length).
pub const RSS_GROWTH_BOUND: f64 = 8.0 * 1024.0 * 1024.0;
/// Most fd growth over the second half of a run (the fitted slope times its length).
pub const FD_GROWTH_BOUND: f64 = 16.0;

/// One sample: seconds since the run began, resident bytes, open descriptors.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Seconds since the run began.
    pub t: f64,
    /// Resident set size in bytes.
    pub rss: u64,
    /// Open file descriptors.
    pub fds: u64,
}

/// The process's resident set size in bytes (`/proc/self/statm`, second field).
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = (statm.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    pages * page
}

/// The process's open file descriptors (entries of `/proc/self/fd`, less the one the
/// listing itself holds open).
pub fn fd_count() -> u64 {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count() as u64)
        .unwrap_or(1)
        .saturating_sub(1)
}

/// Give freed heap back to the system, so that RSS reflects what is live.
pub fn trim() {
    // SAFETY: malloc_trim only releases free memory of glibc's arenas.
    unsafe { libc::malloc_trim(0) };
}

/// A sample now, `start` being the run's beginning.
pub fn sample(start: Instant) -> Sample {
    Sample {
        t: start.elapsed().as_secs_f64(),
        rss: rss_bytes(),
        fds: fd_count(),
    }
}

/// Samples taken by a thread at a fixed interval, plus marks: samples a scenario takes at
/// its quiet points (between cycles), comparable with each other.
#[derive(Debug)]
pub struct Sampler {
    start: Instant,
    samples: Arc<Mutex<Vec<Sample>>>,
    marks: Mutex<Vec<Sample>>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Sampler {
    /// Start sampling every `interval`; the first sample is taken now.
    pub fn start(interval: Duration) -> Sampler {
        let start = Instant::now();
        let samples = Arc::new(Mutex::new(vec![sample(start)]));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (samples.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                std::thread::sleep(interval);
                let x = sample(start);
                s.lock().unwrap().push(x);
            }
        });
        Sampler {
            start,
            samples,
            marks: Mutex::new(Vec::new()),
            stop,
            thread: Mutex::new(Some(thread)),
        }
    }

    /// Record a quiet point of the scenario: freed heap is given back first ([`trim`]), so
    /// that quiet points compare live memory, not what the allocator kept.
    pub fn mark(&self) {
        trim();
        let x = sample(self.start);
        self.marks.lock().unwrap().push(x);
        self.samples.lock().unwrap().push(x);
    }

    /// Seconds since the start.
    pub fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Stop sampling, take the final sample, and return the trace. `active_end` is when the
    /// scenario's load ended (its teardown followed).
    pub fn finish(&self, active_end: f64) -> Trace {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.lock().unwrap().take() {
            let _ = t.join();
        }
        let end = sample(self.start);
        let mut samples = std::mem::take(&mut *self.samples.lock().unwrap());
        samples.push(end);
        samples.sort_by(|a, b| a.t.total_cmp(&b.t));
        Trace {
            samples,
            marks: std::mem::take(&mut *self.marks.lock().unwrap()),
            active_end,
        }
    }
}

/// A run's samples.
#[derive(Debug, Clone)]
pub struct Trace {
    /// Every sample in time order; the first is the baseline, the last the end.
    pub samples: Vec<Sample>,
    /// The scenario's quiet points.
    pub marks: Vec<Sample>,
    /// When the load ended (seconds).
    pub active_end: f64,
}

/// The growth fitted over the second half of a run.
#[derive(Debug, Clone, Copy)]
pub struct Growth {
    /// Fitted RSS growth over the half (bytes).
    pub rss: f64,
    /// Fitted fd growth over the half.
    pub fds: f64,
    /// Points the fit used.
    pub points: usize,
    /// Whether the points were the scenario's quiet points (else every sample).
    pub marks: bool,
}

/// Least-squares slope of `ys` over `xs`.
fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx == 0.0 {
        0.0
    } else {
        sxy / sxx
    }
}

impl Trace {
    /// The baseline sample.
    pub fn start(&self) -> Sample {
        self.samples[0]
    }

    /// The final sample, after teardown.
    pub fn end(&self) -> Sample {
        *self.samples.last().unwrap()
    }

    /// The highest RSS and fd count seen.
    pub fn peak(&self) -> (u64, u64) {
        let rss = self.samples.iter().map(|s| s.rss).max().unwrap_or(0);
        let fds = self.samples.iter().map(|s| s.fds).max().unwrap_or(0);
        (rss, fds)
    }

    /// Fit a line to the second half of the load: to the quiet points there if the
    /// scenario marks them (at least two), else to every sample there. `None` when the
    /// half holds too few points to fit.
    pub fn growth(&self) -> Option<Growth> {
        let half = self.active_end / 2.0;
        let in_half = |s: &&Sample| s.t >= half && s.t <= self.active_end;
        let (points, marks): (Vec<Sample>, bool) = if !self.marks.is_empty() {
            (self.marks.iter().filter(in_half).copied().collect(), true)
        } else {
            (
                self.samples.iter().filter(in_half).copied().collect(),
                false,
            )
        };
        if points.len() < if marks { 2 } else { 4 } {
            return None;
        }
        let xs: Vec<f64> = points.iter().map(|s| s.t).collect();
        let rss: Vec<f64> = points.iter().map(|s| s.rss as f64).collect();
        let fds: Vec<f64> = points.iter().map(|s| s.fds as f64).collect();
        let span = self.active_end - half;
        Some(Growth {
            rss: slope(&xs, &rss) * span,
            fds: slope(&xs, &fds) * span,
            points: points.len(),
            marks,
        })
    }

    /// Write the samples as CSV: `t_s,rss_bytes,fds,mark`.
    pub fn write_csv(&self, path: &Path) -> std::io::Result<()> {
        let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
        writeln!(f, "t_s,rss_bytes,fds,mark")?;
        for s in &self.samples {
            let mark = self.marks.iter().any(|m| m.t == s.t);
            writeln!(f, "{:.3},{},{},{}", s.t, s.rss, s.fds, u8::from(mark))?;
        }
        f.flush()
    }

    /// A text plot of `value` over time: `width` columns (each the highest value of its
    /// slice of time), `height` rows, labelled with the range.
    pub fn plot(&self, label: &str, value: impl Fn(&Sample) -> f64, unit: &str) -> String {
        const WIDTH: usize = 60;
        const HEIGHT: usize = 6;
        let t_end = self.end().t.max(1e-9);
        let mut cols = vec![f64::NAN; WIDTH];
        for s in &self.samples {
            let c = ((s.t / t_end) * (WIDTH - 1) as f64).round() as usize;
            let v = value(s);
            let c = c.min(WIDTH - 1);
            cols[c] = if cols[c].is_nan() { v } else { cols[c].max(v) };
        }
        // Fill columns no sample fell in with the one before.
        for c in 1..WIDTH {
            if cols[c].is_nan() {
                cols[c] = cols[c - 1];
            }
        }
        let lo = cols.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = cols.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let range = (hi - lo).max(1e-9);
        let mut out = String::new();
        for row in (0..HEIGHT).rev() {
            let axis = if row == HEIGHT - 1 {
                format!("{hi:>9.1} {unit:<4}")
            } else if row == 0 {
                format!("{lo:>9.1} {unit:<4}")
            } else if row == HEIGHT / 2 {
                format!("{label:>14}")
            } else {
                " ".repeat(14)
            };
            out.push_str(&axis);
            out.push_str(" |");
            for v in &cols {
                let level = ((v - lo) / range * (HEIGHT as f64 - 1.0)).round() as usize;
                out.push(match level.cmp(&row) {
                    std::cmp::Ordering::Equal => '*',
                    std::cmp::Ordering::Greater => ':',
                    std::cmp::Ordering::Less => ' ',
                });
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "{:>14} +{}\n{:>14}  0 s{:>w$.1} s\n",
            "",
            "-".repeat(WIDTH),
            "",
            t_end,
            w = WIDTH - 3
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(points: &[(f64, u64, u64)]) -> Trace {
        let samples: Vec<Sample> = points
            .iter()
            .map(|&(t, rss, fds)| Sample { t, rss, fds })
            .collect();
        Trace {
            active_end: samples.last().unwrap().t,
            samples,
            marks: Vec::new(),
        }
    }

    #[test]
    fn growth_fits_a_steady_leak_and_ignores_a_flat_line() {
        let leak: Vec<_> = (0..=100).map(|i| (i as f64, 1000 * i, 10 + i)).collect();
        let g = trace(&leak).growth().unwrap();
        // Over the second half (50 s): 50 000 bytes and 50 descriptors.
        assert!((g.rss - 50_000.0).abs() < 1.0, "{g:?}");
        assert!((g.fds - 50.0).abs() < 0.01, "{g:?}");
        let flat: Vec<_> = (0..=100).map(|i| (i as f64, 5000, 7)).collect();
        let g = trace(&flat).growth().unwrap();
        assert_eq!((g.rss, g.fds), (0.0, 0.0));
    }

    #[test]
    fn the_counters_read_this_process() {
        assert!(rss_bytes() > 0);
        let before = fd_count();
        let f = std::fs::File::open("/proc/self/statm").unwrap();
        assert_eq!(fd_count(), before + 1);
        drop(f);
        assert_eq!(fd_count(), before);
    }
}
