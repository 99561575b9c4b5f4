/**
 * The inspector's text forms of its pieces: a size, token counts, a journal
 * entry's key fields, a conversation part, a task's resumable state. Pure
 * functions of the data.
 *
 * @internal
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import type * as Ids from "@tessera/core/Ids"
import * as Volume from "@tessera/core/Volume"
import * as History from "@tessera/runtime/History"
import type * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import type * as Model from "@tessera/runtime/Model"
import * as Option from "effect/Option"
import type { ResumableState } from "./inspectReport.ts"

/** A size for people, followed by the exact byte count (documented where `Inspector` exports it). */
export const formatSize = (bytes: number): string =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KiB (${bytes} B)`
      : `${(bytes / (1024 * 1024)).toFixed(1)} MiB (${bytes} B)`

/** Token counts, those not reported left out (documented where `Inspector` exports it). */
export const formatUsage = (usage: JournalEntry.UsageTotal["usage"]): string => {
  const shown = [
    usage.inputTokens === undefined ? undefined : `in=${usage.inputTokens}`,
    usage.outputTokens === undefined ? undefined : `out=${usage.outputTokens}`,
    usage.cachedInputTokens === undefined ? undefined : `cached=${usage.cachedInputTokens}`,
    usage.reasoningTokens === undefined ? undefined : `reasoning=${usage.reasoningTokens}`
  ].filter((part) => part !== undefined)
  return shown.length === 0 ? "none reported" : shown.join(",")
}

const short = (digest: string): string => digest.slice(0, 12)

/** An entry's key fields, `name=value` separated by spaces: sizes and digests, never a body. */
export const entryFields = (entry: JournalEntry.Entry): string => {
  const turn = "turn" in entry && entry.turn !== undefined ? `turn=${entry.turn}` : undefined
  const step = "step" in entry && entry.step !== undefined ? `step=${entry.step}` : undefined
  const parts = (...rest: ReadonlyArray<string | undefined>) =>
    [turn, step, ...rest].filter((part) => part !== undefined).join(" ")
  switch (entry._tag) {
    case "TurnOpened":
      return parts(`task=${entry.task}`, entry.redaction === undefined ? undefined : `redaction=${entry.redaction}`)
    case "TurnResumed":
      return parts(entry.retryStep === undefined ? undefined : `retry-step=${entry.retryStep}`)
    case "RequestDispatched":
      return parts(`parts=${entry.parts}`, `size=${entry.size}`, `sha256=${short(entry.sha256)}`)
    case "ResponseReceived":
      return parts(
        `text=${entry.textSize}B`,
        `calls=[${entry.toolCalls.map((call) => `${call.callId}:${call.name}`).join(", ")}]`,
        entry.finishReason === undefined ? undefined : `finish=${entry.finishReason}`,
        entry.usage === undefined ? undefined : `usage=${formatUsage(entry.usage)}`
      )
    case "SummaryRequestAnswered":
      return parts(
        `operation=${entry.operation}`,
        `piece=${entry.piece}/${entry.pieces}`,
        `text=${entry.textSize}B`,
        entry.finishReason === undefined ? undefined : `finish=${entry.finishReason}`,
        entry.usage === undefined ? undefined : `usage=${formatUsage(entry.usage)}`
      )
    case "ModelFailed":
      return parts(`reason=${entry.reason}`, `detail=${JSON.stringify(entry.detail)}`)
    case "ToolCalled":
      return parts(`call=${entry.callId}`, `tool=${entry.name}`, `input=${entry.inputSize}B`)
    case "ToolResulted":
      return parts(
        `call=${entry.callId}`,
        `tool=${entry.name}`,
        `size=${entry.size}`,
        entry.isError ? `error=${entry.failure ?? "yes"}` : undefined
      )
    case "TurnClosed":
      return parts(`steps=${entry.steps}`)
    case "TurnAbandoned":
      return parts(`steps=${entry.steps}`, `reason=${JSON.stringify(entry.reason)}`)
    case "TruncationRecovered":
      return parts(`line=${entry.line}`, `kept=${entry.keptBytes}B`, `dropped=${entry.droppedBytes}B`)
    case "Admission":
      return parts(`operation=${entry.operation}`, `detail=${JSON.stringify(entry.detail)}`)
    case "Rejection":
      return parts(`operation=${entry.operation}`, `reason=${entry.reason}`, `detail=${JSON.stringify(entry.detail)}`)
    case "SummaryStaged":
      return parts(
        `operation=${entry.operation}`,
        `file=${Volume.formatVolumeRef(entry.volume)}:${entry.path}`,
        `size=${entry.size}`,
        entry.adopted === true ? "adopted" : undefined
      )
    case "ArtifactOffloaded":
      return parts(
        entry.callId === undefined ? undefined : `call=${entry.callId}`,
        `file=${entry.volume === undefined ? "" : `${Volume.formatVolumeRef(entry.volume)}:`}${entry.path}`,
        `size=${entry.size}`,
        entry.disposition === undefined ? undefined : `disposition=${entry.disposition}`
      )
    case "SummaryStarted":
      return parts(`operation=${entry.operation}`, `inputs=${short(entry.inputsSha256)}`)
    case "SummarySuperseded":
      return parts(
        `operation=${entry.operation}`,
        `file=${Volume.formatVolumeRef(entry.volume)}:${entry.path}`,
        `size=${entry.size}`,
        `reason=${JSON.stringify(entry.reason)}`
      )
    case "JournalRepaired":
      return parts(
        `line=${entry.line}`,
        `kept=${entry.keptBytes}B`,
        `dropped=${entry.droppedBytes}B`,
        `detail=${JSON.stringify(entry.detail)}`
      )
    case "CompactionWarning":
      return parts(`reason=${entry.reason}`, `size=${entry.size}`, `limit=${entry.limit}`, `measure=${entry.measure}`)
    case "ApprovalRequested":
      return parts(`call=${entry.callId}`, `tool=${entry.name}`, `input=${entry.inputSize}B`, `reason=${entry.reason}`)
    case "ApprovalDecided":
      return parts(
        `call=${entry.callId}`,
        entry.approved ? "approved" : "rejected",
        `by=${JSON.stringify(entry.by)}`,
        entry.note === undefined ? undefined : `note=${JSON.stringify(entry.note)}`
      )
    case "ChildDelegated":
      return parts(`call=${entry.callId}`, `child=${entry.task}`, `agent=${entry.agent}`)
    case "ChildAnswered":
      return parts(
        `call=${entry.callId}`,
        `child=${entry.task}`,
        entry.outcome === "Answered" ? `answer=${entry.size}B` : `outcome=${entry.outcome}`,
        entry.usage === undefined ? undefined : `usage=${formatUsage(entry.usage)}`
      )
  }
}

const indent = (body: string): ReadonlyArray<string> => body.split("\n").map((line) => `        ${line}`)

/**
 * One part of a conversation as lines: its number, what it is and its size;
 * a summary's parts as such, an offloaded result as its pointer, and the
 * body only when `bodies` is true.
 */
export const partLines = (
  number: number,
  part: Model.Part,
  inSummary: boolean,
  bodies: boolean
): ReadonlyArray<string> => {
  const head = `    ${String(number).padStart(3, " ")}.`
  switch (part._tag) {
    case "Text": {
      const size = ArtifactPointer.utf8Length(part.text)
      return [
        `${head} ${inSummary ? "summary text" : `${part.role} text`} ${formatSize(size)}`,
        ...(bodies ? indent(part.text) : [])
      ]
    }
    case "FileReference":
      return [
        `${head} ${inSummary ? "summary" : `${part.role} file`} ${Volume.formatVolumeRef(part.volume)}:${part.path} (${part.mediaType})`
      ]
    case "ToolCall": {
      const input = JSON.stringify(part.input)
      return [
        `${head} call ${part.id} ${part.name} input ${formatSize(ArtifactPointer.utf8Length(input))}`,
        ...(bodies ? indent(input) : [])
      ]
    }
    case "ToolResult": {
      const pointer = ArtifactPointer.parse(part.content)
      const label = `${head} result ${part.callId} ${part.name}${part.isError ? " (error)" : ""}`
      if (Option.isSome(pointer)) {
        return [
          `${label} offloaded: ${pointer.value.path} ${formatSize(pointer.value.bytes)} (read with ${pointer.value.readWith})`
        ]
      }
      return [
        `${label} ${formatSize(ArtifactPointer.utf8Length(part.content))}`,
        ...(bodies ? indent(part.content) : [])
      ]
    }
    case "Media":
      return [
        `${head} ${part.role} media ${part.mediaType} (${part.data._tag === "Url" ? part.data.url : `${part.data.base64.length} base64 characters`})`
      ]
  }
}

const callLine = (call: Journal.OwedCall): string =>
  `${call.callId} ${call.name}${call.approval === undefined ? "" : ` (${call.approval.reason})`}`

/** A task's resumable state as text lines (documented where `Inspector` exports it as `renderResumable`). */
export const resumableLines = (task: Ids.TaskId, state: ResumableState, bodies: boolean): ReadonlyArray<string> => {
  const lines = [`resumable state of task ${task}:`]
  if (Option.isNone(state.lastTurn)) return [...lines, "  no turn yet"]
  const turn = state.lastTurn.value
  lines.push(
    turn.status === "Open"
      ? `  open turn ${turn.turn}: step ${turn.steps}${turn.awaitingResponse ? " (its request got no response)" : ""}${turn.answered ? " (answered, not closed)" : ""}, ${turn.resumptions} resumption${turn.resumptions === 1 ? "" : "s"}`
      : `  no open turn: turn ${turn.turn} ${turn.status.toLowerCase()} after ${turn.steps} step${turn.steps === 1 ? "" : "s"}`,
    `  awaiting approval: ${state.awaitingApproval.length === 0 ? "none" : state.awaitingApproval.map(callLine).join(", ")}`,
    `  in flight at a crash: ${state.inFlight.length === 0 ? "none" : state.inFlight.map(callLine).join(", ")}`
  )
  const conversation = state.conversation
  if (conversation._tag !== "Rebuilt") {
    lines.push(
      `  conversation: ${conversation._tag === "NotRecorded" ? "not recorded" : "unreadable"}: ${conversation.detail}`
    )
    return lines
  }
  const history = conversation.history
  const parts = History.toParts(history)
  lines.push(
    `  conversation as the model last saw it (turn ${conversation.turn}, ${parts.length} parts, transcript on ${conversation.volume}${bodies ? "" : "; bodies hidden, --bodies shows them"}):`
  )
  const summaryParts = new Set<Model.Part>(history.summary?.parts ?? [])
  for (const [index, part] of parts.entries()) {
    lines.push(...partLines(index + 1, part, summaryParts.has(part), bodies))
  }
  return lines
}
