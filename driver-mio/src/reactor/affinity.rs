//! The I/O thread's CPU affinity (`ZMQ_THREAD_AFFINITY_CPU_ADD`/`_REMOVE` in libzmq):
//! the thread notes who it is when it starts, and the context pins it from any thread.

use std::collections::BTreeSet;
use std::io;

/// The I/O thread, as the kernel knows it, with the CPUs it was first allowed to run on.
#[derive(Debug)]
pub(crate) struct IoThread {
    #[cfg(target_os = "linux")]
    tid: rustix::thread::Pid,
    /// The thread's affinity when it started (what an empty set gives back).
    #[cfg(target_os = "linux")]
    original: Option<rustix::thread::CpuSet>,
}

impl IoThread {
    /// The calling thread (called on the I/O thread as it starts).
    pub(crate) fn current() -> IoThread {
        #[cfg(target_os = "linux")]
        return IoThread {
            tid: rustix::thread::gettid(),
            original: rustix::thread::sched_getaffinity(None).ok(),
        };
        #[cfg(not(target_os = "linux"))]
        return IoThread {};
    }

    /// Let the thread run on `cpus` only (CPU numbers from 0), or, with none, on the CPUs
    /// it was allowed when it started. Fails, changing nothing, when the kernel refuses
    /// (none of `cpus` is online: `InvalidInput`) or a number is past what a CPU set holds.
    #[cfg(target_os = "linux")]
    pub(crate) fn set_affinity(&self, cpus: &BTreeSet<usize>) -> io::Result<()> {
        use rustix::thread::{sched_setaffinity, CpuSet};
        let set = if cpus.is_empty() {
            match &self.original {
                Some(set) => *set,
                None => return Ok(()),
            }
        } else {
            let mut set = CpuSet::new();
            for &cpu in cpus {
                if cpu >= CpuSet::MAX_CPU {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("CPU {cpu} is past the {} a CPU set holds", CpuSet::MAX_CPU),
                    ));
                }
                set.set(cpu);
            }
            set
        };
        Ok(sched_setaffinity(Some(self.tid), &set)?)
    }

    /// CPU affinity is set on Linux only: `Unsupported` here.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn set_affinity(&self, _cpus: &BTreeSet<usize>) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "an I/O thread's CPU affinity is set on Linux only",
        ))
    }
}
