/**
 * The tools an Effect AI request offers its provider, as Tessera's tool
 * specs: what `RequestDispatched` measures along with the prompt's parts.
 */
import type * as Model from "@tessera/runtime/Model"
import * as AiError from "effect/ai/AiError"
import type * as LanguageModel from "effect/ai/LanguageModel"
import * as Tool from "effect/ai/Tool"
import type * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"

/**
 * The specs of the tools `LanguageModel` hands its provider for a request
 * with this resolved toolkit and tool choice (its `ProviderOptions.tools`).
 *
 * - Order and selection are `LanguageModel`'s: the toolkit's tools in the
 *   toolkit's order, only those named when `toolChoice` is `{ oneOf }`. With
 *   `"none"` (or `{ tool }`) `LanguageModel` still hands over the whole
 *   toolkit, and whether a tool reaches the wire then depends on the
 *   provider (Anthropic's drops every tool on `"none"`, OpenAI's sends them
 *   with `tool_choice: "none"`); the specs follow `LanguageModel`, the last
 *   point common to every provider, so the whole toolkit is journaled.
 * - A spec is the tool's name, its description as providers read it
 *   (`Tool.getDescription`: the tool's own, else its parameters schema's;
 *   empty when neither has one) and its parameters' JSON Schema as
 *   `Tool.getJsonSchema` makes it (a dynamic tool's JSON Schema as given). A
 *   provider may still adapt that schema with its own codec transformer,
 *   which only it knows.
 * - Provider-defined tools are left out: the provider configures and runs
 *   them, and each provider sends them in its own form (as the AI SDK
 *   middleware journals only function tools).
 * - Parameters that JSON Schema cannot express fail `UnsupportedSchemaError`,
 *   as they fail in a provider's `prepareTools`: before any request.
 */
export const toolSpecs = (
  toolkit: Toolkit.WithHandler<Record<string, Tool.Any>>,
  toolChoice: LanguageModel.ToolChoice<string> | undefined,
  method: string
): Effect.Effect<ReadonlyArray<Model.ToolSpec>, AiError.AiError> =>
  Effect.try({
    try: () =>
      Object.values(toolkit.tools).flatMap((tool): Array<Model.ToolSpec> => {
        if (Tool.isProviderDefined(tool)) return []
        if (typeof toolChoice === "object" && "oneOf" in toolChoice && !toolChoice.oneOf.includes(tool.name)) return []
        return [
          {
            name: tool.name,
            description: Tool.getDescription(tool) ?? "",
            inputSchema: Tool.getJsonSchema(tool) as Record<string, unknown>
          }
        ]
      }),
    catch: (error) =>
      AiError.make({
        module: "TesseraLanguageModel",
        method,
        reason: new AiError.UnsupportedSchemaError({
          description: error instanceof Error ? error.message : String(error)
        })
      })
  })
