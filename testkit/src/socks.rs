//! A SOCKS5 proxy for tests (RFC 1928 CONNECT, RFC 1929 username and password), on
//! `127.0.0.1`, written from the RFCs so that a SOCKS client (ours or libzmq's) can be
//! checked against it: it records what each client asked for, names unresolved.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

/// What a client asked the proxy to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requested {
    /// An IPv4 address (`ATYP` 1).
    V4(Ipv4Addr, u16),
    /// A name, as sent (`ATYP` 3).
    Name(String, u16),
    /// An IPv6 address (`ATYP` 4).
    V6(Ipv6Addr, u16),
}

/// How the proxy is set up.
#[derive(Debug, Clone, Default)]
pub struct ProxyConfig {
    /// Require this username and password (method 2); `None`: no authentication (method 0).
    pub credentials: Option<(String, String)>,
    /// Where names and addresses are connected instead (a name not here is looked up with
    /// the system's resolver, an address not here is connected as it is).
    pub routes: HashMap<String, SocketAddr>,
}

/// A running proxy. Its threads end with the test process.
#[derive(Debug)]
pub struct SocksProxy {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Requested>>>,
}

impl SocksProxy {
    /// A proxy listening on an ephemeral port of `127.0.0.1`.
    pub fn start(config: ProxyConfig) -> io::Result<SocksProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (seen, config) = (requests.clone(), Arc::new(config));
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (seen, config) = (seen.clone(), config.clone());
                thread::spawn(move || {
                    // A client that breaks the exchange is dropped.
                    let _ = serve(client, &config, &seen);
                });
            }
        });
        Ok(SocksProxy { addr, requests })
    }

    /// `host:port` of the proxy, as `ZMQ_SOCKS_PROXY` takes it.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// What the clients asked for so far, in order.
    pub fn requests(&self) -> Vec<Requested> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

fn read_n(s: &mut TcpStream, n: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; n];
    s.read_exact(&mut buf)?;
    Ok(buf)
}

fn refused(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// One client: the exchange, then bytes relayed both ways until either side closes.
fn serve(
    mut client: TcpStream,
    config: &ProxyConfig,
    seen: &Mutex<Vec<Requested>>,
) -> io::Result<()> {
    let head = read_n(&mut client, 2)?;
    if head[0] != 5 {
        return Err(refused("not SOCKS5"));
    }
    let methods = read_n(&mut client, usize::from(head[1]))?;
    let want = if config.credentials.is_some() { 2 } else { 0 };
    if !methods.contains(&want) {
        client.write_all(&[5, 0xff])?;
        return Err(refused("no acceptable method"));
    }
    client.write_all(&[5, want])?;
    if let Some((user, pass)) = &config.credentials {
        let v = read_n(&mut client, 2)?;
        let got_user = read_n(&mut client, usize::from(v[1]))?;
        let plen = read_n(&mut client, 1)?;
        let got_pass = read_n(&mut client, usize::from(plen[0]))?;
        let ok = v[0] == 1 && got_user == user.as_bytes() && got_pass == pass.as_bytes();
        client.write_all(&[1, if ok { 0 } else { 1 }])?;
        if !ok {
            return Err(refused("wrong credentials"));
        }
    }
    let req = read_n(&mut client, 4)?;
    if req[..3] != [5, 1, 0] {
        return Err(refused("not a CONNECT"));
    }
    let (requested, key) = match req[3] {
        1 => {
            let a = read_n(&mut client, 6)?;
            let ip = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
            let port = u16::from_be_bytes([a[4], a[5]]);
            (Requested::V4(ip, port), ip.to_string())
        }
        3 => {
            let len = read_n(&mut client, 1)?;
            let name = read_n(&mut client, usize::from(len[0]))?;
            let p = read_n(&mut client, 2)?;
            let name = String::from_utf8_lossy(&name).into_owned();
            let port = u16::from_be_bytes([p[0], p[1]]);
            (Requested::Name(name.clone(), port), name)
        }
        4 => {
            let a = read_n(&mut client, 18)?;
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&a[..16]);
            let ip = Ipv6Addr::from(octets);
            let port = u16::from_be_bytes([a[16], a[17]]);
            (Requested::V6(ip, port), ip.to_string())
        }
        _ => {
            client.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0])?;
            return Err(refused("address type"));
        }
    };
    if let Ok(mut r) = seen.lock() {
        r.push(requested.clone());
    }
    let port = match requested {
        Requested::V4(_, p) | Requested::Name(_, p) | Requested::V6(_, p) => p,
    };
    let target = match config.routes.get(&key) {
        Some(a) => Ok(*a),
        None => std::net::ToSocketAddrs::to_socket_addrs(&(key.as_str(), port))
            .map_err(|_| refused("unknown host"))
            .and_then(|mut a| a.next().ok_or_else(|| refused("unknown host"))),
    };
    let remote = match target.and_then(TcpStream::connect) {
        Ok(r) => r,
        Err(e) => {
            // 5: connection refused; 4: host unreachable.
            let code = if e.kind() == io::ErrorKind::ConnectionRefused {
                5
            } else {
                4
            };
            client.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0])?;
            return Err(e);
        }
    };
    let bound = match remote.local_addr()? {
        SocketAddr::V4(a) => {
            let mut r = vec![5, 0, 0, 1];
            r.extend_from_slice(&a.ip().octets());
            r.extend_from_slice(&a.port().to_be_bytes());
            r
        }
        SocketAddr::V6(a) => {
            let mut r = vec![5, 0, 0, 4];
            r.extend_from_slice(&a.ip().octets());
            r.extend_from_slice(&a.port().to_be_bytes());
            r
        }
    };
    client.write_all(&bound)?;
    let (mut c2, mut r2) = (client.try_clone()?, remote.try_clone()?);
    let (mut c1, mut r1) = (client, remote);
    let up = thread::spawn(move || {
        let _ = io::copy(&mut c1, &mut r1);
        let _ = r1.shutdown(Shutdown::Write);
    });
    let _ = io::copy(&mut r2, &mut c2);
    let _ = c2.shutdown(Shutdown::Write);
    let _ = up.join();
    Ok(())
}
