/**
 * A parent task that delegates two sub-tasks in parallel, to two child
 * agents the host offers (each with a description and a tool of its own),
 * through the front door. Each child runs as a task of its own, with its own
 * private volume and journal; only its answer, and what it publishes (the
 * costing child's estimate, copied into the parent's private volume behind a
 * pointer), reach the parent. The usage is read back from the parent's
 * journal, itemized per child.
 *
 * Run: node examples/delegation.ts (again: the next turn of the same task
 * delegates again, to two new children).
 */
// #region delegation
import { NodeTessera } from "@tessera/node"
import { Delegation, JournalEntry, Model, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Schema } from "effect"

// The children's tools: each child agent is offered its own, and the parent none of them.
const readSiteNotes = Tool.make({
  name: "read_site_notes",
  description: "Reads the field notes of a site",
  input: Schema.Struct({ site: Schema.String }),
  handler: ({ site }) => Effect.succeed(`${site}: access road open, ground dry, two wells marked`)
})
const priceList = Tool.make({
  name: "price_list",
  description: "Looks up the day rates of the equipment",
  input: Schema.Struct({}),
  handler: () => Effect.succeed("drill rig 1,200/day; survey drone 300/day; crew of three 900/day")
})

const children = [
  { agent: "scout", description: "reads a site's field notes and reports access", tools: [readSiteNotes] },
  { agent: "costing", description: "estimates what the equipment costs per day", tools: [priceList] }
]

// One scripted model for the parent and its children, as a host gives them one provider. Each reply depends on
// what the request holds (its tools, its last part), not on a count of requests, so every turn gets the same replies.
const model = ScriptedModel.layer((request) => {
  const offers = (name: string) => request.tools.some((tool) => tool.name === name)
  const last = request.parts.at(-1)
  const answered = last?._tag === "ToolResult" ? last.content : undefined
  // What a provider would report; here an estimate, a quarter of the request's characters.
  const usage = { inputTokens: Math.ceil(JSON.stringify(request.parts).length / 4), outputTokens: 12 }
  if (offers(Delegation.toolName)) {
    // The parent: both sub-tasks in one call, so the children run in parallel; then the children's answers.
    if (answered !== undefined) return Model.response({ text: `Plan ready. The children said:\n${answered}`, usage })
    return Model.response({
      toolCalls: [
        Model.toolCall("plan", Delegation.toolName, {
          tasks: [
            { agent: "scout", task: "Check access to the north site." },
            { agent: "costing", task: "Estimate a day of drilling with a drone survey." }
          ]
        })
      ],
      usage
    })
  }
  if (offers("read_site_notes")) {
    if (answered !== undefined) return Model.response({ text: `The north site is reachable (${answered}).`, usage })
    return Model.response({ toolCalls: [Model.toolCall("notes", "read_site_notes", { site: "north" })], usage })
  }
  // The costing child publishes its estimate for the parent (its output volume), then answers.
  if (last?._tag === "ToolResult" && last.name === Delegation.publishToolName) {
    return Model.response({ text: "About 2,400 a day; the estimate is published as estimate.md.", usage })
  }
  if (answered !== undefined) {
    const estimate = { name: "estimate.md", text: `# One day of drilling\n\n${answered}\n\nTotal: 2,400` }
    return Model.response({ toolCalls: [Model.toolCall("publish", Delegation.publishToolName, estimate)], usage })
  }
  return Model.response({ toolCalls: [Model.toolCall("prices", "price_list", {})], usage })
})

const program = Effect.gen(function* () {
  const tessera = yield* NodeTessera.open({
    folder: "tessera-state",
    agent: "lead",
    redactor: Option.some(NodeTessera.defaultRedactor)
  })
  // With `children`, the turn offers the `delegate` tool; each sub-task runs as a child task of its own agent.
  const outcome = yield* tessera.run("drill-plan", "Plan a day of drilling at the north site.", { children })
  console.log(outcome._tag === "Answered" ? outcome.text : `awaiting ${outcome.awaiting.length} approval(s)`)
  // The parent's journal records each delegation and each answer's digest and usage, never a child's work.
  const entries = yield* tessera.entries("drill-plan")
  const total = JournalEntry.totalUsage(entries)
  // Every child of every turn of the task so far, with what its own journal says its requests cost.
  for (const child of total.children) {
    const delegated = entries.find((entry) => entry._tag === "ChildDelegated" && entry.task === child.task)
    const agent = delegated?._tag === "ChildDelegated" ? delegated.agent : "?"
    console.log(`${agent} (${child.task}): ${child.usage.inputTokens ?? 0} in, ${child.usage.outputTokens ?? 0} out`)
  }
  const own = total.usage
  const all = total.withChildren
  console.log(
    `parent alone: ${own.inputTokens ?? 0} in, ${own.outputTokens ?? 0} out; with its children: ` +
      `${all.inputTokens ?? 0} in, ${all.outputTokens ?? 0} out`
  )
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(model), Effect.provide(NodeTessera.layer)))
// #endregion delegation
