/**
 * How a delegation's child task is bound, the one binder every host's
 * `withChild` uses: its names (its own private and output volumes), its
 * scope, and the refusal of a harness that bound another task. `Delegation`
 * states the contract.
 */
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as EntryGate from "../EntryGate.ts"
import * as VolumeStore from "../VolumeStore.ts"

/** See `Delegation.ChildBindingMismatch`. */
export class ChildBindingMismatch extends Schema.TaggedError<ChildBindingMismatch>()("ChildBindingMismatch", {
  expected: Ids.TaskId,
  bound: Ids.TaskId
}) {
  override get message(): string {
    return `the child harness bound task ${this.bound} for child task ${this.expected}: a child runs only as itself`
  }
}

/** See `Delegation.childVolumes`. */
export const childVolumes = (task: Ids.TaskId): { readonly private: Ids.VolumeId; readonly output: Ids.VolumeId } => ({
  private: suffixed(task, "-scratch"),
  output: suffixed(task, "-output")
})

const suffixed = (task: Ids.TaskId, suffix: string) =>
  Ids.VolumeId.make(`${task.slice(0, 128 - suffix.length)}${suffix}`)

const decodeChildAgent = InvalidInput.decode(Ids.AgentId, "Delegation.bindChild", "child.agent")
const decodeChildTask = InvalidInput.decode(Ids.TaskId, "Delegation.bindChild", "child.task")

/** See `Delegation.bindChild`. */
export const bindChild = Effect.fnUntraced(function* (
  parent: EntryGate.TaskBinding,
  child: { readonly agent: Ids.AgentId; readonly task: Ids.TaskId }
) {
  // The parent's gate first: a forged or copied parent binding delegates nothing, and creates no volume.
  yield* EntryGate.admitBinding(parent, "Delegate")
  const agent = yield* decodeChildAgent(child.agent)
  const task = yield* decodeChildTask(child.task)
  const runtime = parent.context.runtime
  const ids = childVolumes(task)
  const own = yield* VolumeStore.ensure(runtime.host.store, {
    id: ids.private,
    kind: "AgentPrivate",
    owner: Volume.agentOwner(agent)
  })
  const output = yield* VolumeStore.ensure(runtime.host.store, {
    id: ids.output,
    kind: "Output",
    owner: Volume.hostOwner
  })
  const scope = yield* runtime.host.issueScope(
    task,
    [
      { volume: own, access: ["read", "write"] },
      { volume: output, access: ["write"] }
    ],
    agent
  )
  const context = yield* runtime.bindTask({ scope, createdPrivate: [own], output: Option.some(output) })
  return yield* EntryGate.bind(context)
})
