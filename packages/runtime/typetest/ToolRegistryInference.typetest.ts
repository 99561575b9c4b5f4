/**
 * Type tests: what `Tool.registry` infers, exactly (the assignability checks
 * of `Tool.typetest.ts` say what a registry may be used as; these say what
 * an editor shows and a caller's `typeof` gets). Each `@ts-expect-error`
 * line is a negative control that must fail to compile.
 */
import { Model, Tool } from "@tessera/runtime"
import { Context, Effect, Schema } from "effect"
import { expectTypeOf } from "vitest"

class Reports extends Context.Service<Reports, { readonly fetch: (name: string) => Effect.Effect<string> }>()(
  "typetest/ToolRegistryInference/Reports"
) {}

const clock = Tool.make({
  name: "clock",
  description: "Tells the time",
  input: Schema.Struct({}),
  handler: () => Effect.succeed("noon")
})

const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report",
  input: Schema.Struct({ name: Schema.String }),
  handler: ({ name }) => Effect.flatMap(Effect.service(Reports), (reports) => reports.fetch(name))
})

// empty_registry_infers_never: no tools infer `Registry<never>` (not `unknown`), and running one needs nothing.
expectTypeOf(Tool.registry()).toEqualTypeOf<Tool.Registry<never>>()
expectTypeOf(Tool.run(Tool.registry(), Model.toolCall("c1", "clock", {}))).toEqualTypeOf<
  Effect.Effect<Tool.ToolOutcome>
>()

// A registry's requirement is exactly the union of its tools'.
expectTypeOf(Tool.registry(clock)).toEqualTypeOf<Tool.Registry<never>>()
expectTypeOf(Tool.registry(clock, fetchReport)).toEqualTypeOf<Tool.Registry<Reports>>()

// Negative controls: the signature `registry` had before (`[Tools[number]] extends [Tool<infer R>] ? R : never`)
// infers `Registry<unknown>` for no tools, which is not `Registry<never>`; and a registry that needs `Reports`
// is not inferred as needing nothing.
declare const oldRegistry: <const Tools extends ReadonlyArray<Tool.Tool<unknown>>>(
  ...tools: Tools
) => Tool.Registry<[Tools[number]] extends [Tool.Tool<infer R>] ? R : never>
expectTypeOf(oldRegistry()).toEqualTypeOf<Tool.Registry<unknown>>()
// @ts-expect-error
expectTypeOf(oldRegistry()).toEqualTypeOf<Tool.Registry<never>>()
// @ts-expect-error
expectTypeOf(Tool.registry(fetchReport)).toEqualTypeOf<Tool.Registry<never>>()
