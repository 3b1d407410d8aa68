/* Sends COUNT messages on a PUSH connected to ENDPOINT and returns from main without
 * zmq_ctx_term: MODE "open" closes nothing, "closed" closes the socket only, "linger=MS"
 * sets ZMQ_LINGER and closes nothing. What was sent must still arrive (or, past LINGER,
 * be reported on standard error). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: exit_without_close ENDPOINT COUNT MODE\n");
        return 2;
    }
    int count = atoi(argv[2]);
    const char *mode = argv[3];
    void *ctx = zmq_ctx_new();
    void *push = zmq_socket(ctx, ZMQ_PUSH);
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
