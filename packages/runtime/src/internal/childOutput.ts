/**
 * A delegation's output binding, both sides of it: the child's `publish`
 * tool writes what it chooses to hand over into its output volume (and
 * nowhere else), and the parent's delegation receives it, each file read
 * back from that volume and believed only when it matches what the child's
 * journal recorded, then copied into the parent's own private volume behind
 * a pointer. `Delegation` states the contract.
 */

import * as ArtifactOffload from "@tessera/artifacts/ArtifactOffload"
import * as DurableFiles from "@tessera/core/DurableFiles"
import * as Ids from "@tessera/core/Ids"
import type * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import type * as EntryGate from "../EntryGate.ts"
import { Journal } from "../Journal.ts"
import type * as JournalEntry from "../JournalEntry.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"
import * as Tool from "../Tool.ts"
import * as VolumeStore from "../VolumeStore.ts"
import { checkPath, open } from "./artifactAccess.ts"
import { CurrentCall } from "./currentCall.ts"
import { sha256Bytes } from "./digest.ts"
import { entriesOf } from "./journalWriter.ts"
import { offloadedEntry, stripDigestPrefix } from "./offload.ts"
import { dataFolder } from "./storeFolders.ts"

/** See `Delegation.publishToolName`. */
export const publishToolName = "publish"

/** See `Delegation.maxPublishedBytes`. */
export const maxPublishedBytes = 1024 * 1024

/** The folder, inside the output volume's artifact folder, that published files go to. */
const publishedFolder = "published"

/** The folder, inside the parent's artifact folder, that received files are copied to (one folder per child). */
const receivedFolder = "delegated"

/** See `Delegation.PublishProblem`. */
export const PublishProblem = Schema.Literals([
  "NoOutputBinding",
  "InvalidName",
  "InvalidRequest",
  "Empty",
  "TooLarge",
  "AlreadyPublished",
  "ArtifactUnreadable",
  "WriteRefused"
])
/** See `Delegation.PublishProblem`. */
export type PublishProblem = typeof PublishProblem.Type

/** See `Delegation.PublishRefused`. */
export class PublishRefused extends Schema.TaggedError<PublishRefused>()("PublishRefused", {
  name: Schema.String,
  problem: PublishProblem,
  detail: Schema.String
}) {
  override get message(): string {
    return `cannot publish ${JSON.stringify(this.name.slice(0, 160))} (${this.problem}): ${this.detail}`
  }
}

/** See `Delegation.PublishedArtifactChanged`. */
export class PublishedArtifactChanged extends Schema.TaggedError<PublishedArtifactChanged>()(
  "PublishedArtifactChanged",
  {
    task: Ids.TaskId,
    path: Schema.String,
    detail: Schema.String
  }
) {
  override get message(): string {
    return `published artifact ${this.path} of child task ${this.task} is not what its journal recorded: ${this.detail}`
  }
}

// A published name is one file name: it becomes a path below the output volume, so nothing but a plain segment.
const namePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

const refused = (name: string, problem: PublishProblem, detail: string) => new PublishRefused({ name, problem, detail })

/** A publication the child's journal records: an offload into its output volume. */
type Publication = JournalEntry.Entry & { readonly _tag: "ArtifactOffloaded" }

const publicationsIn = (entries: ReadonlyArray<JournalEntry.Entry>, output: Volume.VolumeRef) =>
  entries.filter(
    (entry): entry is Publication =>
      entry._tag === "ArtifactOffloaded" &&
      entry.volume !== undefined &&
      entry.volume.store === output.store &&
      entry.volume.volume === output.volume
  )

const publishedPath = (name: string) => `${VolumeStore.artifactFolder}/${publishedFolder}/${name}`

/** What the publish tool is asked: a name, and the text or the path of one of the child's own artifacts. */
const PublishInput = Schema.Struct({
  name: Schema.String,
  text: Schema.optionalKey(Schema.String),
  artifact: Schema.optionalKey(Schema.String)
})

/** The text to publish: given, or read whole from one of the child's own artifacts (never past the bound). */
const contentOf = Effect.fnUntraced(function* (binding: EntryGate.TaskBinding, input: typeof PublishInput.Type) {
  const { artifact, name, text } = input
  if ((text === undefined) === (artifact === undefined)) {
    return yield* refused(name, "InvalidRequest", "give exactly one of `text` and `artifact`")
  }
  if (text !== undefined) return text
  const path = artifact as string
  const segments = checkPath(path)
  if (segments._tag === "Failure") return yield* refused(name, "ArtifactUnreadable", segments.failure.message)
  const found = yield* open(binding.context, path, segments.success, { offset: 0, maxBytes: maxPublishedBytes }).pipe(
    Effect.mapError((error) => refused(name, "ArtifactUnreadable", error.message))
  )
  if (found.size > maxPublishedBytes) {
    return yield* refused(name, "TooLarge", `the artifact is ${found.size} bytes; at most ${maxPublishedBytes} publish`)
  }
  return yield* Effect.try({
    try: () => new TextDecoder("utf-8", { fatal: true }).decode(found.bytes),
    catch: () => refused(name, "ArtifactUnreadable", "the artifact is not UTF-8 text")
  })
})

