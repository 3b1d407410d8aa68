// ZMTP over WebSocket (ZWS 2.0, RFC 45) with the NULL mechanism, in plain browser JavaScript.
//
// The wire, as the project's ws:// endpoints speak it:
// - the WebSocket subprotocol is "ZWS2.0/NULL"; there is no ZMTP greeting;
// - every WebSocket binary message is one ZMTP frame: a flags byte (bit 0 MORE, bit 1
//   COMMAND) followed by the frame body (the browser masks what it sends);
// - each side first sends the NULL mechanism's READY command: the name length (5),
//   "READY", then properties, each a one-byte name length, the name, a four-byte
//   big-endian value length and the value ("Socket-Type" is required);
// - then messages: frames with MORE set on all but the last.
"use strict";

const ZWS_PROTOCOL = "ZWS2.0/NULL";
const FLAG_MORE = 0x01;
const FLAG_COMMAND = 0x02;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

// Bytes of a string, or the Uint8Array itself.
function toBytes(part) {
  return typeof part === "string" ? utf8.encode(part) : part;
}

// One WebSocket message: the flags byte, then the body.
function zwsFrame(flags, body) {
  const frame = new Uint8Array(1 + body.length);
  frame[0] = flags;
  frame.set(body, 1);
  return frame;
}

// The body of a READY command carrying the given properties ([name, value] pairs).
function readyBody(properties) {
  const parts = [Uint8Array.of(5), utf8.encode("READY")];
  for (const [name, value] of properties) {
    const n = utf8.encode(name);
    const v = toBytes(value);
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, v.length);
    parts.push(Uint8Array.of(n.length), n, len, v);
  }
  const body = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0));
  let at = 0;
  for (const p of parts) {
    body.set(p, at);
    at += p.length;
  }
  return body;
}

// A command body split into its name and data.
function parseCommand(body) {
  const n = body[0];
  if (body.length < 1 + n) throw new Error("truncated command");
  return { name: fromUtf8.decode(body.subarray(1, 1 + n)), data: body.subarray(1 + n) };
}

// READY's properties as a Map from name to value string (names compare case-insensitively).
function parseProperties(data) {
  const props = new Map();
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let at = 0;
  while (at < data.length) {
    const n = data[at];
    if (at + 1 + n + 4 > data.length) throw new Error("truncated property");
    const name = fromUtf8.decode(data.subarray(at + 1, at + 1 + n)).toLowerCase();
    const len = view.getUint32(at + 1 + n);
    const start = at + 1 + n + 4;
    if (start + len > data.length) throw new Error("truncated property value");
    props.set(name, fromUtf8.decode(data.subarray(start, start + len)));
    at = start + len;
  }
  return props;
}

// A ZMTP socket of type `socketType` connected over ws:// to a peer of one of `peerTypes`.
// Use `ZwsSocket.open`, which resolves once both READY commands have crossed.
class ZwsSocket {
  static open(url, socketType, peerTypes) {
    return new Promise((resolve, reject) => {
      new ZwsSocket(url, socketType, peerTypes, resolve, reject);
    });
  }

  constructor(url, socketType, peerTypes, resolve, reject) {
    this.onmessage = () => {}; // called with an array of frames (Uint8Array) per message
    this.onclose = () => {}; // called with a reason string
    this.peerType = null;
    this.parts = [];
    this.ws = new WebSocket(url, [ZWS_PROTOCOL]);
    this.ws.binaryType = "arraybuffer";
    this.ws.onopen = () => {
      if (this.ws.protocol !== ZWS_PROTOCOL) {
        return this.fail(reject, `server chose subprotocol "${this.ws.protocol}"`);
      }
      this.ws.send(zwsFrame(FLAG_COMMAND, readyBody([["Socket-Type", socketType]])));
    };
    this.ws.onerror = () => this.fail(reject, `WebSocket error on ${url}`);
    this.ws.onclose = (e) => {
      reject(new Error(`connection to ${url} closed (code ${e.code}) before READY`));
      this.onclose(`closed (code ${e.code})`);
    };
    this.ws.onmessage = (event) => {
      try {
        this.receive(new Uint8Array(event.data), socketType, peerTypes, resolve);
      } catch (err) {
        this.fail(reject, err.message);
      }
    };
  }

  receive(frame, socketType, peerTypes, resolve) {
    if (frame.length === 0) throw new Error("empty ZWS frame");
    const flags = frame[0];
    const body = frame.subarray(1);
    if (flags & FLAG_COMMAND) {
      const { name, data } = parseCommand(body);
      if (name === "ERROR") throw new Error(`peer refused: ${fromUtf8.decode(data.subarray(1))}`);
      if (name !== "READY" || this.peerType !== null) return; // other commands: nothing to do
      const type = parseProperties(data).get("socket-type");
      if (!peerTypes.includes(type)) throw new Error(`${socketType} cannot talk to ${type}`);
      this.peerType = type;
      return resolve(this);
    }
    if (this.peerType === null) throw new Error("message before READY");
    this.parts.push(body);
    if (!(flags & FLAG_MORE)) {
      const message = this.parts;
      this.parts = [];
      this.onmessage(message);
    }
  }

  // Send one message: an array of frames, each a string or a Uint8Array.
  send(frames) {
    frames.forEach((part, i) => {
      const more = i + 1 < frames.length ? FLAG_MORE : 0;
      this.ws.send(zwsFrame(more, toBytes(part)));
    });
  }

  fail(reject, reason) {
    reject(new Error(reason));
    this.ws.close();
  }

  close() {
    this.ws.close();
  }
}

// Text of a frame.
function frameText(frame) {
  return fromUtf8.decode(frame);
}
