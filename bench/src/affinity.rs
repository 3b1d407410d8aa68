//! Pinning to one CPU with `sched_setaffinity(2)`, through a one-function binding.

use std::ffi::c_int;
use std::io;

/// glibc's `cpu_set_t`: a bit mask of 1024 CPUs.
#[repr(C)]
struct CpuSet {
    bits: [u64; 16],
}

unsafe extern "C" {
    /// `int sched_setaffinity(pid_t pid, size_t cpusetsize, const cpu_set_t *mask)`.
    fn sched_setaffinity(pid: c_int, cpusetsize: usize, mask: *const CpuSet) -> c_int;
}

/// Pin the calling thread, and so every thread and process it starts afterwards, to `cpu`.
pub fn pin_to(cpu: usize) -> io::Result<()> {
    let mut set = CpuSet { bits: [0; 16] };
    if cpu >= set.bits.len() * 64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} out of range"),
        ));
    }
    set.bits[cpu / 64] |= 1 << (cpu % 64);
    // SAFETY: pid 0 is the calling thread; `set` is a valid, initialised `cpu_set_t` whose
    // exact size is passed, and the kernel only reads it during the call.
    let rc = unsafe { sched_setaffinity(0, size_of::<CpuSet>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
