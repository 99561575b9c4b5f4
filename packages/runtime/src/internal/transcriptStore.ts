/**
 * A task's transcript records on a volume's data folder: reading them
 * (checked against the digest each is named by), writing them write-once
 * (scrubbed first when a redactor is in context), and the stored form of a
 * history and its summary (a staged summary kept as its reference, read
 * back and checked).
 */
import * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
import * as DurableFiles from "@tessera/core/DurableFiles"
import type * as Ids from "@tessera/core/Ids"
import type * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import type * as History from "../History.ts"
import type { Part } from "../Model.ts"
import * as VolumeStore from "../VolumeStore.ts"
import { summaryParts } from "./compacting.ts"
import { sha256Bytes } from "./digest.ts"
import { publishNew } from "./privateFiles.ts"
import {
  Responded,
  Resulted,
  type StoredHistory,
  type StoredSummary,
  storedBodySha256,
  TranscriptError,
  type TranscriptRecord,
  TranscriptRecordJson,
  type TranscriptStore,
  type WrittenBody
} from "./transcriptRecords.ts"
import { type Redact, scrubRecord } from "./transcriptScrub.ts"

const encodeRecord = Schema.encodeEffect(TranscriptRecordJson)
const decodeRecord = Schema.decodeUnknownEffect(TranscriptRecordJson)
// A record with a body (a response or a result), as a reader decodes it: any other record is a decode failure.
const decodeBodyRecord = Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.Union([Responded, Resulted])))
const encoder = new TextEncoder()
const decoder = new TextDecoder("utf-8", { fatal: true })

/**
 * The transcript store of `location.task` in the data folder `location.folder`
 * of `location.volume`. Reads and writes go through `DurableFiles`, within
 * the folder; every write is scrubbed with the `ArtifactRedactor` in context,
 * if any.
 */
