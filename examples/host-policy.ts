/**
 * A host that supplies its own artifact path policy and redactor.
 *
 * The host keeps its own state under `<folder>/host-state` (with credentials
 * in `host-state/credentials.json`), and its compliance rules add a pattern
 * of its own (internal ticket tokens) and one registered secret value (its
 * database password) to Tessera's default redaction rules. The example
 * offloads a tool result that leaks both, shows that the stored file and the
 * pointer's abstract are scrubbed, and then shows an offload aimed at the
 * host's state refused with the specific error while the caller keeps its
 * content inline.
 *
 * Run: node examples/host-policy.ts
 */
// #region host-policy
import * as fs from "node:fs"
import * as path from "node:path"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { ArtifactOffload, ArtifactPathPolicy, DefaultRedactor } from "@tessera/artifacts"
import { NodeDurableFiles } from "@tessera/node"
import { Effect, Layer, Option, Redacted } from "effect"

// A folder of its own below the current one, removed at the end.
const folder = fs.mkdtempSync(path.resolve("tessera-host-policy-"))
const hostState = path.join(folder, "host-state")
const artifactRoot = path.join(folder, "artifacts")
fs.mkdirSync(hostState, { recursive: true })

const databasePassword = Redacted.make("s3cret-db-pass-2026")

/**
 * The host's path policy: its state folder is internal, its credentials file specifically so. The
 * locations must be absolute (a relative one would match no target); the layer fails otherwise.
 */
const pathPolicy = ArtifactPathPolicy.layerFromLocations({
  internalRoot: hostState,
  stateLocations: [path.join(hostState, "credentials.json")]
})

/** Tessera's default rules, plus the host's own pattern and its registered secret. */
const redactor = DefaultRedactor.layer({
  rules: [...DefaultRedactor.defaultRules, { name: "internal-ticket-token", pattern: "TKT-[0-9]{6}", maxLength: 10 }],
  secrets: [databasePassword]
})

const leakyResult = [
  "connection check: ok",
  `used password ${Redacted.value(databasePassword)} for the replica`,
  "opened ticket TKT-204871 for the slow query",
  ...Array.from({ length: 400 }, (_, i) => `row ${i}: latency ${i % 37} ms`)
].join("\n")

const program = Effect.gen(function* () {
  const stored = yield* ArtifactOffload.offload({
    content: leakyResult,
    threshold: 1024,
    root: artifactRoot,
    target: "tool-results/db-check.txt",
    readTool: "read_artifact"
  })
  if (stored._tag !== "Offloaded") return yield* Effect.die(new Error("expected the result to be offloaded"))
  const body = fs.readFileSync(path.join(artifactRoot, stored.path), "utf8")
  console.log(`offloaded ${stored.size} bytes; the model sees:\n  ${stored.pointer}`)
  console.log(`stored file leaks the password: ${body.includes("s3cret-db-pass") ? "YES" : "no"}`)
  console.log(`stored file leaks the ticket token: ${body.includes("TKT-204871") ? "YES" : "no"}`)

  // An offload whose root is the host's own state: refused, content kept.
  const refused = yield* ArtifactOffload.offload({
    content: leakyResult,
    threshold: 1024,
    root: hostState,
    target: "credentials.json",
    readTool: "read_artifact"
  })
  if (refused._tag !== "Inline") return yield* Effect.die(new Error("expected the offload to be refused"))
  console.log(
    `offload into the host's state: refused (${Option.match(refused.reason, { onNone: () => "no reason", onSome: (reason) => reason._tag })}); ` +
      `the caller keeps its ${refused.content.length} characters inline`
  )
  console.log(`credentials.json was created: ${fs.existsSync(path.join(hostState, "credentials.json")) ? "YES" : "no"}`)
})

Effect.runPromise(
  program.pipe(Effect.provide(Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, pathPolicy, redactor)))
)
  .catch((error: unknown) => {
    console.error(`host-policy example failed: ${String(error)}`)
    process.exitCode = 1
  })
  .finally(() => fs.rmSync(folder, { recursive: true, force: true }))
// #endregion host-policy
