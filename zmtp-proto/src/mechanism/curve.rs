//! The CURVE mechanism (RFC 25/26), byte-compatible with libzmq.
//!
//! Client: HELLO → WELCOME → INITIATE (vouch, metadata) → READY.
//! Server: HELLO → WELCOME (cookie) → INITIATE → verdict → READY (or ERROR).
//! Then every frame travels as a MESSAGE in a plain data frame, its first plaintext byte
//! the inner flags (bit 0 MORE, bit 1 COMMAND).

use super::{
    emit_error, error_len, put_command_head, reason_of, Credentials, EmitError, Refusal, Verdict,
};
use crate::codec::{Command, FrameHeader, InsufficientSize, Metadata, Writer};
use crate::config::Config;
use crate::curve_crypto::{
    nonce, CryptoBox, Drbg, KeyPair, PublicKey, SecretBox, KEY_LEN, TAG_LEN,
};
use crate::error::{CurveError, EncodeError, Error};
use zeroize::Zeroize;

const HELLO_LEN: usize = 200;
const WELCOME_LEN: usize = 168;
const COOKIE_LEN: usize = 96;
const INITIATE_MIN: usize = 257;
const READY_MIN: usize = 30;
/// `07 "MESSAGE"`, short nonce, tag, inner flags.
const MESSAGE_OVERHEAD: usize = 8 + 8 + TAG_LEN + 1;
/// Plaintext of the INITIATE box before the metadata: C, vouch nonce, vouch box.
const INITIATE_FIXED: usize = KEY_LEN + 16 + VOUCH_LEN;
const VOUCH_LEN: usize = TAG_LEN + 2 * KEY_LEN;

const MORE: u8 = 0x01;
const COMMAND: u8 = 0x02;

#[derive(Debug)]
pub(crate) struct Curve {
    role: Role,
    /// Every random value comes from here; `None` when built without entropy.
    rng: Option<Drbg>,
    /// Our short-term key pair, made when first needed.
    short: Option<KeyPair>,
    /// The box between the two short-term keys, once both are known.
    traffic: Option<CryptoBox>,
    /// The next short nonce we send.
    next_nonce: u64,
    /// The last short nonce received.
    peer_nonce: u64,
    pub(crate) verdict: Verdict,
    refused: Refusal,
    pending: Option<Out>,
    done: bool,
}

#[derive(Debug, Clone)]
enum Role {
    Client {
        server: PublicKey,
        keys: KeyPair,
        /// The cookie from WELCOME, echoed in INITIATE.
        cookie: [u8; COOKIE_LEN],
        server_short: Option<PublicKey>,
    },
    Server {
        keys: KeyPair,
        /// The client's short-term key from HELLO.
        client_short: Option<PublicKey>,
        /// The client's long-term key from INITIATE.
        client: Option<PublicKey>,
        /// The key of our cookie, fresh per connection.
        cookie_key: [u8; KEY_LEN],
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    Hello,
    Welcome,
    Initiate,
    Ready,
}

impl Drop for Curve {
    fn drop(&mut self) {
        // The other secrets (key pairs, boxes, generator) wipe themselves.
        if let Role::Server { cookie_key, .. } = &mut self.role {
            cookie_key.zeroize();
        }
    }
}

/// A failure while building one of our own commands: the buffer was sized beforehand, so
/// only our own state (no entropy, nonces exhausted) can cause one.
struct Fault(CurveError);

impl From<InsufficientSize> for Fault {
    fn from(_: InsufficientSize) -> Fault {
        Fault(CurveError::BadMessage)
    }
}

impl From<CurveError> for Fault {
    fn from(e: CurveError) -> Fault {
        Fault(e)
    }
}

/// Copy `N` bytes from `at` on, if there are that many.
fn take<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

impl Curve {
    pub(crate) fn client(server: PublicKey, keys: KeyPair, entropy: Option<[u8; 32]>) -> Curve {
        Curve::with(
            Role::Client {
                server,
                keys,
                cookie: [0; COOKIE_LEN],
                server_short: None,
            },
            entropy,
        )
    }

    pub(crate) fn server(keys: KeyPair, entropy: Option<[u8; 32]>) -> Curve {
        Curve::with(
            Role::Server {
                keys,
                client_short: None,
                client: None,
                cookie_key: [0; KEY_LEN],
            },
            entropy,
        )
    }

