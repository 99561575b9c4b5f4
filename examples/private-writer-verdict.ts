/**
 * Decodes a task scope from JSON, as a host would read it from its
 * configuration, and asks the private-writer verdict about four volumes.
 *
 * Run: node examples/private-writer-verdict.ts
 */
import { Grant, PrivateWriter, Volume } from "@tessera/core"
import { Option, Result, Schema } from "effect"

const scope = Schema.decodeUnknownSync(Grant.Scope)({
  task: "task-1",
  agent: "researcher",
  grants: [
    { task: "task-1", volume: { store: "local", volume: "researcher-private" }, access: ["read", "write"] },
    { task: "task-1", volume: { store: "local", volume: "journal" }, access: ["read"] }
  ]
})

const decodeDescriptor = Schema.decodeUnknownSync(Volume.VolumeDescriptor)
const volumes = [
  decodeDescriptor({ id: "researcher-private", kind: "AgentPrivate", owner: { _tag: "Agent", agent: "researcher" } }),
  decodeDescriptor({ id: "reviewer-private", kind: "AgentPrivate", owner: { _tag: "Agent", agent: "reviewer" } }),
  decodeDescriptor({ id: "journal", kind: "Journal", owner: { _tag: "Host" } })
]

for (const descriptor of volumes) {
  const verdict = PrivateWriter.checkPrivateWriter({
    ref: Schema.decodeUnknownSync(Volume.VolumeRef)({ store: "local", volume: descriptor.id }),
    custody: Option.some(descriptor),
    scope
  })
  console.log(
    `${descriptor.id.padEnd(20)} ${Result.isSuccess(verdict) ? "may receive private content" : verdict.failure.message}`
  )
}

const outside = PrivateWriter.checkPrivateWriter({
  ref: Schema.decodeUnknownSync(Volume.VolumeRef)({ store: "elsewhere", volume: "researcher-private" }),
  custody: Option.none(),
  scope
})
console.log(`${"(another store)".padEnd(20)} ${Result.isFailure(outside) ? outside.failure.message : "accepted"}`)
