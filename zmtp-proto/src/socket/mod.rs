//! The socket layer (`alloc`): one ZeroMQ socket = many peers behind one queue with a
//! routing rule, as an I/O-free state machine.

pub mod endpoint;
pub mod monitor;

pub use endpoint::{Endpoint, EndpointError};
pub use monitor::{MonitorEvent, MonitorEventKind};
