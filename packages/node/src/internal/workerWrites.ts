/**
 * Writing and syncing on a worker thread, so the process keeps running
 * while the device works; and when a write is small enough to block on.
 *
 * @internal
 */
import * as fs from "node:fs"
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"

/** Runs a callback-style call on a worker thread. */
const onWorker = (start: (done: (error: NodeJS.ErrnoException | null) => void) => void): Promise<void> =>
  new Promise((resolve, reject) => start((error) => (error === null ? resolve() : reject(error))))

/** Writes all of `content` at the descriptor's position (a text as its UTF-8 encoding) on worker threads. */
export const writeAll = async (fd: number, content: Uint8Array | string): Promise<void> => {
  const writeFrom = (bytes: Uint8Array, offset: number) =>
    new Promise<number>((resolve, reject) =>
      fs.write(fd, bytes, offset, bytes.byteLength - offset, null, (error, written) =>
        error === null ? resolve(written) : reject(error)
      )
    )
  let bytes: Uint8Array
  let offset = 0
  if (typeof content === "string") {
    // Node encodes a string outside the JavaScript heap; only a short write needs the bytes here.
    const written = new Promise<number>((resolve, reject) =>
      fs.write(fd, content, null, "utf8", (error, count) => (error === null ? resolve(count) : reject(error)))
    )
    // Counted while the device writes, not after: issuing the write has flattened a text made of many
    // pieces (a redacted body), so this is one pass over contiguous characters, where counting before the
    // write is issued would walk the pieces (bench/NOTES.md has the measurements).
    const total = Buffer.byteLength(content, "utf8")
    offset = await written
    if (offset === total) return
    bytes = Buffer.from(content, "utf8")
  } else {
    bytes = content
  }
  while (offset < bytes.byteLength) offset += await writeFrom(bytes, offset)
}

/** Whether `content` takes at most `limit` bytes, without counting a text that is clearly larger. */
export const fitsIn = (content: Uint8Array | string, limit: number): boolean =>
  typeof content === "string" ? !ArtifactPointer.exceedsUtf8(content, limit) : content.byteLength <= limit

/** Syncs the descriptor: on the calling thread when `blocking`, else on a worker. */
export const syncDescriptor = async (fd: number, blocking: boolean): Promise<void> => {
  if (blocking) fs.fsyncSync(fd)
  else await onWorker((done) => fs.fsync(fd, done))
}
