//! `ZMQ_IPC_FILTER_PID`/`_UID`/`_GID`: the peers a listener accepts on its `ipc://`
//! endpoints, judged from the credentials the driver reads, as libzmq's filter judges them.

use std::cell::Cell;

use zmtp_proto::socket::{
    EndpointId, IpcAcceptFilters, MonitorEventKind, Options, PeerCredentials, Socket,
};
use zmtp_proto::{Instant, SocketType};

fn peer(pid: i32, uid: u32, gid: u32, groups: &[u32]) -> PeerCredentials {
    PeerCredentials {
        pid: Some(pid),
        uid,
        gid,
        groups: groups.to_vec(),
    }
}

#[test]
fn a_peer_passes_by_pid_uid_gid_or_a_group_of_its_user() {
    let alice = peer(400, 1000, 100, &[27, 44]);
    let mut f = IpcAcceptFilters::default();
    assert!(f.is_empty() && f.accepts(&alice), "no filter: everyone");

    f.uids.insert(1001);
    assert!(!f.accepts(&alice), "another user only");
    f.pids.insert(400);
    assert!(f.accepts(&alice), "her process");
    assert!(
        !f.accepts(&PeerCredentials {
            pid: None,
            ..alice.clone()
        }),
        "a pid the system did not report never matches"
    );

    let mut g = IpcAcceptFilters::default();
    g.gids.insert(100);
    assert!(g.accepts(&alice), "the peer's own group");
    g.gids = [44].into();
    assert!(g.accepts(&alice), "a supplementary group of her user");
    g.gids = [45].into();
    assert!(!g.accepts(&alice), "a group she is not in");
}

/// A PAIR bound to `endpoint` with `filters`, watching ACCEPTED and ACCEPT_FAILED.
fn listener(endpoint: &str, filters: IpcAcceptFilters) -> (Socket, EndpointId) {
    let opts = Options::default().with_ipc_accept_filters(filters);
    let mut s = Socket::new(SocketType::Pair, opts, 1).unwrap();
    s.set_monitor(MonitorEventKind::Accepted.value() | MonitorEventKind::AcceptFailed.value());
    let ep = s.bind(endpoint).unwrap();
    s.handle_listening(ep, endpoint);
    (s, ep)
}

#[test]
fn an_ipc_peer_outside_the_filters_is_refused_with_accept_failed() {
    let mut filters = IpcAcceptFilters::default();
    filters.uids.insert(1000);
    let (mut s, ep) = listener("ipc:///tmp/filtered.sock", filters);
    let t = Instant::from_millis(0);

    assert!(s
        .handle_accepted_with_credentials(ep, "", t, || Some(peer(7, 1001, 1001, &[])))
        .is_none());
    let ev = s.poll_monitor().expect("an event");
    assert_eq!(ev.kind, MonitorEventKind::AcceptFailed);
    assert_eq!(ev.endpoint, "ipc:///tmp/filtered.sock");

    assert!(
        s.handle_accepted_with_credentials(ep, "", t, || None)
            .is_none(),
        "unknown credentials are refused while filtering"
    );
    assert_eq!(
        s.poll_monitor().unwrap().kind,
        MonitorEventKind::AcceptFailed
    );
    assert!(
        s.handle_accepted(ep, "", t).is_none(),
        "a driver that reads no credentials is refused too"
    );
    assert_eq!(
        s.poll_monitor().unwrap().kind,
        MonitorEventKind::AcceptFailed
    );

    assert!(s
        .handle_accepted_with_credentials(ep, "", t, || Some(peer(8, 1000, 1000, &[])))
        .is_some());
    assert_eq!(s.poll_monitor().unwrap().kind, MonitorEventKind::Accepted);
}

#[test]
fn credentials_are_read_only_when_an_ipc_endpoint_filters() {
    let asked = Cell::new(0);
    let creds = || {
        asked.set(asked.get() + 1);
        Some(peer(1, 2, 3, &[]))
    };
    let t = Instant::from_millis(0);

    // No filter: accepted without asking.
    let (mut s, ep) = listener("ipc:///tmp/open.sock", IpcAcceptFilters::default());
    assert!(s
        .handle_accepted_with_credentials(ep, "", t, creds)
        .is_some());
    assert_eq!(asked.get(), 0);

    // IPC filters do not apply to TCP endpoints.
    let mut filters = IpcAcceptFilters::default();
    filters.pids.insert(99);
    let (mut s, ep) = listener("tcp://127.0.0.1:5555", filters.clone());
    assert!(s
        .handle_accepted_with_credentials(ep, "127.0.0.1:4000", t, creds)
        .is_some());
    assert_eq!(asked.get(), 0);

    let (mut s, ep) = listener("ipc:///tmp/pid.sock", filters);
    assert!(s
        .handle_accepted_with_credentials(ep, "", t, creds)
        .is_none());
    assert_eq!(asked.get(), 1);
}
