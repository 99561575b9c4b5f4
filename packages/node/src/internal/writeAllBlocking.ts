/**
 * Writing every byte of a text or byte array with blocking calls, shared by
 * the durable files and the journal file.
 */
import * as fs from "node:fs"

/**
 * Writes all of `content` at the descriptor's position (a text as its UTF-8
 * encoding). Node encodes a text without allocating a buffer on the
 * JavaScript heap; only after a partial write are the bytes needed here.
 */
export const writeAllBlocking = (fd: number, content: Uint8Array | string): void => {
  let bytes: Uint8Array
  let offset = 0
  if (typeof content === "string") {
    offset = fs.writeSync(fd, content, null, "utf8")
    if (offset === Buffer.byteLength(content, "utf8")) return
    bytes = Buffer.from(content, "utf8")
  } else {
    bytes = content
  }
  while (offset < bytes.byteLength) offset += fs.writeSync(fd, bytes, offset)
}
