/* The platform header that libzmq 4.3.5's tests include ("../src/platform.hpp"), for
 * building them against any library with libzmq's ABI on Linux. libzmq's own build
 * generates this file from what it detects; here it states the facts of a Linux host
 * that the tests read (and that the three libzmq sources test_security_curve compiles in
 * need). scripts/libzmq-suite.sh puts, in front of it, the capability macros
 * (ZMQ_HAVE_IPC, ZMQ_HAVE_CURVE, ZMQ_HAVE_TIPC, ...) that the library under test reports
 * through zmq_has(), so that test_capabilities and the transport tests check the library
 * against its own claims.
 */
#ifndef __ZMQ_PLATFORM_HPP_INCLUDED__
#define __ZMQ_PLATFORM_HPP_INCLUDED__

#if !defined __linux__
#error "this platform.hpp describes Linux only"
#endif
#define ZMQ_HAVE_LINUX

/* The system: what glibc and the Linux kernel provide. */
#define HAVE_FORK
#define HAVE_MKDTEMP
#define HAVE_CLOCK_GETTIME
#define HAVE_POSIX_MEMALIGN 1
#define HAVE_STRNLEN
#define HAVE_ACCEPT4
#define HAVE_IF_NAMETOINDEX
#define ZMQ_HAVE_UIO
#define ZMQ_HAVE_PPOLL
#define ZMQ_HAVE_EVENTFD
#define ZMQ_HAVE_EVENTFD_CLOEXEC
#define ZMQ_HAVE_IFADDRS
#define ZMQ_HAVE_SO_PEERCRED
#define ZMQ_HAVE_SOCK_CLOEXEC
#define ZMQ_HAVE_SO_KEEPALIVE
#define ZMQ_HAVE_TCP_KEEPCNT
#define ZMQ_HAVE_TCP_KEEPIDLE
#define ZMQ_HAVE_TCP_KEEPINTVL
#define ZMQ_HAVE_STRUCT_SOCKADDR_UN
#define ZMQ_HAVE_NOEXCEPT
#define ZMQ_USE_CV_IMPL_STL11
#define ZMQ_CACHELINE_SIZE 64

/* Only for the libzmq sources compiled into test_security_curve (its CURVE client): the
 * poller that libzmq's own build picks on Linux. The tests read none of these. */
#define ZMQ_IOTHREAD_POLLER_USE_EPOLL
#define ZMQ_POLL_BASED_ON_POLL
/* Their zmq_draft.h names sigset_t, which a zmq.h older than 4.3.5's does not bring. */
#include <signal.h>

#endif
