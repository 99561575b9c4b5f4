/**
 * Identifiers shared by every Tessera package.
 *
 * Each identifier is a branded string decoded through `effect/Schema`, so a
 * value of type {@link AgentId} is known to have passed the same check no
 * matter where it came from (configuration, JSON on disk, a host API).
 *
 * The identifier alphabet is deliberately narrow: identifiers become folder
 * and file names, so they can never contain a separator, a NUL, or start with
 * a dot.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const identifierPattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/

const identifierText = Schema.String.check(
  Schema.isPattern(identifierPattern, {
    message: 'an identifier is 1 to 128 characters of letters, digits, "_" or "-", starting with a letter or digit'
  })
)

/**
 * The agent that owns private content (summaries, offloaded artifacts).
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { Exit, Schema } from "effect"
 *
 * // Decoding is the only way to an AgentId: the value passed the identifier check.
 * export const agent: Ids.AgentId = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 *
 * // A separator, a leading dot, a NUL or more than 128 characters is refused.
 * console.log(Exit.isFailure(Schema.decodeUnknownExit(Ids.AgentId)("../researcher"))) // true
 * ```
 *
 * @since 0.1.0
 * @category identifiers
 */
export const AgentId = identifierText.pipe(Schema.brand("AgentId"))
/**
 * @since 0.1.0
 * @category identifiers
 */
export type AgentId = typeof AgentId.Type

/**
 * One task run by a runtime; journals and summaries are keyed by it.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { Schema } from "effect"
 *
 * export const task: Ids.TaskId = Schema.decodeUnknownSync(Ids.TaskId)("survey-1")
 *
 * // @ts-expect-error a plain string is not a TaskId: it has not been checked
 * export const unchecked: Ids.TaskId = "survey-1"
 * ```
 *
 * @since 0.1.0
 * @category identifiers
 */
export const TaskId = identifierText.pipe(Schema.brand("TaskId"))
/**
 * @since 0.1.0
 * @category identifiers
 */
export type TaskId = typeof TaskId.Type

/**
 * A volume within one store; also the volume's folder name on disk.
 *
 * @example
 * ```ts
 * import { Ids, Volume } from "@tessera/core"
 * import { TaskHost } from "@tessera/runtime"
 * import { Effect, Schema } from "effect"
 *
 * const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)
 *
 * export const createJournal = Effect.gen(function* () {
 *   const host = yield* TaskHost.open({ root: "/srv/tessera/store" })
 *   // The volume's data lives in a folder named by its id, under the store's root.
 *   return yield* host.store.create({ id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner })
 * })
 * ```
 *
 * @since 0.1.0
 * @category identifiers
 */
export const VolumeId = identifierText.pipe(Schema.brand("VolumeId"))
/**
 * @since 0.1.0
 * @category identifiers
 */
export type VolumeId = typeof VolumeId.Type

/**
 * A volume store. Custody compares it, so a reference minted by one store is
 * never mistaken for a volume of another.
 *
 * @since 0.1.0
 * @category identifiers
 */
export const StoreId = identifierText.pipe(Schema.brand("StoreId"))
/**
 * @since 0.1.0
 * @category identifiers
 */
export type StoreId = typeof StoreId.Type

/**
 * Names one operation that stages private files (a compaction, a direct
 * summary); summaries of an operation live under `summaries/<operation>/`.
 *
 * @since 0.1.0
 * @category identifiers
 */
export const OperationId = identifierText.pipe(Schema.brand("OperationId"))
/**
 * @since 0.1.0
 * @category identifiers
 */
export type OperationId = typeof OperationId.Type
