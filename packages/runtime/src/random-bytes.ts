import { randomFillSync } from 'node:crypto';

const BLOCK_BYTES = 4096;
let block = Buffer.alloc(0);
let at = 0;

/**
 * `count` fresh bytes (at most 64) from the system's generator, cut from random bytes drawn 4 KiB at a
 * time: one call to the generator per few hundred draws rather than one each (a call costs about
 * 2 µs, near half of what encrypting a short value does, and web crypto's `getRandomValues`, which
 * the uuid package calls for every id, about 5 µs). Each block is new and never written again, so
 * bytes handed out stay as they were.
 */
export function randomBytesDrawn(count: number): Buffer {
  if (at + count > block.length) {
    block = randomFillSync(Buffer.allocUnsafe(BLOCK_BYTES));
    at = 0;
  }
  return block.subarray(at, (at += count));
}

/** A fresh 12-byte AES-GCM IV. */
export const randomIv = () => randomBytesDrawn(12);
