// Constant header names and values as bytes, for servers that take them cheaper than strings.

/**
 * A constant argument for server calls as an exact-size ArrayBuffer: uWS reads it as it is,
 * where a string argument costs a UTF-8 measure, a malloc and a copy on every call.
 */
export function nativeString(s: string): ArrayBuffer {
  return new Uint8Array(Buffer.from(s, 'latin1')).buffer;
}

const names = new WeakMap<ArrayBuffer, string>();

/** The text of a Bytes argument (latin1); constant ArrayBuffers are decoded once. */
export function textOf(b: string | ArrayBuffer | Uint8Array): string {
  if (typeof b === 'string') return b;
  if (b instanceof ArrayBuffer) {
    let s = names.get(b);
    if (s === undefined) names.set(b, (s = Buffer.from(b).toString('latin1')));
    return s;
  }
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
}

/** A received chunk as an ArrayBuffer of its own bytes (the chunk's buffer may be shared). */
export function arrayBufferOf(b: Uint8Array): ArrayBuffer {
  if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength) return b.buffer as ArrayBuffer;
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}
