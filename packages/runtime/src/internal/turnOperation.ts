/**
 * The operation id a turn's summaries are staged under, unique per task,
 * kind and turn.
 */
import * as Digest from "@tessera/core/Digest"
import * as Ids from "@tessera/core/Ids"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

const decodeOperation = Schema.decodeUnknownSync(Ids.OperationId)

/**
 * The summary operation of a turn: `<task>-<kind><turn>`, so summaries of
 * different tasks and turns sharing one private volume never collide. One
 * to one over task, kind and turn: a task id longer than 100 characters
 * (the whole would not be an identifier) keeps its first 80 characters
 * followed by `_` and 16 hex digits of its SHA-256, never just a prefix
 * that another task may share.
 *
 * @since 0.1.0
 * @category naming
 */
export const turnOperation = (task: Ids.TaskId, turn: number, kind = "t"): Effect.Effect<Ids.OperationId> =>
  task.length <= 100
    ? Effect.succeed(decodeOperation(`${task}-${kind}${turn}`))
    : Effect.map(Digest.sha256(new TextEncoder().encode(task)), (digest) =>
        decodeOperation(`${task.slice(0, 80)}_${digest.slice(0, 16)}-${kind}${turn}`)
      )