export const storeAt = Effect.fnUntraced(function* (location: {
  readonly folder: string
  readonly task: Ids.TaskId
  readonly volume: Volume.VolumeRef
}) {
  const files = yield* DurableFiles.DurableFiles
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const redactor = yield* ArtifactRedactor.provided
  const task = location.task
  const folder = location.folder
  const volume = location.volume
  const written = new Set<string>()
  const absolute = (sha256: string) => path.join(folder, VolumeStore.transcriptPath(task, sha256))
  const failure = (operation: string, at: string) => (error: { readonly message: string }) =>
    new TranscriptError({ operation, path: at, detail: error.message })

  const redact: Option.Option<Redact> = Option.map(
    redactor,
    (service) => (body: string) =>
      service
        .redact(body)
        .pipe(
          Effect.mapError((error) => new TranscriptError({ operation: "redact", path: folder, detail: error.message }))
        )
  )

  // Named by its digest: a file already there holds these bytes (a read checks it).
  const publish = (sha256: string, bytes: Uint8Array): Effect.Effect<void, TranscriptError> =>
    publishNew(folder, absolute(sha256), bytes).pipe(
      Effect.asVoid,
      Effect.mapError(failure("write", absolute(sha256))),
      Effect.provideService(DurableFiles.DurableFiles, files),
      Effect.provideService(FileSystem.FileSystem, fs),
      Effect.provideService(Path.Path, path)
    )

  const writeRecord = (given: TranscriptRecord) =>
    Effect.gen(function* () {
      let record = given
      let changed = false
      if (Option.isSome(redact)) {
        const scrubbed = yield* scrubRecord(redact.value, given)
        const plain = yield* encodeRecord(given).pipe(Effect.mapError(failure("encode", folder)))
        const clean = yield* encodeRecord(scrubbed).pipe(Effect.mapError(failure("encode", folder)))
        changed = plain !== clean
        record = { ...scrubbed, redacted: given.redacted || changed }
      }
      const json = yield* encodeRecord(record).pipe(Effect.mapError(failure("encode", folder)))
      const bytes = encoder.encode(json)
      const sha256 = yield* sha256Bytes(bytes)
      if (!written.has(sha256)) {
        yield* publish(sha256, bytes)
        written.add(sha256)
      }
      return { sha256, json, changed }
    })

  const write = (given: TranscriptRecord): Effect.Effect<string, TranscriptError> =>
    Effect.map(writeRecord(given), ({ sha256 }) => sha256)

  const writeBody = (given: TranscriptRecord): Effect.Effect<WrittenBody, TranscriptError> =>
    Effect.gen(function* () {
      const { changed, json, sha256 } = yield* writeRecord(given)
      if (!changed) return { transcript: sha256 }
      if (given._tag !== "Responded" && given._tag !== "Resulted") return { transcript: sha256, storedSha256: sha256 }
      // Measured on the record as a reader decodes it from these bytes, so a rebuild measures the same value.
      const stored = yield* decodeBodyRecord(json).pipe(Effect.mapError(failure("decode", absolute(sha256))))
      return { transcript: sha256, storedSha256: yield* storedBodySha256(stored) }
    })

  const readBytes = (file: string, operation: string) =>
    files.readFile(file, { within: folder }).pipe(
      Effect.map((read) => read.bytes),
      Effect.mapError(failure(operation, file))
    )

  const read = (sha256: string): Effect.Effect<TranscriptRecord, TranscriptError> =>
    Effect.gen(function* () {
      const file = absolute(sha256)
      const bytes = yield* readBytes(file, "read")
      const actual = yield* sha256Bytes(Uint8Array.from(bytes))
      if (actual !== sha256) {
        return yield* new TranscriptError({
          operation: "read",
          path: file,
          detail: `its bytes have digest ${actual}, not the ${sha256} it is named by`
        })
      }
      const json = yield* Effect.try({
        try: () => decoder.decode(bytes),
        catch: () => new TranscriptError({ operation: "read", path: file, detail: "not UTF-8" })
      })
      return yield* decodeRecord(json).pipe(Effect.mapError(failure("decode", file)))
    })

  const hashed = (text: string) => {
    const bytes = encoder.encode(text)
    return Effect.map(sha256Bytes(bytes), (sha256) => ({ size: bytes.length, sha256 }))
  }

  const storeSummary = (summary: History.HistorySummary): Effect.Effect<StoredSummary> =>
    Effect.gen(function* () {
      const reference = summary.parts[0]
      if (
        reference !== undefined &&
        reference._tag === "FileReference" &&
        reference.volume.store === volume.store &&
        reference.volume.volume === volume.volume &&
        samePartsJson(summary.parts, summaryParts(reference, summary.text))
      ) {
        // A summary compaction staged carries its file's digest; only one built by hand is hashed here.
        const file =
          summary.file !== undefined && summary.file.path === reference.path
            ? summary.file
            : yield* hashed(summary.text)
        return {
          _tag: "SummaryRef",
          volume: reference.volume,
          path: reference.path,
          size: file.size,
          sha256: file.sha256
        } as const
      }
      return { _tag: "SummaryInline", parts: summary.parts, text: summary.text } as const
    })

  const restoreSummary = (stored: StoredSummary): Effect.Effect<History.HistorySummary, TranscriptError> =>
    Effect.gen(function* () {
      if (stored._tag === "SummaryInline") return { parts: stored.parts, text: stored.text }
      const file = path.join(folder, stored.path)
      if (DurableFiles.relativeWithin(folder, path.resolve(file), path) === undefined) {
        return yield* new TranscriptError({
          operation: "read summary",
          path: file,
          detail: "outside the private volume"
        })
      }
      const bytes = yield* readBytes(file, "read summary")
      const actual = yield* sha256Bytes(Uint8Array.from(bytes))
      if (actual !== stored.sha256) {
        return yield* new TranscriptError({
          operation: "read summary",
          path: file,
          detail: `the staged summary has digest ${actual}, not the ${stored.sha256} the transcript recorded`
        })
      }
      const summaryText = decoder.decode(bytes)
      return {
        parts: summaryParts({ volume: stored.volume, path: stored.path }, summaryText),
        text: summaryText,
        file: { volume: stored.volume, path: stored.path, size: bytes.length, sha256: actual }
      }
    })

  const store = (history: History.History): Effect.Effect<StoredHistory> => withSummary(history, storeSummary)

  const restore = (stored: StoredHistory): Effect.Effect<History.History, TranscriptError> =>
    withSummary(stored, restoreSummary)

  const transcript: TranscriptStore = {
    task,
    volume,
    write,
    writeBody,
    read,
    restore,
    store,
    storeSummary,
    restoreSummary
  }
  return transcript
})

/** A history with its summary, if it has one, turned by `f`: a history and its stored form differ only there. */
const withSummary = <S, T, E>(
  history: { readonly task: ReadonlyArray<Part>; readonly parts: ReadonlyArray<Part>; readonly summary?: S },
  f: (summary: S) => Effect.Effect<T, E>
): Effect.Effect<
  { readonly task: ReadonlyArray<Part>; readonly parts: ReadonlyArray<Part>; readonly summary?: T },
  E
> =>
  history.summary === undefined
    ? Effect.succeed({ task: history.task, parts: history.parts })
    : Effect.map(f(history.summary), (summary) => ({ task: history.task, parts: history.parts, summary }))

const samePartsJson = (a: ReadonlyArray<Part>, b: ReadonlyArray<Part>): boolean =>
  a.length === b.length && JSON.stringify(a) === JSON.stringify(b)
