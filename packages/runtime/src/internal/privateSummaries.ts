/**
 * The only place a private-summaries capability is minted, and the one
 * admission every write of private content goes through. Not exported from
 * the package (`./internal/*` is blocked in its exports), so code outside the
 * library can neither name the brand nor call the constructor;
 * `PrivateSummaries` states the contract.
 */
import type * as Ids from "@tessera/core/Ids"
import type * as PrivateWriter from "@tessera/core/PrivateWriter"
import * as Unauthorized from "@tessera/core/Unauthorized"
import * as Volume from "@tessera/core/Volume"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type { JournalService } from "../Journal.ts"
import type { StoreIoError, VolumeMetadataInvalid } from "../VolumeStore.ts"
import { isRecordOf } from "./journalIdentity.ts"
import type { FilesystemTaskRuntime } from "./storeRuntime.ts"
import { makeRegistry } from "./trusted.ts"

/** Brand key of the capability; a `unique symbol`, so no other value has its type. */
export const PrivateSummariesTypeId: unique symbol = Symbol.for("@tessera/runtime/PrivateSummaries")

/** Where the writer came from, in resolution order. */
export type CapabilitySource = "CreatedPrivate" | "RuntimePrivate" | "OutputBinding"

export interface CapabilityFields {
  readonly writer: PrivateWriter.VerifiedPrivateWriter
  readonly folder: string
  readonly source: CapabilitySource
  readonly runtime: FilesystemTaskRuntime
}

export interface Capability extends CapabilityFields {
  readonly [PrivateSummariesTypeId]: typeof PrivateSummariesTypeId
  readonly task: Ids.TaskId
  readonly agent: Ids.AgentId
  readonly volume: Volume.VolumeRef
}

/** See `PrivateSummaries.PrivateSummaries`. */
export class PrivateSummaries extends Context.Service<PrivateSummaries, Capability>()(
  "@tessera/runtime/PrivateSummaries"
) {}

/** See `PrivateSummaries.ResolveError`. */
export type ResolveError = Unauthorized.Unauthorized | VolumeMetadataInvalid | StoreIoError

/** What a capability is checked against: the journal of the task it writes for. */
export type JournalRecord = Pick<JournalService, "task" | "file">

// A cast can forge the type; it cannot forge membership here, so every
// writer re-checks that its capability was really minted by the library.
const capabilities = makeRegistry<Capability>("private-summaries capability")

export const mint = (fields: CapabilityFields): Capability =>
  capabilities.mint<Capability>({
    [PrivateSummariesTypeId]: PrivateSummariesTypeId,
    task: fields.writer.task,
    agent: fields.writer.agent,
    volume: fields.writer.ref,
    ...fields
  })

const refuse = (reason: Unauthorized.UnauthorizedReason, detail: string, capability?: Capability) =>
  new Unauthorized.Unauthorized({
    reason,
    detail,
    ...(capability === undefined ? {} : { task: capability.task, volume: capability.volume })
  })

/**
 * The checks of an admission that read nothing: the capability in scope was
 * minted, and bound to `journal`'s task on its store when one is given.
 * Enough for a read, which writes nothing.
 */
export const mintedFor = Effect.fnUntraced(function* (
  entry: string,
  journal: Option.Option<JournalRecord>
): Effect.fn.Return<Capability, Unauthorized.Unauthorized, PrivateSummaries | Path.Path> {
  const given = yield* PrivateSummaries
  if (!capabilities.has(given)) {
    return yield* refuse(
      "NotMinted",
      `${entry}: the private-summaries capability was not minted by PrivateSummaries.resolve (forged or copied)`
    )
  }
  if (Option.isSome(journal)) {
    const record = journal.value
    const path = yield* Path.Path
    if (!isRecordOf(record, given.task, given.runtime.host.store.root, path)) {
      return yield* refuse(
        "CapabilityMismatch",
        `${entry}: the capability was minted for task ${given.task} (agent ${given.agent}) on store ${given.volume.store}, but the journal ${record.file} is task ${record.task}'s, or not that store's`,
        given
      )
    }
  }
  return given
})

/** See `PrivateSummaries.admit`: {@link mintedFor}, then the one read of the volume's registration. */
export const admit = Effect.fnUntraced(function* (
  entry: string,
  journal: Option.Option<JournalRecord>
): Effect.fn.Return<Capability, ResolveError, PrivateSummaries | Path.Path> {
  const capability = yield* mintedFor(entry, journal)
  const now = yield* capability.runtime.host.store.custody(capability.volume)
  const then = capability.writer.descriptor
  if (Option.isNone(now) || now.value.kind !== then.kind || !Volume.sameOwner(now.value.owner, then.owner)) {
    return yield* refuse(
      "VolumeChanged",
      `${entry}: volume ${capability.volume.store}/${capability.volume.volume} is no longer registered as it was when the capability was minted`,
      capability
    )
  }
  return capability
})
