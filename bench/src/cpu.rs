//! The CPU time a peer process used, as its parent reaps it (`wait4(2)`).

use std::process::Child;
use std::time::Duration;

/// Wait for `child` to end: whether it exited with status 0, and the CPU time (user and
/// system) it and its threads used over its whole life.
pub fn wait_with_cpu(child: &mut Child) -> Result<(bool, Duration), String> {
    let pid = libc::pid_t::try_from(child.id()).map_err(|e| e.to_string())?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain data for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not reaped yet (`Child::wait` was not called);
        // `status` and `usage` are valid, writable and live for the call.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("waiting for a peer: {e}"));
        }
    }
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    Ok((ok, time(usage.ru_utime) + time(usage.ru_stime)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_busy_child_reports_its_cpu_and_its_status() {
        // About 0.2 s of CPU in a shell loop, then exit 3.
        let mut child = Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; exit 3",
            ])
            .spawn()
            .unwrap();
        let (ok, cpu) = wait_with_cpu(&mut child).unwrap();
        assert!(!ok, "exit 3 is a failure");
        assert!(cpu > Duration::from_millis(10), "{cpu:?}");
        let mut child = Command::new("true").spawn().unwrap();
        let (ok, cpu) = wait_with_cpu(&mut child).unwrap();
        assert!(ok);
        assert!(cpu < Duration::from_secs(1), "{cpu:?}");
    }
}