/** The child's publish tool (see `Delegation.publishToolName`): writes only into `binding`'s output volume. */
export const publishTool = (binding: EntryGate.TaskBinding) =>
  Tool.make({
    name: publishToolName,
    description:
      "Hands a file to the agent that gave you this task: give it a file name and either its `text` or the path of one of your artifacts (`artifact`, as its pointer names it). Only your answer and what you publish reach that agent; each name is published once.",
    input: PublishInput,
    // Run again on resume, the same call writes the same bytes under the same name, recorded once.
    idempotent: true,
    handler: (input) =>
      Effect.gen(function* () {
        const position = yield* CurrentCall
        if (Option.isNone(position)) return yield* Effect.die(new Error("publish runs only as a dispatched call"))
        const { callId, step, turn } = position.value
        const { name } = input
        if (Option.isNone(binding.context.output)) {
          return yield* refused(name, "NoOutputBinding", "this task was given no output volume to publish to")
        }
        if (!namePattern.test(name)) {
          return yield* refused(
            name,
            "InvalidName",
            "expected a file name of letters, digits, `.`, `_` and `-` (at most 128, not starting with `.`)"
          )
        }
        const output = binding.context.output.value.ref
        const content = yield* contentOf(binding, input)
        if (content.length === 0) return yield* refused(name, "Empty", "there is nothing to publish")
        const journal = yield* Journal
        const path = yield* Path.Path
        const earlier = publicationsIn(yield* entriesOf(journal), output).find(
          (entry) => entry.path === publishedPath(name)
        )
        const again =
          earlier !== undefined && earlier.turn === turn && earlier.step === step && earlier.callId === callId
        if (earlier !== undefined && !again) {
          return yield* refused(name, "AlreadyPublished", "a file of this name is published already; choose another")
        }
        const folder = dataFolder(binding.context.runtime.host.store, output)
        const written = yield* ArtifactOffload.offload({
          content,
          threshold: 0,
          root: path.join(folder, VolumeStore.artifactFolder),
          target: `${publishedFolder}/${name}`,
          readTool: publishToolName
        })
        if (written._tag === "Inline") {
          const reason = Option.match(written.reason, { onNone: () => "not written", onSome: (why) => why.message })
          return yield* refused(name, written.content.length > maxPublishedBytes ? "TooLarge" : "WriteRefused", reason)
        }
        if (written.size > maxPublishedBytes) {
          return yield* refused(name, "TooLarge", `${written.size} bytes; at most ${maxPublishedBytes} publish`)
        }
        if (!again) {
          yield* journal.append({
            _tag: "ArtifactOffloaded",
            turn,
            step,
            callId,
            volume: output,
            path: publishedPath(name),
            size: written.size,
            sha256: stripDigestPrefix(written.digest)
          })
        }
        return `published ${name} (${written.size} bytes) for the agent that gave you this task`
      })
  })

/** A published file as the parent received it: its name, what the child's journal says of it, and what the model sees. */
export interface Received {
  readonly name: string
  readonly size: number
  readonly sha256: string
  /** The pointer to the parent's copy, or the text itself when the parent has no private volume. */
  readonly shown: string
}

/**
 * What `child` published, for `parent`: each file its journal records in its output volume, read back and
 * believed only when its size and digest are the recorded ones (`PublishedArtifactChanged` otherwise), then
 * copied into the parent's private volume (`delegated/<child task>/<name>`, journaled in the parent's journal as
 * the call's offload) and shown as the copy's pointer; a parent with no private writer gets the text itself.
 */
export const receive = Effect.fnUntraced(function* (
  parent: EntryGate.TaskBinding,
  child: EntryGate.TaskBinding,
  childEntries: ReadonlyArray<JournalEntry.Entry>,
  call: {
    readonly parentJournal: Journal["Service"]
    readonly turn: number
    readonly step: number
    readonly callId: string
    readonly readTool: string
  }
) {
  if (Option.isNone(child.context.output)) return [] as ReadonlyArray<Received>
  const output = child.context.output.value.ref
  const durable = yield* DurableFiles.DurableFiles
  const path = yield* Path.Path
  const folder = dataFolder(child.context.runtime.host.store, output)
  const capability = yield* PrivateSummaries.resolveOption(parent.context)
  const received: Array<Received> = []
  for (const publication of publicationsIn(childEntries, output)) {
    const name = publication.path.slice(publishedPath("").length)
    const changed = (detail: string) =>
      new PublishedArtifactChanged({ task: child.context.task, path: publication.path, detail })
    // Only names the publish tool writes: a journal entry naming any other place is not a publication.
    if (!publication.path.startsWith(publishedPath("")) || !namePattern.test(name)) {
      return yield* changed("the journal names a place the publish tool never writes")
    }
    const read = yield* durable
      .readFile(path.join(folder, publication.path), { within: folder, maxBytes: publication.size + 1 })
      .pipe(Effect.mapError((error) => changed(`it cannot be read back (${error._tag})`)))
    const digest = yield* sha256Bytes(read.bytes)
    if (read.size !== publication.size || digest !== publication.sha256) {
      return yield* changed(
        `recorded ${publication.size} bytes with sha256 ${publication.sha256}, found ${read.size} bytes with sha256 ${digest}`
      )
    }
    const text = new TextDecoder().decode(read.bytes)
    if (Option.isNone(capability)) {
      received.push({ name, size: publication.size, sha256: publication.sha256, shown: text })
      continue
    }
    const copied = yield* ArtifactOffload.offload({
      content: text,
      threshold: 0,
      root: path.join(capability.value.folder, VolumeStore.artifactFolder),
      target: `${receivedFolder}/${child.context.task}/${name}`,
      readTool: call.readTool
    })
    if (copied._tag === "Inline") {
      received.push({ name, size: publication.size, sha256: publication.sha256, shown: text })
      continue
    }
    yield* call.parentJournal.append(
      offloadedEntry({ turn: call.turn, step: call.step, callId: call.callId }, capability.value.volume, copied)
    )
    received.push({ name, size: publication.size, sha256: publication.sha256, shown: copied.pointer })
  }
  return received as ReadonlyArray<Received>
})
