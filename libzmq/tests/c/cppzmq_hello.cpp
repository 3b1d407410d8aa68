// cppzmq, a binding written for libzmq (header-only C++), over our header and library:
// a request and its reply over inproc, then the library version.
#include <zmq.hpp>
#include <iostream>
int main() {
    zmq::context_t ctx;
    zmq::socket_t rep(ctx, zmq::socket_type::rep), req(ctx, zmq::socket_type::req);
    rep.bind("inproc://hw");
    req.connect("inproc://hw");
    req.send(zmq::str_buffer("Hello"), zmq::send_flags::none);
    zmq::message_t m;
    (void) rep.recv(m, zmq::recv_flags::none);
    rep.send(zmq::str_buffer("World"), zmq::send_flags::none);
    (void) req.recv(m, zmq::recv_flags::none);
    int major, minor, patch; zmq_version(&major, &minor, &patch);
    std::cout << m.to_string() << " from " << major << "." << minor << "." << patch << std::endl;
}
