/* A request-reply client after the ZeroMQ guide's hwclient: sends COUNT requests
 * ["Hello", n] and checks each reply is ["World", n]. With "poll" as third argument it
 * waits for each reply in zmq_poll, together with a pipe that becomes readable first.
 * Usage: hwclient ENDPOINT COUNT [poll] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

static int fail (const char *what)
{
    fprintf (stderr, "hwclient: %s: %s\n", what, zmq_strerror (zmq_errno ()));
    return 1;
}

int main (int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int count = atoi (argv[2]);
    int use_poll = argc > 3 && strcmp (argv[3], "poll") == 0;
    void *ctx = zmq_ctx_new ();
    void *req = zmq_socket (ctx, ZMQ_REQ);
    int timeout = 10000, linger = 0;
    zmq_setsockopt (req, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt (req, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect (req, argv[1]) != 0)
        return fail ("connect");
    int pipe_fds[2];
    if (use_poll && pipe (pipe_fds) != 0)
        return 1;
    for (int i = 0; i < count; i++) {
        char number[16];
        int len = snprintf (number, sizeof number, "%d", i);
        if (zmq_send (req, "Hello", 5, ZMQ_SNDMORE) != 5)
            return fail ("send");
        if (zmq_send (req, number, (size_t) len, 0) != len)
            return fail ("send number");
        if (use_poll) {
            /* A pipe with a byte in it is ready at once; the socket when the reply is in. */
            if (write (pipe_fds[1], "x", 1) != 1)
                return 1;
            int seen_pipe = 0, seen_reply = 0;
            while (!seen_reply) {
                zmq_pollitem_t items[] = {{req, 0, ZMQ_POLLIN, 0},
                                          {NULL, pipe_fds[0], ZMQ_POLLIN, 0}};
                int rc = zmq_poll (items, 2, 10000);
                if (rc <= 0)
                    return fail ("poll");
                if (items[1].revents & ZMQ_POLLIN) {
                    char byte;
                    if (read (pipe_fds[0], &byte, 1) != 1)
                        return 1;
                    seen_pipe = 1;
                }
                if (items[0].revents & ZMQ_POLLIN)
                    seen_reply = 1;
            }
            if (!seen_pipe) {
                fprintf (stderr, "hwclient: the pipe was never reported\n");
                return 1;
            }
            int events = 0;
            size_t size = sizeof events;
            zmq_getsockopt (req, ZMQ_EVENTS, &events, &size);
            if (!(events & ZMQ_POLLIN)) {
                fprintf (stderr, "hwclient: ZMQ_EVENTS has no POLLIN\n");
                return 1;
            }
        }
        zmq_msg_t part;
        zmq_msg_init (&part);
        if (zmq_msg_recv (&part, req, 0) != 5 || memcmp (zmq_msg_data (&part), "World", 5) != 0
            || !zmq_msg_more (&part))
            return fail ("reply");
        zmq_msg_close (&part);
        char echoed[16] = {0};
        int n = zmq_recv (req, echoed, sizeof echoed - 1, 0);
        if (n != len || strcmp (echoed, number) != 0) {
            fprintf (stderr, "hwclient: reply %d is '%s'\n", i, echoed);
            return 1;
        }
        int more = 1;
        size_t more_size = sizeof more;
        zmq_getsockopt (req, ZMQ_RCVMORE, &more, &more_size);
        if (more)
            return fail ("a third frame");
    }
    int major, minor, patch;
    zmq_version (&major, &minor, &patch);
    printf ("client done %d.%d.%d\n", major, minor, patch);
    zmq_close (req);
    zmq_ctx_term (ctx);
    return 0;
}
