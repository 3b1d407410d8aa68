//! The load-balancing broker: clients' requests go to whichever worker is free.
//!
//! Run with `cargo run -p zmtp-tokio --example tokio_lbbroker`.
//!
//! Clients (REQ) connect to the broker's frontend ROUTER, workers (REQ too) to its
//! backend ROUTER. A worker starts by sending "READY", then each reply it sends says
//! that it is free again, so the broker keeps a queue of free workers, takes a request
//! from the frontend only while that queue is not empty, and hands it to the worker that
//! has waited longest.
//!
//! Envelopes: a ROUTER puts the sender's routing id in front of each message it
//! receives and routes each message it sends by its first frame; a REQ adds an empty
//! delimiter frame before the body and removes it from the reply. So the broker sees
//! `[client, "", request]` on the frontend and `[worker, "", "READY"]` or
//! `[worker, "", client, "", reply]` on the backend.

use std::collections::VecDeque;
use std::error::Error;

use zmtp_tokio::{Bytes, Options, Socket, SocketType};

const CLIENTS: usize = 10;
const WORKERS: usize = 3;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    let frontend = Socket::new(SocketType::Router)?;
    let backend = Socket::new(SocketType::Router)?;
    let frontend_endpoint = frontend.bind("tcp://127.0.0.1:*").await?;
    let backend_endpoint = backend.bind("tcp://127.0.0.1:*").await?;
    println!("broker: clients connect to {frontend_endpoint}, workers to {backend_endpoint}");

    for n in 0..WORKERS {
        tokio::spawn(worker(format!("worker-{n}"), backend_endpoint.clone()));
    }
    let clients: Vec<_> = (0..CLIENTS)
        .map(|n| tokio::spawn(client(format!("client-{n}"), frontend_endpoint.clone())))
        .collect();

    // The broker's loop. `recv` is cancel-safe: when one branch of `select!` completes,
    // the other's `recv` is dropped without having taken a message, so none is lost.
    let mut free_workers: VecDeque<Bytes> = VecDeque::new();
    let mut answered = 0;
    while answered < CLIENTS {
        tokio::select! {
            msg = backend.recv() => {
                let mut frames = msg?.into_frames().into_iter();
                let worker = frames.next().ok_or("empty message from a worker")?;
                let _delimiter = frames.next();
                let rest: Vec<Bytes> = frames.collect();
                free_workers.push_back(worker.clone());
                match &rest[..] {
                    [ready] if &ready[..] == b"READY" => {
                        println!("broker: {} is ready", String::from_utf8_lossy(&worker));
                    }
                    [client, _delimiter, reply] => {
                        // Back to the client, through the frontend, as `[client, "", reply]`.
                        let envelope = vec![client.clone(), Bytes::new(), reply.clone()];
                        frontend.send(envelope).await?;
                        answered += 1;
                    }
                    _ => return Err(format!("unexpected message from a worker: {rest:?}").into()),
                }
            }
            // Take requests only while a worker is free: the rest wait in the frontend.
            msg = frontend.recv(), if !free_workers.is_empty() => {
                let frames = msg?.into_frames();
                let [client, _delimiter, request] = <[Bytes; 3]>::try_from(frames)
                    .map_err(|frames| format!("unexpected request {frames:?}"))?;
                let worker = free_workers.pop_front().expect("a free worker");
                let envelope = vec![worker, Bytes::new(), client, Bytes::new(), request];
                backend.send(envelope).await?;
            }
        }
    }

    let mut per_worker = [0usize; WORKERS];
    for client in clients {
        let (name, reply) = client.await??;
        println!("{name}: {reply}");
        let worker = reply
            .strip_prefix("OK from worker-")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n < WORKERS)
            .ok_or_else(|| format!("{name} got {reply:?}"))?;
        per_worker[worker] += 1;
    }
    println!("{CLIENTS} clients answered; requests per worker: {per_worker:?}");
    // The workers still wait for requests; they end with the runtime.
    Ok(())
}

/// A client: one request, one reply.
async fn client(name: String, endpoint: String) -> Result<(String, String), zmtp_tokio::Error> {
    let socket = Socket::new(SocketType::Req)?;
    socket.connect(&endpoint)?;
    socket.send("HELLO").await?;
    let reply = socket.recv_string().await?;
    Ok((name, reply))
}

/// A worker: "READY", then a reply to each request, forever. Its routing id is its name,
/// so that the broker can print it (without one, a ROUTER makes up a binary id).
async fn worker(name: String, endpoint: String) -> Result<(), Box<dyn Error + Send + Sync>> {
    let options = Options::default().with_routing_id(name.clone());
    let socket = Socket::with_options(SocketType::Req, options)?;
    socket.connect(&endpoint)?;
    socket.send("READY").await?;
    loop {
        // `[client, "", request]`: the REQ has removed the broker's delimiter.
        let frames = socket.recv().await?.into_frames();
        let [client, _delimiter, request] = <[Bytes; 3]>::try_from(frames)
            .map_err(|frames| format!("{name}: unexpected request {frames:?}"))?;
        println!("{name}: {:?}", String::from_utf8_lossy(&request));
        let reply = Bytes::from(format!("OK from {name}"));
        socket.send(vec![client, Bytes::new(), reply]).await?;
    }
}
