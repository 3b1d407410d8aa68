/* Sends COUNT messages on a PUSH connected to ENDPOINT and returns from main without
 * zmq_ctx_term: MODE "open" closes nothing, "closed" closes the socket only, "linger=MS"
 * sets ZMQ_LINGER and closes nothing, "cleanup" closes and terminates in a function
 * registered with atexit before the first context (so it runs after the library's own
 * exit hook), which must still succeed. What was sent must still arrive (or, past LINGER,
 * be reported on standard error). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

static void *ctx;
static void *push;

static void cleanup(void)
{
    if (zmq_close(push) != 0 || zmq_ctx_term(ctx) != 0) {
        fprintf(stderr, "cleanup failed: %s\n", zmq_strerror(zmq_errno()));
        _exit(3);
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: exit_without_close ENDPOINT COUNT MODE\n");
        return 2;
    }
    int count = atoi(argv[2]);
    const char *mode = argv[3];
    if (strcmp(mode, "cleanup") == 0)
        atexit(cleanup);
    ctx = zmq_ctx_new();
    push = zmq_socket(ctx, ZMQ_PUSH);
    if (strncmp(mode, "linger=", 7) == 0) {
        int linger = atoi(mode + 7);
        zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
    }
    if (zmq_connect(push, argv[1]) != 0) {
        fprintf(stderr, "connect: %s\n", zmq_strerror(zmq_errno()));
        return 1;
    }
    char buf[32];
    for (int i = 0; i < count; i++) {
        int n = snprintf(buf, sizeof buf, "message %d", i);
        if (zmq_send(push, buf, (size_t) n, 0) != n) {
            fprintf(stderr, "send: %s\n", zmq_strerror(zmq_errno()));
            return 1;
        }
    }
    if (strcmp(mode, "closed") == 0)
        zmq_close(push);
    printf("sent %d\n", count);
    return 0;
}
