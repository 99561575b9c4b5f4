/**
 * A `JournalStorage.JournalFile` (the runtime's append-only journal writer) on the Origin
 * Private File System, chosen by where it runs:
 *
 * - In a dedicated worker, a synchronous access handle: the file is locked
 *   for this handle alone (another handle on it, in any tab or worker, fails
 *   to open), each append is one write at the end followed by `flush`, and
 *   both operations are offered as blocking calls, so the journal makes an
 *   append and its cut-back in one synchronous step.
 * - In a page (synchronous handles exist only in dedicated workers), a
 *   writable stream per append: the whole line is committed when the stream
 *   closes, or nothing is. One writer per journal is then the journal's own
 *   claim (`Journal.TaskInUse`) plus the namespace's Web Lock
 *   (`WebLockNamespace`), which keeps a second tab off the namespace.
 *
 * Either way an append succeeds only after its bytes are committed to the
 * origin's storage (`flush` returned, or the stream closed). Committing the
 * page variant copies the file into a swap file, so an append costs time in
 * proportion to the journal's size; a long-running page host should run its
 * tasks in a worker.
 *
 * @since 0.1.0
 */
import * as JournalStorage from "@tessera/runtime/JournalStorage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { fileAt } from "./internal/opfs.ts"

type Operation = JournalStorage.JournalFileError["operation"]

const journalError = (operation: Operation, error: unknown) =>
  new JournalStorage.JournalFileError({
    operation,
    detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  })

const attempt = (operation: Operation, body: () => Promise<void>) =>
  Effect.tryPromise({ try: body, catch: (error) => journalError(operation, error) })

const encoder = new TextEncoder()

/** Synchronous access handles are defined only in dedicated workers. */
const syncHandlesAvailable = (): boolean =>
  typeof FileSystemFileHandle !== "undefined" && "createSyncAccessHandle" in FileSystemFileHandle.prototype

interface SyncAccessHandle {
  readonly write: (bytes: Uint8Array, options: { readonly at: number }) => number
  readonly truncate: (size: number) => void
  readonly getSize: () => number
  readonly flush: () => void
  readonly close: () => void
}

/** A blocking call that throws its `JournalFileError`, and the same call as an effect. */
const blockingCall = <A>(operation: Operation, body: (value: A) => void) => {
  const blocking = (value: A): void => {
    try {
      body(value)
    } catch (error) {
      throw journalError(operation, error)
    }
  }
  const effect = (value: A): Effect.Effect<void, JournalStorage.JournalFileError> =>
    Effect.try({ try: () => body(value), catch: (error) => journalError(operation, error) })
  return { blocking, effect }
}

const handleOf = (access: SyncAccessHandle): JournalStorage.AppendHandle => {
  const writeLine = (line: string) => {
    const bytes = encoder.encode(line)
    let written = 0
    while (written < bytes.length) written += access.write(bytes.subarray(written), { at: access.getSize() })
  }
  const write = blockingCall("append", writeLine)
  const sync = blockingCall("sync", () => access.flush())
  const append = blockingCall("append", (line: string) => {
    writeLine(line)
    access.flush()
  })
  const truncate = blockingCall("truncate", (size: number) => {
    access.truncate(size)
    access.flush()
  })
  return {
    append: append.effect,
    write: write.effect,
    sync: sync.effect(undefined),
    truncate: truncate.effect,
    blocking: {
      append: append.blocking,
      write: write.blocking,
      sync: () => sync.blocking(undefined),
      truncate: truncate.blocking
    }
  }
}

const openSync = (
  file: string
): Effect.Effect<JournalStorage.AppendHandle, JournalStorage.JournalFileError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const handle = (await fileAt(file, true)) as unknown as {
          readonly createSyncAccessHandle: () => Promise<SyncAccessHandle>
        }
        return handle.createSyncAccessHandle()
      },
      catch: (error) => journalError("open", error)
    }),
    (access) => Effect.sync(() => access.close())
  ).pipe(Effect.map(handleOf))

const openStreamed = (file: string): Effect.Effect<JournalStorage.AppendHandle, JournalStorage.JournalFileError> =>
  Effect.tryPromise({ try: () => fileAt(file, true), catch: (error) => journalError("open", error) }).pipe(
    Effect.map((handle): JournalStorage.AppendHandle => {
      // A writable stream commits its bytes when it closes: every write is as durable as the platform makes it.
      const append = (line: string) =>
        attempt("append", async () => {
          const size = (await handle.getFile()).size
          const writable = await handle.createWritable({ keepExistingData: true })
          try {
            await writable.write({ type: "write", position: size, data: line })
          } catch (error) {
            await writable.abort().catch(() => undefined)
            throw error
          }
          await writable.close()
        })
      return {
        append,
        write: append,
        sync: Effect.void,
        truncate: (size) =>
          attempt("truncate", async () => {
            const writable = await handle.createWritable({ keepExistingData: true })
            await writable.truncate(size)
            await writable.close()
          })
      }
    })
  )

/**
 * The OPFS implementation: a synchronous access handle in a dedicated
 * worker, a writable stream per append elsewhere.
 *
 * @since 0.1.0
 * @category implementations
 */
export const opfs: JournalStorage.JournalFileShape = {
  openAppend: (file) => (syncHandlesAvailable() ? openSync(file) : openStreamed(file))
}

/**
 * Provides {@link opfs} as the runtime's `JournalStorage.JournalFile`. Adds no requirement
 * and satisfies none.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never> = Layer.succeed(JournalStorage.JournalFile)(opfs)
