//! Setting a ring up, and saying clearly why it cannot be.

use std::fmt;
use std::io;

use io_uring::{opcode, IoUring, Probe};

/// Why io_uring cannot be used here.
#[derive(Debug)]
#[non_exhaustive]
pub enum Unavailable {
    /// The kernel has no io_uring (`ENOSYS`): older than 5.1, or built without it.
    NotInKernel,
    /// io_uring is there but refused to this process (`EPERM`): the sysctl
    /// `kernel.io_uring_disabled` is set, or a seccomp filter (as container runtimes
    /// install by default) forbids it.
    Refused,
    /// The kernel lacks an operation the ring backend needs (a kernel before 6.0).
    MissingOperation(&'static str),
    /// Setting the ring up failed otherwise (memory limits, for example).
    Setup(io::Error),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::NotInKernel => f.write_str("io_uring unavailable: the kernel has none"),
            Unavailable::Refused => f.write_str(
                "io_uring unavailable: refused to this process (sysctl \
                 kernel.io_uring_disabled, or a seccomp filter)",
            ),
            Unavailable::MissingOperation(op) => {
                write!(
                    f,
                    "io_uring unavailable: the kernel lacks {op} (6.0 or later needed)"
                )
            }
            Unavailable::Setup(e) => write!(f, "io_uring unavailable: setup failed: {e}"),
        }
    }
}

impl std::error::Error for Unavailable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Unavailable::Setup(e) => Some(e),
            _ => None,
        }
    }
}

impl From<Unavailable> for io::Error {
    fn from(e: Unavailable) -> io::Error {
        let kind = match e {
            Unavailable::Refused => io::ErrorKind::PermissionDenied,
            Unavailable::Setup(ref e) => e.kind(),
            _ => io::ErrorKind::Unsupported,
        };
        io::Error::new(kind, e)
    }
}

/// Operations the ring backend submits, by the name given in [`Unavailable`].
const NEEDED: [(u8, &str); 6] = [
    (opcode::AcceptMulti::CODE, "accept"),
    (opcode::RecvMulti::CODE, "recv"),
    (opcode::Writev::CODE, "writev"),
    (opcode::Timeout::CODE, "timeout"),
    (opcode::Read::CODE, "read"),
    (opcode::AsyncCancel::CODE, "async cancel"),
];

/// A ring of `entries` submission entries whose needed operations are there, and what
/// the kernel has, or why there can be none.
pub(crate) fn setup(entries: u32) -> Result<(IoUring, Probe), Unavailable> {
    let ring = IoUring::builder()
        // Completions beyond the queue's size wait in the kernel rather than get lost.
        .setup_cqsize(entries.saturating_mul(4))
        .build(entries)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if code == rustix::io::Errno::NOSYS.raw_os_error() => {
                Unavailable::NotInKernel
            }
            Some(code) if code == rustix::io::Errno::PERM.raw_os_error() => Unavailable::Refused,
            _ => Unavailable::Setup(e),
        })?;
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(Unavailable::Setup)?;
    if let Some((_, name)) = NEEDED.iter().find(|(op, _)| !probe.is_supported(*op)) {
        return Err(Unavailable::MissingOperation(name));
    }
    Ok((ring, probe))
}

/// An io_uring instance whose needed operations were checked when it was made.
pub struct Ring {
    pub(crate) ring: IoUring,
    send_zc: bool,
    /// Accepts and writes in flight ([`Ring::reap`]).
    pub(crate) ops: crate::ops::Ops,
}

impl Ring {
    /// A ring of `entries` submission entries (rounded up to a power of two by the
    /// kernel), or why there can be none.
    pub fn new(entries: u32) -> Result<Ring, Unavailable> {
        let (ring, probe) = setup(entries)?;
        Ok(Ring {
            send_zc: probe.is_supported(opcode::SendMsgZc::CODE),
            ring,
            ops: Default::default(),
        })
    }

    /// Whether io_uring can be used here: `Ok` or the reason it cannot.
    pub fn probe() -> Result<(), Unavailable> {
        Ring::new(2).map(drop)
    }

    /// Whether the kernel can send without copying (`IORING_OP_SENDMSG_ZC`, 6.1), as
    /// [`send_zc`](Self::send_zc) does.
    pub fn has_send_zc(&self) -> bool {
        self.send_zc
    }

    /// The ring itself, to submit to and reap from.
    pub fn uring(&mut self) -> &mut IoUring {
        &mut self.ring
    }

    /// The ring, shared: registration and submission calls.
    pub fn uring_ref(&self) -> &IoUring {
        &self.ring
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_has_a_ring_with_every_needed_operation() {
        let ring = Ring::new(8).expect("io_uring on the test machine");
        assert!(ring.uring_ref().params().sq_entries() >= 8);
        Ring::probe().expect("probe");
    }

    #[test]
    fn reasons_read_as_such() {
        let e: io::Error = Unavailable::Refused.into();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("io_uring_disabled"));
        let e: io::Error = Unavailable::MissingOperation("recv").into();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert!(e.to_string().contains("lacks recv"));
    }
}
