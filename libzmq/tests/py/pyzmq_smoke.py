"""pyzmq, a binding written for libzmq, on whichever libzmq the process loaded: the test
preloads ours (LD_PRELOAD) in place of the one pyzmq's wheel bundles. Prints the threads
that a context starts (ours is named zmtp-mio, libzmq's ZMQbg/...), then one line per
check; exits non-zero on the first failure."""
import asyncio
import os
import sys

import zmq
import zmq.asyncio
from zmq.utils.monitor import recv_monitor_message

TIMEOUT_MS = 5000


def threads():
    names = set()
    for t in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{t}/comm") as f:
            names.add(f.read().strip())
    return sorted(names)


def pair(ctx, a, b):
    x = ctx.socket(a)
    port = x.bind_to_random_port("tcp://127.0.0.1")
    y = ctx.socket(b)
    y.connect(f"tcp://127.0.0.1:{port}")
    for s in (x, y):
        s.rcvtimeo = TIMEOUT_MS
        s.sndtimeo = TIMEOUT_MS
        s.linger = 0
    return x, y


def sync_checks(ctx):
    # REQ/REP, with socket options read back.
    rep, req = pair(ctx, zmq.REP, zmq.REQ)
    assert rep.getsockopt(zmq.TYPE) == zmq.REP
    assert rep.last_endpoint.startswith(b"tcp://127.0.0.1:")
    req.send(b"ping")
    assert rep.recv() == b"ping"
    rep.send(b"pong")
    assert req.recv() == b"pong"
    print("req/rep ok")

    # Multipart through ROUTER/DEALER, with RCVMORE.
    router, dealer = pair(ctx, zmq.ROUTER, zmq.DEALER)
    dealer.send_multipart([b"a", b"b", b"c"])
    frames = router.recv_multipart()
    assert frames[1:] == [b"a", b"b", b"c"], frames
    router.send_multipart([frames[0], b"back"])
    assert dealer.recv() == b"back" and not dealer.rcvmore
    print("router/dealer multipart ok")

    # PUB/SUB with a topic filter.
    pub, sub = pair(ctx, zmq.PUB, zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"yes")
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    got = None
    for _ in range(200):
        pub.send(b"no thanks")
        pub.send(b"yes please")
        if dict(poller.poll(20)).get(sub):
            got = sub.recv()
            break
    assert got == b"yes please", got
    print("pub/sub with a filter and a poller ok")

    # Zero-copy frames: zmq_msg_init_data with a free function, and a received frame.
    push, pull = pair(ctx, zmq.PULL, zmq.PUSH)
    big = b"z" * 100_000
    tracker = pull.send(big, copy=False, track=True)
    frame = push.recv(copy=False)
    assert frame.bytes == big
    tracker.wait(TIMEOUT_MS / 1000)
    print("zero-copy frames ok")

    # A monitor: the events of a connection, in libzmq's format.
    mon_target = ctx.socket(zmq.REP)
    mon = mon_target.get_monitor_socket()
    port = mon_target.bind_to_random_port("tcp://127.0.0.1")
    peer = ctx.socket(zmq.REQ)
    peer.linger = 0
    peer.connect(f"tcp://127.0.0.1:{port}")
    seen = set()
    mon.rcvtimeo = TIMEOUT_MS
    while zmq.EVENT_ACCEPTED not in seen:
        seen.add(recv_monitor_message(mon)["event"])
    print("monitor ok")
    mon_target.disable_monitor()
    for s in (rep, req, router, dealer, pub, sub, push, pull, mon, mon_target, peer):
        s.close(linger=0)


async def async_checks():
    ctx = zmq.asyncio.Context()
    rep, req = pair(ctx, zmq.REP, zmq.REQ)

    async def server():
        for _ in range(500):
            await rep.send(await rep.recv())

    task = asyncio.create_task(server())
    for i in range(500):
        await req.send(b"%d" % i)
        assert await req.recv() == b"%d" % i
    await task
    pull, push = pair(ctx, zmq.PULL, zmq.PUSH)
    for _ in range(20_000):
        await push.send(b"x" * 64)
    for _ in range(20_000):
        await pull.recv()
    print("asyncio ok")
    ctx.destroy(linger=0)


def main():
    ctx = zmq.Context()
    probe = ctx.socket(zmq.PAIR)
    print("threads:", " ".join(threads()))
    probe.close()
    print("version:", zmq.zmq_version())
    sync_checks(ctx)
    ctx.term()
    asyncio.run(async_checks())
    print("all ok")


if __name__ == "__main__":
    main()
