//! PLAIN: a PUSH/PULL pipeline whose server checks a user name and password.
//!
//! Run with `cargo run -p zmtp-tokio --example tokio_plain_push_pull`.
//!
//! PLAIN sends the password in clear text: it tells the server who connects, on a
//! network that is trusted not to listen (CURVE encrypts; see `tokio_curve_push_pull`).
//! The server's `Authenticator` holds the table of users; a client with a wrong password
//! is refused and sees `HANDSHAKE_FAILED_AUTH` on its monitor.

use std::time::Duration;

use zmtp_tokio::{Authenticator, MonitorEventKind, Options, Security, Socket, SocketType};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = Options::default().with_security(Security::plain_server());
    let server = Socket::with_options(SocketType::Pull, options)?;
    server.set_authenticator(Some(Authenticator::new().plain_user("admin", "secret")));
    let endpoint = server.bind("tcp://127.0.0.1:*").await?;
    println!("server: bound to {endpoint}, admits user \"admin\"");

    // A wrong password: refused.
    let options = Options::default().with_security(Security::plain_client("admin", "guess")?);
    let intruder = Socket::with_options(SocketType::Push, options)?;
    let mut intruder_events = intruder.monitor();
    intruder.connect(&endpoint)?;
    let refused = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some(event) = intruder_events.next().await {
            if event.kind == MonitorEventKind::HandshakeFailedAuth {
                return Some(event.value);
            }
        }
        None
    })
    .await;
    match refused {
        Ok(Some(status)) => println!("intruder: password refused (status {status})"),
        _ => return Err("the wrong password was not refused".into()),
    }
    intruder.close().await;

    // The right one.
    let options = Options::default().with_security(Security::plain_client("admin", "secret")?);
    let client = Socket::with_options(SocketType::Push, options)?;
    client.connect(&endpoint)?;
    client.send("Hello").await?;

    let msg = server.recv().await?;
    // The user id of a PLAIN client is its user name.
    let user = msg
        .property("User-Id")
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    println!("server: {msg:?} from user {user}", msg = msg.to_str()?);
    if msg.to_str()? != "Hello" || user != "admin" {
        return Err("unexpected message".into());
    }
    println!("PLAIN client admitted, message received");
    Ok(())
}
