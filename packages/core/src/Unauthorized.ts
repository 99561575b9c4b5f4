/**
 * The one error every ownership, grant and custody check fails with.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { TaskId } from "./Ids.ts"
import { VolumeRef } from "./Volume.ts"

/**
 * Which check refused. Each value names exactly one check, so a caller (or a
 * log reader) never has to parse the message to learn what went wrong.
 *
 * - `OutOfCustody`: the volume is not registered in this runtime's store.
 * - `NotAgentPrivate`: private content may only land on an `AgentPrivate` volume.
 * - `NotAgentOwned`: the volume is owned by the host, not by an agent.
 * - `NotOwnerBound`: the volume is owned by an agent other than the task's.
 * - `MissingWriteGrant` / `MissingReadGrant`: the task holds no such grant.
 * - `GrantForbidden`: the host authority does not allow that grant at all.
 * - `NoPrivateWriter`: the task needs a private writer and none resolves.
 * - `ScopeNotIssued`: the scope was not issued by this runtime's host (built
 *   by hand, or issued by another host), so its grants are not trusted.
 * - `NotMinted`: an object the guards trust (a task context, a task binding,
 *   a runtime, a private-summaries capability, an offload target) was built
 *   by hand or copied instead of being made by the library.
 * - `CapabilityMismatch`: a genuine capability or offload target was used
 *   for another task, agent or runtime than the one it was minted for.
 * - `TaskMismatch`: the journal a turn writes to is not the bound task's.
 * - `VolumeChanged`: the volume a capability was minted for is no longer
 *   registered with the kind and owner it had then.
 * - `AgentMismatch`: the task's journal records another agent than the
 *   binding's: a scope with the same task id issued to another agent
 *   cannot decide, resume or summarize that task.
 * - `CapabilityRequired`: a private volume's folder was asked for without
 *   the capability; private folders are reached only through it.
 *
 * @since 0.1.0
 * @category models
 */
export const UnauthorizedReason = Schema.Literals([
  "OutOfCustody",
  "NotAgentPrivate",
  "NotAgentOwned",
  "NotOwnerBound",
  "MissingWriteGrant",
  "MissingReadGrant",
  "GrantForbidden",
  "NoPrivateWriter",
  "ScopeNotIssued",
  "NotMinted",
  "CapabilityMismatch",
  "TaskMismatch",
  "AgentMismatch",
  "VolumeChanged",
  "CapabilityRequired"
])
/**
 * @since 0.1.0
 * @category models
 */
export type UnauthorizedReason = typeof UnauthorizedReason.Type

/**
 * A task, runtime or host asked for something its grants, ownership or
 * custody do not allow. Nothing was written and no model request was sent
 * by the operation that failed with it.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  reason: UnauthorizedReason,
  detail: Schema.String,
  task: Schema.optionalKey(TaskId),
  volume: Schema.optionalKey(VolumeRef)
}) {
  override get message(): string {
    const where = [
      this.task === undefined ? undefined : `task ${this.task}`,
      this.volume === undefined ? undefined : `volume ${this.volume.store}/${this.volume.volume}`
    ].filter((part) => part !== undefined)
    return `unauthorized (${this.reason}): ${this.detail}${where.length > 0 ? ` [${where.join(", ")}]` : ""}`
  }
}