    fn with(role: Role, entropy: Option<[u8; 32]>) -> Curve {
        Curve {
            role,
            rng: entropy.map(Drbg::new),
            short: None,
            traffic: None,
            next_nonce: 1,
            peer_nonce: 0,
            verdict: Verdict::None,
            refused: Refusal::default(),
            pending: None,
            done: false,
        }
    }

    fn random(&mut self, out: &mut [u8]) -> Result<(), CurveError> {
        self.rng.as_mut().ok_or(CurveError::NoEntropy)?.fill(out);
        Ok(())
    }

    /// Our short-term key pair, made on first use.
    fn short_keys(&mut self) -> Result<KeyPair, CurveError> {
        if let Some(k) = &self.short {
            return Ok(k.clone());
        }
        let rng = self.rng.as_mut().ok_or(CurveError::NoEntropy)?;
        let k = KeyPair::generate(rng);
        self.short = Some(k.clone());
        Ok(k)
    }

    fn take_nonce(&mut self) -> Result<[u8; 8], CurveError> {
        let n = self.next_nonce;
        self.next_nonce = n.checked_add(1).ok_or(CurveError::NoncesExhausted)?;
        Ok(n.to_be_bytes())
    }

    pub(crate) fn start(&mut self) -> Result<(), Error> {
        if self.rng.is_none() {
            return Err(CurveError::NoEntropy.into());
        }
        if matches!(self.role, Role::Client { .. }) {
            self.short_keys()?;
            self.pending = Some(Out::Hello);
        }
        Ok(())
    }

    pub(crate) fn credentials(&self) -> Option<Credentials<'_>> {
        match &self.role {
            Role::Server {
                client: Some(c), ..
            } => Some(Credentials::Curve { public_key: *c }),
            _ => None,
        }
    }

    pub(crate) fn has_pending(&self) -> bool {
        self.pending.is_some() || self.refused.farewell().is_some()
    }

    pub(crate) fn pending_len(&self, cfg: &Config) -> Option<usize> {
        if let Some(reason) = self.refused.farewell() {
            return Some(error_len(reason));
        }
        let body = match self.pending? {
            Out::Hello => HELLO_LEN,
            Out::Welcome => WELCOME_LEN,
            Out::Initiate => 113 + TAG_LEN + INITIATE_FIXED + cfg.metadata_len(),
            Out::Ready => 14 + TAG_LEN + cfg.metadata_len(),
        };
        Some(FrameHeader::command(body).encoded_len() + body)
    }

    pub(crate) fn emit(&mut self, cfg: &Config, out: &mut [u8]) -> Result<usize, EmitError> {
        self.refused.emit_farewell(out, emit_error)?;
        let Some(next) = self.pending else {
            return Ok(0);
        };
        let len = self.pending_len(cfg).unwrap_or(0);
        let frame = out
            .get_mut(..len)
            .ok_or(InsufficientSize { required: len })?;
        let written = match next {
            Out::Hello => self.emit_hello(frame),
            Out::Welcome => self.emit_welcome(frame),
            Out::Initiate => self.emit_initiate(cfg, frame),
            Out::Ready => self.emit_ready(cfg, frame),
        };
        self.pending = None;
        match written {
            Ok(()) => Ok(len),
            Err(Fault(e)) => {
                // Nothing usable was written: the handshake ends here.
                frame.fill(0);
                Err(EmitError::Failed {
                    farewell: 0,
                    error: Error::Curve(e),
                })
            }
        }
    }

    /// HELLO: version, padding, C′, nonce, Box[64 zeros](C′ → S).
    fn emit_hello(&mut self, frame: &mut [u8]) -> Result<(), Fault> {
        let Role::Client { server, .. } = &self.role else {
            return Err(CurveError::BadHello.into());
        };
        let server = *server;
        let short = self.short_keys()?;
        let n = self.take_nonce()?;
        let mut w = Writer::new(frame);
        put_command_head(&mut w, b"HELLO", HELLO_LEN - 6)?;
        w.put(&[1, 0])?;
        w.put(&[0; 72])?;
        w.put(&short.public.0)?;
        w.put(&n)?;
        let at = w.len();
        w.put(&[0; TAG_LEN + 64])?;
        let sealed = frame.get_mut(at..).ok_or(CurveError::BadHello)?;
        CryptoBox::new(&server, &short.secret)
            .seal_in_place(
                &nonce(b"CurveZMQHELLO---", &n).map_err(|_| CurveError::BadHello)?,
                sealed,
            )
            .map_err(|_| CurveError::BadHello)?;
        Ok(())
    }

