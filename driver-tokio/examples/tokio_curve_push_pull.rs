//! CURVE: an encrypted PUSH/PULL pipeline whose server admits one client key only.
//!
//! Run with `cargo run -p zmtp-tokio --example tokio_curve_push_pull`.
//!
//! The server (the PULL) has a long-term key pair; every client must know the server's
//! public key, here handed over as Z85 text as it would be in a configuration file. The
//! server's `Authenticator` admits the client whose public key it was given and refuses
//! any other; a refused client sees `HANDSHAKE_FAILED_AUTH` on its monitor.

use std::time::Duration;

use zmtp_tokio::{
    curve_keypair, Authenticator, MonitorEventKind, Options, PublicKey, Security, Socket,
    SocketType,
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server_keys = curve_keypair()?;
    let client_keys = curve_keypair()?;
    println!("server public key: {}", server_keys.public.to_z85());
    println!("client public key: {}", client_keys.public.to_z85());

    // The server: its key pair, and the one client key it admits.
    let options = Options::default().with_security(Security::curve_server(server_keys.clone()));
    let server = Socket::with_options(SocketType::Pull, options)?;
    server.set_authenticator(Some(Authenticator::new().curve_allow(client_keys.public)));
    let endpoint = server.bind("tcp://127.0.0.1:*").await?;
    println!("server: bound to {endpoint}");

    // What a client is given: the server's public key as text.
    let server_key_text = server_keys.public.to_z85().to_string();
    let server_key = PublicKey::from_z85(&server_key_text)?;

    // A client with a key the server does not know: refused, it never gets through.
    let stranger_options =
        Options::default().with_security(Security::curve_client(server_key, curve_keypair()?));
    let stranger = Socket::with_options(SocketType::Push, stranger_options)?;
    let mut stranger_events = stranger.monitor();
    stranger.connect(&endpoint)?;
    stranger.send("from a stranger").await?;
    let refused = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some(event) = stranger_events.next().await {
            if event.kind == MonitorEventKind::HandshakeFailedAuth {
                return Some(event.value);
            }
        }
        None
    })
    .await;
    match refused {
        Ok(Some(status)) => println!("stranger: refused by the server (status {status})"),
        _ => return Err("the stranger was not refused".into()),
    }
    // LINGER 0: its queued message is thrown away when it closes.
    stranger.set_linger(Some(Duration::ZERO))?;
    stranger.close().await;

    // The client the server knows.
    let options =
        Options::default().with_security(Security::curve_client(server_key, client_keys.clone()));
    let client = Socket::with_options(SocketType::Push, options)?;
    client.connect(&endpoint)?;
    for n in 1..=3 {
        client.send(format!("secret {n}")).await?;
    }

    for n in 1..=3 {
        let msg = server.recv().await?;
        // The user id of a CURVE client is its public key in Z85.
        let user = msg
            .property("User-Id")
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        println!("server: {:?} from {user}", msg.to_str()?);
        if msg.to_str()? != format!("secret {n}") || client_keys.public.to_z85() != *user {
            return Err(format!("unexpected message {msg} from {user}").into());
        }
    }
    println!("3 messages received, encrypted, from the admitted client only");
    Ok(())
}
