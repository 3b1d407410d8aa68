/* czmq (Debian's libczmq, built for libzmq) on whichever libzmq.so.5 the loader finds:
 * zsock REQ/REP and PUB/SUB, a zactor (its pipe is an inproc PAIR), a zpoller, zmsg
 * multipart, zframe. Prints one line per check, then "all ok". */
#include <czmq.h>

static void echo_actor(zsock_t *pipe, void *args)
{
    (void) args;
    zsock_signal(pipe, 0);
    while (true) {
        zmsg_t *msg = zmsg_recv(pipe);
        if (!msg)
            break;
        char *command = zmsg_popstr(msg);
        if (streq(command, "$TERM")) {
            free(command);
            zmsg_destroy(&msg);
            break;
        }
        zmsg_pushstr(msg, command);
        free(command);
        zmsg_send(&msg, pipe);
    }
}

int main(void)
{
    int major, minor, patch;
    zmq_version(&major, &minor, &patch);
    printf("libzmq %d.%d.%d\n", major, minor, patch);

    zsock_t *rep = zsock_new_rep("tcp://127.0.0.1:*");
    assert(rep);
    const char *endpoint = zsock_endpoint(rep);
    zsock_t *req = zsock_new_req(endpoint);
    assert(req);
    zstr_send(req, "ping");
    char *got = zstr_recv(rep);
    assert(got && streq(got, "ping"));
    zstr_free(&got);
    zstr_send(rep, "pong");
    got = zstr_recv(req);
    assert(got && streq(got, "pong"));
    zstr_free(&got);
    printf("req/rep ok\n");

    zsock_t *pub = zsock_new_pub("tcp://127.0.0.1:*");
    zsock_t *sub = zsock_new_sub(zsock_endpoint(pub), "news");
    zpoller_t *poller = zpoller_new(sub, NULL);
    char *heard = NULL;
    for (int i = 0; i < 200 && !heard; i++) {
        zstr_send(pub, "weather rain");
        zstr_send(pub, "news today");
        if (zpoller_wait(poller, 20) == sub)
            heard = zstr_recv(sub);
    }
    assert(heard && streq(heard, "news today"));
    zstr_free(&heard);
    printf("pub/sub with a zpoller ok\n");

    zactor_t *actor = zactor_new(echo_actor, NULL);
    zmsg_t *msg = zmsg_new();
    zmsg_addstr(msg, "hello");
    zmsg_addmem(msg, "\0\1\2", 3);
    zmsg_send(&msg, actor);
    msg = zmsg_recv(actor);
    assert(msg && zmsg_size(msg) == 2);
    char *first = zmsg_popstr(msg);
    assert(streq(first, "hello"));
    free(first);
    zframe_t *frame = zmsg_pop(msg);
    assert(zframe_size(frame) == 3 && zframe_data(frame)[2] == 2);
    zframe_destroy(&frame);
    zmsg_destroy(&msg);
    zactor_destroy(&actor);
    printf("zactor over inproc ok\n");

    zpoller_destroy(&poller);
    zsock_destroy(&sub);
    zsock_destroy(&pub);
    zsock_destroy(&req);
    zsock_destroy(&rep);
    printf("all ok\n");
    return 0;
}
