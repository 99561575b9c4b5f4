/**
 * Test doubles for harnesses built on the runtime, kept out of the main
 * entry point: `import { ScriptedModel } from "@tessera/runtime/testing"`.
 *
 * @since 0.1.0
 */

/**
 * The scripted model: a deterministic `Model` for demos and
 * tests that never touches the network, answers from its script, streams
 * like a provider, and records every request it receives, in order.
 *
 * @since 0.1.0
 */
export * as ScriptedModel from "./internal/scriptedModel.ts"
