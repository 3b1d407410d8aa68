// ZMTP over WebSocket (ZWS 2.0, RFC 45) in plain browser JavaScript.
//
// The wire, as the project's ws:// endpoints speak it:
// - the WebSocket subprotocol is bare "ZWS2.0": a browser cannot offer "ZWS2.0/NULL"
//   (the WebSocket API takes only HTTP tokens, and "/" is not allowed in one);
// - there is no ZMTP greeting and, over bare ZWS2.0, no mechanism and no READY: each
//   side's first frame is its routing id (ours is empty) and socket types are not checked;
// - every WebSocket binary message is one ZMTP frame: a flags byte (bit 0 MORE, bit 1
//   COMMAND) followed by the frame body (the browser masks what it sends);
// - then messages: frames with MORE set on all but the last.
"use strict";

const ZWS_PROTOCOL = "ZWS2.0";
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

// A ZMTP socket connected over ws://. Use `ZwsSocket.open`, which resolves once the peer's
// routing id has arrived; the socket's type shows only in how the page uses it (a REQ puts
// the empty delimiter first, a SUB sends subscriptions as messages).
class ZwsSocket {
  static open(url) {
    return new Promise((resolve, reject) => new ZwsSocket(url, resolve, reject));
  }

  constructor(url, resolve, reject) {
    this.onmessage = () => {}; // called with an array of frames (Uint8Array) per message
    this.onclose = () => {}; // called with a reason string
    this.peerId = null; // the peer's routing id, once it has arrived
    this.parts = [];
    this.ws = new WebSocket(url, [ZWS_PROTOCOL]);
    this.ws.binaryType = "arraybuffer";
    this.ws.onopen = () => {
      if (this.ws.protocol !== ZWS_PROTOCOL) {
        return this.fail(reject, `server chose subprotocol "${this.ws.protocol}"`);
      }
      this.ws.send(zwsFrame(0, new Uint8Array(0))); // our routing id: empty
    };
    this.ws.onerror = () => this.fail(reject, `WebSocket error on ${url}`);
    this.ws.onclose = (e) => {
      reject(new Error(`connection to ${url} closed (code ${e.code}) before the peer's id`));
      this.onclose(`closed (code ${e.code})`);
    };
    this.ws.onmessage = (event) => {
      try {
        this.receive(new Uint8Array(event.data), resolve);
      } catch (err) {
        this.fail(reject, err.message);
      }
    };
  }

  receive(frame, resolve) {
    if (frame.length === 0) throw new Error("empty ZWS frame");
    const flags = frame[0];
    const body = frame.subarray(1);
    if (flags & FLAG_COMMAND) return; // no command means anything to us here
    if (this.peerId === null) {
      if (flags & FLAG_MORE) throw new Error("routing id frame with MORE");
      this.peerId = body;
      return resolve(this);
    }
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
