/* A request-reply server after the ZeroMQ guide's hwserver: a REP socket that answers
 * each two-frame request ["Hello", n] with ["World", n], then says which library
 * version it ran on. Usage: hwserver ENDPOINT COUNT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static void release (void *data, void *hint)
{
    (void) hint;
    free (data);
}

static int fail (const char *what)
{
    fprintf (stderr, "hwserver: %s: %s\n", what, zmq_strerror (zmq_errno ()));
    return 1;
}

int main (int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int count = atoi (argv[2]);
    void *ctx = zmq_ctx_new ();
    void *rep = zmq_socket (ctx, ZMQ_REP);
    int timeout = 10000;
    if (zmq_setsockopt (rep, ZMQ_RCVTIMEO, &timeout, sizeof timeout) != 0)
        return fail ("setsockopt");
    if (zmq_bind (rep, argv[1]) != 0)
        return fail ("bind");
    for (int i = 0; i < count; i++) {
        char word[16] = {0};
        int n = zmq_recv (rep, word, sizeof word - 1, 0);
        if (n < 0)
            return fail ("recv");
        int more = 0;
        size_t more_size = sizeof more;
        zmq_getsockopt (rep, ZMQ_RCVMORE, &more, &more_size);
        if (strcmp (word, "Hello") != 0 || !more) {
            fprintf (stderr, "hwserver: unexpected request '%s' (more %d)\n", word, more);
            return 1;
        }
        zmq_msg_t number;
        zmq_msg_init (&number);
        if (zmq_msg_recv (&number, rep, 0) < 0)
            return fail ("msg_recv");
        if (zmq_msg_more (&number))
            return fail ("too many frames");
        /* The reply's first frame is the application's memory, freed by the library. */
        char *world = malloc (5);
        memcpy (world, "World", 5);
        zmq_msg_t reply;
        zmq_msg_init_data (&reply, world, 5, release, NULL);
        if (zmq_msg_send (&reply, rep, ZMQ_SNDMORE) != 5)
            return fail ("send");
        zmq_msg_close (&reply);
        if (zmq_msg_send (&number, rep, 0) < 0)
            return fail ("send number");
        zmq_msg_close (&number);
    }
    int major, minor, patch;
    zmq_version (&major, &minor, &patch);
    printf ("server done %d.%d.%d\n", major, minor, patch);
    zmq_close (rep);
    zmq_ctx_term (ctx);
    return 0;
}
