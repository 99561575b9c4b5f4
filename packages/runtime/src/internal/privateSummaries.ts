/**
 * The only place a private-summaries capability is minted. Not exported from
 * the package (`./internal/*` is blocked in its exports), so code outside the
 * library can neither name the brand nor call the constructor.
 */
import type * as Ids from "@tessera/core/Ids"
import type * as PrivateWriter from "@tessera/core/PrivateWriter"
import type * as Volume from "@tessera/core/Volume"
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

// A cast can forge the type; it cannot forge membership here, so every
// writer re-checks that its capability was really minted by the library.
export const capabilities = makeRegistry<Capability>("private-summaries capability")

export const mint = (fields: CapabilityFields): Capability =>
  capabilities.mint<Capability>({
    [PrivateSummariesTypeId]: PrivateSummariesTypeId,
    task: fields.writer.task,
    agent: fields.writer.agent,
    volume: fields.writer.ref,
    ...fields
  })

export const isMinted = capabilities.has