    /// WELCOME: random R, Box[S′ ‖ cookie](S → C′), nonce "WELCOME-" ‖ R.
    fn emit_welcome(&mut self, frame: &mut [u8]) -> Result<(), Fault> {
        let short = self.short_keys()?;
        let mut r = [0u8; 16];
        let mut rc = [0u8; 16];
        let mut cookie_key = [0u8; KEY_LEN];
        self.random(&mut r)?;
        self.random(&mut rc)?;
        self.random(&mut cookie_key)?;
        let Role::Server {
            keys,
            client_short: Some(client_short),
            cookie_key: kept,
            ..
        } = &mut self.role
        else {
            return Err(CurveError::BadHello.into());
        };
        *kept = cookie_key;
        // The cookie: Rc ‖ SecretBox[C′ ‖ s′](K), nonce "COOKIE--" ‖ Rc.
        let mut cookie = [0u8; COOKIE_LEN];
        {
            let mut w = Writer::new(&mut cookie);
            w.put(&rc)?;
            w.put(&[0; TAG_LEN])?;
            w.put(&client_short.0)?;
            w.put(short.secret.as_bytes())?;
        }
        let cookie_box = cookie.get_mut(16..).ok_or(CurveError::BadHello)?;
        SecretBox::new(&cookie_key)
            .seal_in_place(
                &nonce(b"COOKIE--", &rc).map_err(|_| CurveError::BadHello)?,
                cookie_box,
            )
            .map_err(|_| CurveError::BadHello)?;
        cookie_key.zeroize();
        let mut w = Writer::new(frame);
        put_command_head(&mut w, b"WELCOME", WELCOME_LEN - 8)?;
        w.put(&r)?;
        let at = w.len();
        w.put(&[0; TAG_LEN])?;
        w.put(&short.public.0)?;
        w.put(&cookie)?;
        let sealed = frame.get_mut(at..).ok_or(CurveError::BadHello)?;
        CryptoBox::new(client_short, &keys.secret)
            .seal_in_place(
                &nonce(b"WELCOME-", &r).map_err(|_| CurveError::BadHello)?,
                sealed,
            )
            .map_err(|_| CurveError::BadHello)?;
        Ok(())
    }

    /// INITIATE: cookie, nonce, Box[C ‖ Rv ‖ vouch ‖ metadata](C′ → S′).
    fn emit_initiate(&mut self, cfg: &Config, frame: &mut [u8]) -> Result<(), Fault> {
        let short = self.short_keys()?;
        let mut rv = [0u8; 16];
        self.random(&mut rv)?;
        let n = self.take_nonce()?;
        let Role::Client {
            server,
            keys,
            cookie,
            server_short: Some(server_short),
        } = &self.role
        else {
            return Err(CurveError::BadWelcome.into());
        };
        // The vouch: Box[C′ ‖ S](C → S′), nonce "VOUCH---" ‖ Rv.
        let mut vouch = [0u8; VOUCH_LEN];
        {
            let mut w = Writer::new(&mut vouch);
            w.put(&[0; TAG_LEN])?;
            w.put(&short.public.0)?;
            w.put(&server.0)?;
        }
        CryptoBox::new(server_short, &keys.secret)
            .seal_in_place(
                &nonce(b"VOUCH---", &rv).map_err(|_| CurveError::BadInitiate)?,
                &mut vouch,
            )
            .map_err(|_| CurveError::BadInitiate)?;
        let meta_len = cfg.metadata_len();
        let mut w = Writer::new(frame);
        put_command_head(
            &mut w,
            b"INITIATE",
            113 - 9 + TAG_LEN + INITIATE_FIXED + meta_len,
        )?;
        w.put(cookie)?;
        w.put(&n)?;
        let at = w.len();
        w.put(&[0; TAG_LEN])?;
        w.put(&keys.public.0)?;
        w.put(&rv)?;
        w.put(&vouch)?;
        cfg.emit_metadata(&mut w)?;
        let traffic = CryptoBox::new(server_short, &short.secret);
        let sealed = frame.get_mut(at..).ok_or(CurveError::BadInitiate)?;
        traffic
            .seal_in_place(
                &nonce(b"CurveZMQINITIATE", &n).map_err(|_| CurveError::BadInitiate)?,
                sealed,
            )
            .map_err(|_| CurveError::BadInitiate)?;
        self.traffic = Some(traffic);
        Ok(())
    }

