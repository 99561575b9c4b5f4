/**
 * The single verdict on whether a volume may receive a task's private content.
 *
 * Every path that binds a private writer (opening a runtime with a private
 * volume, resolving the private-summaries capability, private artifact
 * offload) asks this module and nothing else, so the rules live in one place.
 *
 * @since 0.1.0
 */
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type { Scope } from "./Grant.ts"
import { holds } from "./Grant.ts"
import type { AgentId, TaskId } from "./Ids.ts"
import { Unauthorized } from "./Unauthorized.ts"
import type { VolumeDescriptor, VolumeRef } from "./Volume.ts"
import { formatOwner } from "./Volume.ts"

/**
 * What the verdict looks at: the volume reference, the facts the store holds
 * about it (`None` when the store does not have it in custody), and the scope
 * of the task that wants to write.
 *
 * @since 0.1.0
 * @category models
 */
export interface PrivateWriterCandidate {
  readonly ref: VolumeRef
  readonly custody: Option.Option<VolumeDescriptor>
  readonly scope: Scope
}

/**
 * A volume that passed every private-writer check, with the facts that were
 * checked. Only {@link checkPrivateWriter} produces one.
 *
 * @since 0.1.0
 * @category models
 */
export interface VerifiedPrivateWriter {
  readonly ref: VolumeRef
  readonly descriptor: VolumeDescriptor
  readonly agent: AgentId
  readonly task: TaskId
}

/**
 * The verdict function's type, so tests can run one property against the real
 * verdict and against a deliberately broken one.
 *
 * @since 0.1.0
 * @category models
 */
export type PrivateWriterVerdict = (
  candidate: PrivateWriterCandidate
) => Result.Result<VerifiedPrivateWriter, Unauthorized>

/**
 * Decides whether a task may write private content to a volume.
 *
 * The checks run in this order, and the first that fails names the error's
 * `reason`:
 *
 * 1. `OutOfCustody`: the store must hold the volume (facts about a volume
 *    outside custody are not trusted, so nothing else is looked at).
 * 2. `NotAgentPrivate`: the volume's kind is `AgentPrivate`.
 * 3. `NotAgentOwned`: the volume is owned by an agent, not the host.
 * 4. `NotOwnerBound`: that agent is the task's agent.
 * 5. `MissingWriteGrant`: the task holds a write grant on the volume.
 *
 * @since 0.1.0
 * @category verdicts
 */
export const checkPrivateWriter: PrivateWriterVerdict = ({ custody, ref, scope }) => {
  const refuse = (reason: Unauthorized["reason"], detail: string) =>
    Result.fail(new Unauthorized({ reason, detail, task: scope.task, volume: ref }))
  if (Option.isNone(custody)) {
    return refuse("OutOfCustody", "the private volume is not in this runtime's custody")
  }
  const descriptor = custody.value
  if (descriptor.kind !== "AgentPrivate") {
    return refuse("NotAgentPrivate", `private content needs an AgentPrivate volume, not ${descriptor.kind}`)
  }
  if (descriptor.owner._tag !== "Agent") {
    return refuse("NotAgentOwned", `the private volume is owned by ${formatOwner(descriptor.owner)}, not by an agent`)
  }
  if (descriptor.owner.agent !== scope.agent) {
    return refuse(
      "NotOwnerBound",
      `the private volume is owned by ${formatOwner(descriptor.owner)}, not by the task's agent ${scope.agent}`
    )
  }
  if (!holds(scope, ref, "write")) {
    return refuse("MissingWriteGrant", "the task holds no write grant on the private volume")
  }
  return Result.succeed({ ref, descriptor, agent: scope.agent, task: scope.task })
}

/**
 * Decides whether a task may bind a volume as its output: the volume must be
 * in custody and the task must hold a write grant on it. Output volumes carry
 * public results, so ownership is not checked here.
 *
 * @since 0.1.0
 * @category verdicts
 */
export const checkOutputBinding = ({
  custody,
  ref,
  scope
}: PrivateWriterCandidate): Result.Result<VolumeDescriptor, Unauthorized> => {
  if (Option.isNone(custody)) {
    return Result.fail(
      new Unauthorized({
        reason: "OutOfCustody",
        detail: "the output volume is not in this runtime's custody",
        task: scope.task,
        volume: ref
      })
    )
  }
  if (!holds(scope, ref, "write")) {
    return Result.fail(
      new Unauthorized({
        reason: "MissingWriteGrant",
        detail: "the task holds no write grant on its output volume",
        task: scope.task,
        volume: ref
      })
    )
  }
  return Result.succeed(custody.value)
}
