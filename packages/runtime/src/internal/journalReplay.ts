/**
 * Reading a journal's bytes back into entries and state: every complete line
 * decoded and folded through the transition that guards appends, then what
 * follows the last entry classified (blank lines, a cut line, an entry that
 * only lacks its newline, or bytes no journal writes). Opening, reading and
 * repairing a journal all replay through here.
 */
import type * as Ids from "@tessera/core/Ids"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { Entry } from "../JournalEntry.ts"
import { eachLine } from "./journalLines.ts"
import { JournalCorrupt, JournalNotRecognized } from "./journalService.ts"
import { type JournalState, makeReplay } from "./journalState.ts"

export const newline = 0x0a
// `EntryLine`'s encoding is the entry's, then `JSON.stringify`; done in two steps here because the
// string transformation runs as an effect, which a synchronous encode would run on a fiber of its own.
export const encodeEntry = Schema.encodeResult(Entry)

export interface Replayed {
  readonly state: JournalState
  /** Every complete entry, when asked for (reopening needs only the state). */
  readonly entries: ReadonlyArray<Entry>
  /** Length of the file up to and including the newline of its last entry. */
  readonly completeBytes: number
  /** Blank lines after the last entry (newlines only), tolerated at the end of a file and cut on reopen. */
  readonly blankBytes: number
  /** Bytes after the last newline: a line cut mid-append. */
  readonly tail: Uint8Array<ArrayBuffer>
  /** The bytes after the last newline are a complete entry that only lacks its newline (already in `state`). */
  readonly tailIsEntry: boolean
}

/** What every line this journal writes starts with: the encoded entry's tag comes first. */
const lineStart = new TextEncoder().encode('{"_tag":"')

/**
 * Whether the bytes after the last newline can be the start of a line this
 * journal wrote, cut by a crash mid-append: a prefix of the line opening
 * followed by no NUL and no control byte other than a tab. Garbage, or a
 * file of another format, is not.
 */
const isCutLine = (tail: Uint8Array): boolean => {
  const opening = Math.min(tail.length, lineStart.length)
  for (let index = 0; index < opening; index++) if (tail[index] !== lineStart[index]) return false
  for (let index = opening; index < tail.length; index++) {
    const byte = tail[index] as number
    if (byte < 0x20 && byte !== 0x09) return false
  }
  return true
}

const decodeEntry = Schema.decodeUnknownResult(Entry)

/** See `Journal.decodeLine`. */
export const entryOfLine = (text: string | undefined): Entry | string => {
  if (text === undefined) return "the line is not valid UTF-8"
  if (text.length === 0) return "the line is blank (a blank line is tolerated only at the end of the file)"
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return `the line is not JSON: ${error instanceof Error ? error.message : String(error)}`
  }
  const decoded = decodeEntry(json)
  return Result.isSuccess(decoded) ? decoded.success : decoded.failure.message
}

/** One line's entry, or why it is not one: the line alone ({@link entryOfLine}), then the transition. */
export const decodeLine = (text: string | undefined, fold: ReturnType<typeof makeReplay>): Entry | string => {
  const decoded = entryOfLine(text)
  if (typeof decoded === "string") return decoded
  return fold.add(decoded) ?? decoded
}

/**
 * Decodes and folds every complete line in one synchronous pass: each line
 * is decoded as UTF-8 (see `internal/journalLines.ts`), parsed with
 * `JSON.parse`, checked against the entry Schema, and applied by the same
 * transition function that guards appends. Then it tells what follows the
 * last entry: blank lines (tolerated), a cut line, a complete entry without
 * its newline, or bytes no journal writes ({@link JournalNotRecognized}).
 */
export const replay = (
  file: string,
  task: Ids.TaskId,
  bytes: Uint8Array,
  keepEntries: boolean
): Result.Result<Replayed, JournalCorrupt | JournalNotRecognized> => {
  const afterLastNewline = bytes.lastIndexOf(newline) + 1
  const tail = bytes.slice(afterLastNewline)
  // Blank lines ending the file (nothing after them) are tolerated: an editor or a tool may add one.
  let completeBytes = afterLastNewline
  if (tail.length === 0) {
    while (
      completeBytes >= 1 &&
      bytes[completeBytes - 1] === newline &&
      (completeBytes === 1 || bytes[completeBytes - 2] === newline)
    ) {
      completeBytes -= 1
    }
  }
  const blankBytes = afterLastNewline - completeBytes
  const fold = makeReplay(task)
  const entries: Array<Entry> = []
  let line = 0
  const corruption = eachLine(bytes, completeBytes, (text): JournalCorrupt | undefined => {
    line += 1
    const decoded = decodeLine(text, fold)
    if (typeof decoded === "string") return new JournalCorrupt({ file, line, detail: decoded })
    if (keepEntries) entries.push(decoded)
    return undefined
  })
  if (corruption !== undefined) return Result.fail(corruption)
  let tailIsEntry = false
  if (tail.length > 0) {
    const text = utf8Text(tail)
    const asEntry = text === undefined || !text.startsWith('{"_tag":"') ? undefined : decodeLine(text, fold)
    if (asEntry !== undefined && typeof asEntry !== "string") {
      tailIsEntry = true
      if (keepEntries) entries.push(asEntry)
    } else if (!isCutLine(tail)) {
      return Result.fail(
        new JournalNotRecognized({
          file,
          line: line + 1,
          reason:
            afterLastNewline === 0
              ? `is ${tail.length} bytes without a newline that are neither an entry nor the start of one`
              : `ends the file with ${tail.length} bytes that are neither an entry nor the start of one`
        })
      )
    }
  }
  return Result.succeed({ state: fold.state(), entries, completeBytes, blankBytes, tail, tailIsEntry })
}

const tailDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const utf8Text = (bytes: Uint8Array): string | undefined => {
  try {
    return tailDecoder.decode(bytes)
  } catch {
    return undefined
  }
}
