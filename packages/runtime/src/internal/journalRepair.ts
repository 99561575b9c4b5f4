/**
 * `Journal.repair`: a journal refused as corrupt replaced, atomically, by its
 * longest valid prefix and a `JournalRepaired` entry saying what was dropped.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import type { Entry } from "../JournalEntry.ts"
import { sha256Bytes } from "./digest.ts"
import { eachLine } from "./journalLines.ts"
import { decodeLine, encodeEntry, newline, replay } from "./journalReplay.ts"
import { JournalIoError, type JournalLocation, type Repaired, type TaskInUse } from "./journalService.ts"
import { makeReplay } from "./journalState.ts"
import { claimWriter, fileName, mediumError, writerMediumAt } from "./journalWriter.ts"

/** `Journal.repair` (see its contract). */
export const repairJournal = Effect.fnUntraced(function* (
  location: JournalLocation
): Effect.fn.Return<Option.Option<Repaired>, JournalIoError | TaskInUse, FileSystem.FileSystem | Path.Path> {
  const path = yield* Path.Path
  const task = location.task
  const file = path.resolve(location.folder, fileName(task))
  const ioError = (operation: string) => (error: { readonly message: string }) =>
    new JournalIoError({ file, operation, detail: error.message })
  return yield* Effect.scoped(
    Effect.gen(function* () {
      yield* claimWriter(task, file)
      const medium = yield* writerMediumAt(location.folder, file)
      const read = yield* medium.read.pipe(Effect.mapError(mediumError(file)))
      if (Option.isNone(read)) return yield* ioError("read")({ message: "the journal does not exist" })
      const bytes = read.value
      if (Result.isSuccess(replay(file, task, bytes, false))) return Option.none<Repaired>()
      // The longest prefix of lines that decode and follow one another.
      const fold = makeReplay(task)
      let keptBytes = 0
      let line = 0
      const completeBytes = bytes.lastIndexOf(newline) + 1
      const refusal = eachLine(bytes, completeBytes, (text) => {
        line += 1
        const decoded = decodeLine(text, fold)
        if (typeof decoded === "string") return decoded
        keptBytes = bytes.indexOf(newline, keptBytes) + 1
        return undefined
      })
      const detail = refusal ?? "the bytes after the last line are not an entry"
      const firstDropped = refusal === undefined ? line + 1 : line
      const dropped = bytes.subarray(keptBytes)
      const kept = fold.state()
      const at = yield* Clock.currentTimeMillis
      const entry: Entry = {
        _tag: "JournalRepaired",
        seq: kept.entries,
        at,
        line: firstDropped,
        keptBytes,
        droppedBytes: Math.max(1, dropped.length),
        droppedSha256: yield* sha256Bytes(Uint8Array.from(dropped)),
        detail
      }
      const encoded = encodeEntry(entry)
      if (Result.isFailure(encoded)) {
        return yield* new JournalIoError({ file, operation: "repair", detail: encoded.failure.message })
      }
      const lineBytes = new TextEncoder().encode(`${JSON.stringify(encoded.success)}\n`)
      const repaired = new Uint8Array(keptBytes + lineBytes.length)
      repaired.set(bytes.subarray(0, keptBytes))
      repaired.set(lineBytes, keptBytes)
      yield* medium.replace(repaired).pipe(Effect.mapError(mediumError(file)))
      return Option.some<Repaired>({
        line: firstDropped,
        keptEntries: kept.entries,
        keptBytes,
        droppedBytes: dropped.length,
        detail
      })
    })
  )
})