    /// READY: nonce, Box[metadata](S′ → C′).
    fn emit_ready(&mut self, cfg: &Config, frame: &mut [u8]) -> Result<(), Fault> {
        let n = self.take_nonce()?;
        let traffic = self.traffic.as_ref().ok_or(CurveError::BadInitiate)?;
        let mut w = Writer::new(frame);
        put_command_head(&mut w, b"READY", 14 - 6 + TAG_LEN + cfg.metadata_len())?;
        w.put(&n)?;
        let at = w.len();
        w.put(&[0; TAG_LEN])?;
        cfg.emit_metadata(&mut w)?;
        let sealed = frame.get_mut(at..).ok_or(CurveError::BadReady)?;
        traffic
            .seal_in_place(
                &nonce(b"CurveZMQREADY---", &n).map_err(|_| CurveError::BadReady)?,
                sealed,
            )
            .map_err(|_| CurveError::BadReady)?;
        Ok(())
    }

    pub(crate) fn handle_command<'a>(
        &mut self,
        body: &'a mut [u8],
    ) -> Result<Option<Metadata<'a>>, Error> {
        if body.starts_with(b"\x05ERROR") || body.starts_with(b"\x5eRROR") {
            let body: &'a [u8] = body;
            return match Command::parse(body)? {
                Command::Error(reason) => Err(Error::PeerError(reason_of(reason))),
                _ => Err(Error::UnexpectedCommand),
            };
        }
        let is_client = matches!(self.role, Role::Client { .. });
        if is_client {
            if body.starts_with(b"\x07WELCOME") && self.pending.is_none() && self.traffic.is_none()
            {
                self.on_welcome(body)?;
                return Ok(None);
            }
            if body.starts_with(b"\x05READY") && self.traffic.is_some() && !self.done {
                return self.on_ready(body).map(Some);
            }
        } else {
            let Role::Server {
                client_short,
                client,
                ..
            } = &self.role
            else {
                return Err(Error::UnexpectedCommand);
            };
            if body.starts_with(b"\x05HELLO") && client_short.is_none() {
                self.on_hello(body)?;
                return Ok(None);
            }
            if body.starts_with(b"\x08INITIATE") && client_short.is_some() && client.is_none() {
                return self.on_initiate(body).map(Some);
            }
        }
        Err(Error::UnexpectedCommand)
    }

    fn on_hello(&mut self, body: &mut [u8]) -> Result<(), Error> {
        let bad = CurveError::BadHello;
        if body.len() != HELLO_LEN || body.get(6..8) != Some(&[1, 0]) {
            return Err(CurveError::MalformedHello.into());
        }
        let client_short = PublicKey(take(body, 80).ok_or(bad)?);
        let n: [u8; 8] = take(body, 112).ok_or(bad)?;
        let Role::Server { keys, .. } = &self.role else {
            return Err(bad.into());
        };
        let sealed = body.get_mut(120..).ok_or(bad)?;
        CryptoBox::new(&client_short, &keys.secret)
            .open_in_place(&nonce(b"CurveZMQHELLO---", &n).map_err(|_| bad)?, sealed)
            .map_err(|_| bad)?;
        if let Role::Server {
            client_short: slot, ..
        } = &mut self.role
        {
            *slot = Some(client_short);
        }
        self.peer_nonce = u64::from_be_bytes(n);
        self.pending = Some(Out::Welcome);
        Ok(())
    }

    fn on_welcome(&mut self, body: &mut [u8]) -> Result<(), Error> {
        let bad = CurveError::BadWelcome;
        if body.len() != WELCOME_LEN {
            return Err(bad.into());
        }
        let short = self.short_keys()?;
        let r: [u8; 16] = take(body, 8).ok_or(bad)?;
        let Role::Client {
            server,
            cookie,
            server_short,
            ..
        } = &mut self.role
        else {
            return Err(bad.into());
        };
        let sealed = body.get_mut(24..).ok_or(bad)?;
        CryptoBox::new(server, &short.secret)
            .open_in_place(&nonce(b"WELCOME-", &r).map_err(|_| bad)?, sealed)
            .map_err(|_| bad)?;
        *server_short = Some(PublicKey(take(body, 24 + TAG_LEN).ok_or(bad)?));
        *cookie = take(body, 24 + TAG_LEN + KEY_LEN).ok_or(bad)?;
        self.pending = Some(Out::Initiate);
        Ok(())
    }

    fn on_initiate<'a>(&mut self, body: &'a mut [u8]) -> Result<Metadata<'a>, Error> {
        let bad = CurveError::BadInitiate;
        if body.len() < INITIATE_MIN {
            return Err(CurveError::MalformedInitiate.into());
        }
        let short = self.short_keys()?;
        let Role::Server {
            client_short: Some(client_short),
            client,
            cookie_key,
            ..
        } = &mut self.role
        else {
            return Err(bad.into());
        };
        // Our cookie, which must hold exactly (C′, s′).
        let rc: [u8; 16] = take(body, 9).ok_or(bad)?;
        let mut cookie: [u8; COOKIE_LEN - 16] = take(body, 25).ok_or(bad)?;
        SecretBox::new(cookie_key)
            .open_in_place(&nonce(b"COOKIE--", &rc).map_err(|_| bad)?, &mut cookie)
            .map_err(|_| bad)?;
        let held_short = take::<KEY_LEN>(&cookie, TAG_LEN).ok_or(bad)?;
        let mut held_secret = take::<KEY_LEN>(&cookie, TAG_LEN + KEY_LEN).ok_or(bad)?;
        cookie.zeroize();
        let matches = held_short == client_short.0 && &held_secret == short.secret.as_bytes();
        held_secret.zeroize();
        if !matches {
            return Err(bad.into());
        }
        let n: [u8; 8] = take(body, 105).ok_or(bad)?;
        let traffic = CryptoBox::new(client_short, &short.secret);
        let sealed = body.get_mut(113..).ok_or(bad)?;
        traffic
            .open_in_place(&nonce(b"CurveZMQINITIATE", &n).map_err(|_| bad)?, sealed)
            .map_err(|_| bad)?;
        // Plaintext: C ‖ Rv ‖ vouch ‖ metadata.
        let plain = body.get(113 + TAG_LEN..).ok_or(bad)?;
        let long = PublicKey(take(plain, 0).ok_or(bad)?);
        let rv: [u8; 16] = take(plain, KEY_LEN).ok_or(bad)?;
        let mut vouch: [u8; VOUCH_LEN] = take(plain, KEY_LEN + 16).ok_or(bad)?;
        CryptoBox::new(&long, &short.secret)
            .open_in_place(
                &nonce(b"VOUCH---", &rv).map_err(|_| CurveError::BadVouch)?,
                &mut vouch,
            )
            .map_err(|_| CurveError::BadVouch)?;
        // libzmq compares the vouched C′ only, not the S beside it.
        if take::<KEY_LEN>(&vouch, TAG_LEN) != Some(client_short.0) {
            return Err(CurveError::BadVouch.into());
        }
        *client = Some(long);
        self.traffic = Some(traffic);
        self.peer_nonce = u64::from_be_bytes(n);
        self.verdict = Verdict::Waiting;
        let body: &'a [u8] = body;
        let meta = body.get(113 + TAG_LEN + INITIATE_FIXED..).ok_or(bad)?;
        Ok(Metadata::parse(meta)?)
    }

    fn on_ready<'a>(&mut self, body: &'a mut [u8]) -> Result<Metadata<'a>, Error> {
        let bad = CurveError::BadReady;
        if body.len() < READY_MIN {
            return Err(bad.into());
        }
        let n: [u8; 8] = take(body, 6).ok_or(bad)?;
        let traffic = self.traffic.as_ref().ok_or(bad)?;
        let sealed = body.get_mut(14..).ok_or(bad)?;
        traffic
            .open_in_place(&nonce(b"CurveZMQREADY---", &n).map_err(|_| bad)?, sealed)
            .map_err(|_| bad)?;
        self.peer_nonce = u64::from_be_bytes(n);
        self.done = true;
        let body: &'a [u8] = body;
        Ok(Metadata::parse(body.get(14 + TAG_LEN..).ok_or(bad)?)?)
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.done
    }

    pub(crate) fn handle_auth(&mut self, status: u16) -> Result<(), Error> {
        self.verdict = Verdict::None;
        if self.refused.apply(status)? {
            self.verdict = Verdict::Granted;
            self.pending = Some(Out::Ready);
            self.done = true;
        }
        Ok(())
    }

    // ----- traffic -----------------------------------------------------------------------

    /// Length of the data frame carrying a MESSAGE with `len` bytes of payload.
    pub(crate) fn sealed_frame_len(len: usize) -> usize {
        let body = MESSAGE_OVERHEAD + len;
        FrameHeader::data(body, false).encoded_len() + body
    }

    fn message_nonce_prefix(&self, sending: bool) -> &'static [u8; 16] {
        let client = matches!(self.role, Role::Client { .. });
        if client == sending {
            b"CurveZMQMESSAGEC"
        } else {
            b"CurveZMQMESSAGES"
        }
    }

    pub(crate) fn seal(
        &mut self,
        command: bool,
        more: bool,
        len: usize,
        out: &mut [u8],
        payload: impl FnOnce(&mut Writer<'_>) -> Result<(), InsufficientSize>,
    ) -> Result<usize, EncodeError> {
        let total = Self::sealed_frame_len(len);
        let frame = out
            .get_mut(..total)
            .ok_or(EncodeError::InsufficientSize { required: total })?;
        let closed = |e: CurveError| EncodeError::Closed(Error::Curve(e));
        let n = self.take_nonce().map_err(closed)?;
        let prefix = self.message_nonce_prefix(true);
        let traffic = self
            .traffic
            .as_ref()
            .ok_or(closed(CurveError::BadMessage))?;
        let mut w = Writer::new(frame);
        w.emit(|out| FrameHeader::data(MESSAGE_OVERHEAD + len, false).emit(out))?;
        w.put(b"\x07MESSAGE")?;
        w.put(&n)?;
        let at = w.len();
        w.put(&[0; TAG_LEN])?;
        w.put(&[(u8::from(more) * MORE) | (u8::from(command) * COMMAND)])?;
        payload(&mut w)?;
        if w.len() != total {
            return Err(EncodeError::InsufficientSize { required: total });
        }
        let sealed = frame.get_mut(at..).ok_or(closed(CurveError::BadMessage))?;
        let nonce = nonce(prefix, &n).map_err(|_| closed(CurveError::BadMessage))?;
        traffic
            .seal_in_place(&nonce, sealed)
            .map_err(|_| closed(CurveError::BadMessage))?;
        Ok(total)
    }

    pub(crate) fn open<'a>(&mut self, body: &'a mut [u8]) -> Result<(u8, &'a [u8]), Error> {
        let bad = CurveError::BadMessage;
        if body.len() < MESSAGE_OVERHEAD || !body.starts_with(b"\x07MESSAGE") {
            return Err(bad.into());
        }
        let n: [u8; 8] = take(body, 8).ok_or(bad)?;
        let short = u64::from_be_bytes(n);
        if short <= self.peer_nonce {
            return Err(CurveError::InvalidSequence.into());
        }
        let prefix = self.message_nonce_prefix(false);
        let traffic = self.traffic.as_ref().ok_or(bad)?;
        let sealed = body.get_mut(16..).ok_or(bad)?;
        traffic
            .open_in_place(&nonce(prefix, &n).map_err(|_| bad)?, sealed)
            .map_err(|_| bad)?;
        self.peer_nonce = short;
        let body: &'a [u8] = body;
        let (&flags, payload) = body
            .get(16 + TAG_LEN..)
            .ok_or(bad)?
            .split_first()
            .ok_or(bad)?;
        Ok((flags, payload))
    }
}
