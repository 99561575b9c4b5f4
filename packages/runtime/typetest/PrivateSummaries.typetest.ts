/**
 * Type tests: each `@ts-expect-error` line must fail to compile. If a change
 * makes one compile, tsc reports the directive as unused and `npm test` fails.
 */
import type { DurableFiles, Ids, PrivateWriter, Volume } from "@tessera/core"
import { Compaction, PrivateSummaries, ToolResults } from "@tessera/runtime"
import type { Effect, FileSystem, Path } from "effect"

declare const key: PrivateSummaries.StagingKey
declare const writer: PrivateWriter.VerifiedPrivateWriter
declare const task: Ids.TaskId
declare const agent: Ids.AgentId
declare const volume: Volume.VolumeRef

type Platform = DurableFiles.DurableFiles | FileSystem.FileSystem | Path.Path

// Staging needs the PrivateSummaries capability in its requirements: code that
// did not resolve (and provide) one cannot run it with only the platform.
// @ts-expect-error
export const stagedWithoutCapability: Effect.Effect<unknown, unknown, Platform> = PrivateSummaries.stageOnce(key, "x")

// Once a resolved capability is provided, the requirement is gone.
declare const resolved: PrivateSummaries.PrivateWriterCapability
export const stagedWithCapability: Effect.Effect<unknown, unknown, Platform> = PrivateSummaries.stageOnce(
  key,
  "x"
).pipe(PrivateSummaries.provide(resolved))

// Publishing a summary needs it too.
// @ts-expect-error
export const publishWithoutCapability: Effect.Effect<unknown, unknown, Platform> = Compaction.publish({
  key,
  summary: "x",
  journal: undefined as never
})

// So does the private offload target.
// @ts-expect-error
export const privateOffloadWithoutCapability: Effect.Effect<unknown, unknown, Path.Path> = ToolResults.privateTarget

// A capability cannot be built outside the library: its brand is unreachable.
// @ts-expect-error
export const forged: PrivateSummaries.PrivateWriterCapability = {
  writer,
  folder: "/tmp",
  source: "RuntimePrivate",
  task,
  agent,
  volume
}

// Nor through the service's constructor.
// @ts-expect-error
export const forgedService = PrivateSummaries.PrivateSummaries.of({ writer, folder: "/tmp", source: "RuntimePrivate" })

// Every field of a genuine capability but its brand (string keys only) is still not a capability: the brand
// is required, so making it optional would make this compile and fail the type test.
type WithoutBrand = {
  [K in keyof PrivateSummaries.PrivateWriterCapability as K extends string
    ? K
    : never]: PrivateSummaries.PrivateWriterCapability[K]
}
declare const everythingButTheBrand: WithoutBrand
// @ts-expect-error
export const forgedWithEveryField: PrivateSummaries.PrivateWriterCapability = everythingButTheBrand
