/**
 * Type tests: each `@ts-expect-error` line must fail to compile. If a change
 * makes one compile, tsc reports the directive as unused and `npm test` fails.
 */
import { Model, Tool } from "@tessera/runtime"
import { Context, Effect, Schema } from "effect"

class Reports extends Context.Service<Reports, { readonly fetch: (name: string) => Effect.Effect<string> }>()(
  "typetest/Reports"
) {}

const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report",
  input: Schema.Struct({ name: Schema.String }),
  handler: ({ name }) => Effect.flatMap(Effect.service(Reports), (reports) => reports.fetch(name))
})

const call = Model.toolCall("c1", "fetch_report", { name: "north" })

// registry_without_tools_needs_nothing: a registry of no tools requires no services, so a turn without tools
// runs with nothing provided for them.
export const none: Tool.Registry<never> = Tool.registry()
export const ranWithoutTools: Effect.Effect<Tool.ToolOutcome, never, never> = Tool.run(Tool.registry(), call)

// A registry's requirement is still its tools' own: one that needs `Reports` is no `Registry<never>`.
export const withReports: Tool.Registry<Reports> = Tool.registry(fetchReport)
// @ts-expect-error
export const reportsHidden: Tool.Registry<never> = Tool.registry(fetchReport)

// Negative control: the signature this replaced (`[Tools[number]] extends [Tool<infer R>] ? R : never`) infers
// `unknown` for no tools (nothing to infer `R` from), and that empty registry fails both checks above.
declare const oldRegistry: <const Tools extends ReadonlyArray<Tool.Tool<unknown>>>(
  ...tools: Tools
) => Tool.Registry<[Tools[number]] extends [Tool.Tool<infer R>] ? R : never>
// @ts-expect-error
export const oldNone: Tool.Registry<never> = oldRegistry()
// @ts-expect-error
export const oldRanWithoutTools: Effect.Effect<Tool.ToolOutcome, never, never> = Tool.run(oldRegistry(), call)
