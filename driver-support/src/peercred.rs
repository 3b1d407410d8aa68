//! The credentials of the peer of an accepted `ipc://` stream, for the core's
//! `ZMQ_IPC_FILTER_*` check ([`zmtp_proto::socket::IpcAcceptFilters`]): the process,
//! user and group the kernel reports (`SO_PEERCRED`), and the groups of the user database
//! that list the user as a member, as libzmq looks them up.
// The user and group databases (NSS) are reached through libc only.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::BorrowedFd;

use zmtp_proto::socket::PeerCredentials;

/// The credentials of the peer of the Unix-domain stream `stream` (`SO_PEERCRED`), with
/// the supplementary groups of its user (none if the user is not in the user database).
/// `Unsupported` on systems other than Linux.
#[cfg(target_os = "linux")]
pub fn peer_credentials(stream: BorrowedFd<'_>) -> io::Result<PeerCredentials> {
    let cred = rustix::net::sockopt::socket_peercred(stream)?;
    let (uid, gid) = (cred.uid.as_raw(), cred.gid.as_raw());
    let groups = user_name(uid)
        .map(|name| user_groups(&name, gid))
        .unwrap_or_default();
    Ok(PeerCredentials {
        pid: Some(cred.pid.as_raw_nonzero().get()),
        uid,
        gid,
        groups,
    })
}

/// Peer credentials are read on Linux only: `Unsupported` here (a filtered `ipc://`
/// listener then refuses every peer).
#[cfg(not(target_os = "linux"))]
pub fn peer_credentials(_stream: BorrowedFd<'_>) -> io::Result<PeerCredentials> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "the credentials of an ipc:// peer are read on Linux only",
    ))
}

/// The name of user `uid` in the user database, if it has one.
#[cfg(target_os = "linux")]
fn user_name(uid: u32) -> Option<std::ffi::CString> {
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: an all-zero `passwd` is a valid value (null pointers, zero ids).
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is to a live local, `buf` has `buf.len()` writable bytes,
        // and the strings `pwd` points to on success live in `buf`.
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut pwd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success `pw_name` is a NUL-terminated string inside `buf`, alive here.
        return Some(unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) }.to_owned());
    }
}

/// The groups that list user `name` as a member, besides `gid` (`getgrouplist`).
#[cfg(target_os = "linux")]
fn user_groups(name: &std::ffi::CStr, gid: u32) -> Vec<u32> {
    let mut groups: Vec<libc::gid_t> = vec![0; 64];
    loop {
        let mut n = libc::c_int::try_from(groups.len()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `name` is NUL-terminated; `groups` has room for `n` ids, and `n` is a
        // live local the call updates to the number of groups.
        let rc = unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        let n = usize::try_from(n).unwrap_or(0);
        if rc >= 0 {
            groups.truncate(n.min(groups.len()));
            groups.retain(|&g| g != gid);
            return groups;
        }
        if n <= groups.len() || n > 1 << 16 {
            return Vec::new();
        }
        groups.resize(n, 0);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn the_peer_of_a_socket_pair_is_this_process() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let cred = peer_credentials(a.as_fd()).unwrap();
        // SAFETY: getuid and getgid cannot fail and touch no memory of ours.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        assert_eq!(cred.pid, Some(std::process::id() as i32));
        assert_eq!((cred.uid, cred.gid), (uid, gid));
        assert!(!cred.groups.contains(&gid), "the own group is not repeated");
    }

    #[test]
    fn a_user_s_groups_come_from_the_group_database() {
        // root (uid 0) is in every user database; its name is found.
        assert_eq!(user_name(0).as_deref(), Some(c"root"));
        assert_eq!(user_name(u32::MAX - 7), None, "no such user");
        assert!(
            !user_groups(c"root", 0).contains(&0),
            "never the group given"
        );
        // A group of /etc/group that lists a member is among that member's groups.
        let etc = std::fs::read_to_string("/etc/group").unwrap_or_default();
        let listed = etc.lines().find_map(|line| {
            let f: Vec<&str> = line.split(':').collect();
            let member = f.get(3)?.split(',').next().filter(|m| !m.is_empty())?;
            Some((
                f[2].parse::<u32>().ok()?,
                std::ffi::CString::new(member).ok()?,
            ))
        });
        if let Some((group, member)) = listed {
            assert!(
                user_groups(&member, u32::MAX - 1).contains(&group),
                "{member:?} is listed in group {group}"
            );
        }
    }
}
