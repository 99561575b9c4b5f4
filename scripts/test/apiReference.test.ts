/**
 * The API reference (`npm run docs:api`, typedoc.json): it covers every
 * published package, and the entries a harness author calls render with
 * their errors and requirements visible under names, never erased and never
 * inlined into a wall of union.
 *
 * TypeDoc over all ten packages takes about 80 s of CPU (over 3 minutes on a
 * loaded two-core machine), too long for `npm test`; so coverage of every
 * package is checked on the configuration, and the signatures on a
 * conversion of `@tessera/runtime` alone (every listed entry is there),
 * with the same options as `docs:api`.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import {
  Application,
  DeclarationReflection,
  type ProjectReflection,
  ReferenceReflection,
  ReflectionType
} from "typedoc"

const root = fileURLToPath(new URL("../..", import.meta.url))
const configFile = join(root, "typedoc.json")

interface TypedocConfig {
  readonly entryPoints: ReadonlyArray<string>
  readonly packageOptions: { readonly entryPoints: ReadonlyArray<string>; readonly tsconfig: string }
  readonly out: string
}

const config = JSON.parse(readFileSync(configFile, "utf8")) as TypedocConfig

/** The longest rendered type a listed entry may show: a signature, not a page of union. */
const maxRenderedType = 400

/** The entries a harness author calls, by their path in `@tessera/runtime`'s index. */
const entries: ReadonlyArray<readonly [string, string]> = [
  ["TaskExecution", "runTurn"],
  ["TaskExecution", "streamTurn"],
  ["TaskExecution", "resumeTurn"],
  ["TaskExecution", "resume"],
  ["TaskExecution", "summarize"],
  ["TaskExecution", "runSummaryFileTurn"],
  ["TaskExecution", "foreignLoop"],
  ["EntryGate", "bind"],
  ["EntryGate", "verify"],
  ["JournalEntry", "totalUsage"],
  ["Tool", "registry"]
]

/**
 * Rendered types that are known to exceed the bound, each asserted to still
 * do so (remove the entry when it is fixed): `JournalEntry.Entry` is
 * `typeof Entry.Type`, which TypeDoc expands in place; naming it is a
 * change to JournalEntry.ts.
 */
const knownLong: ReadonlyArray<string> = ["JournalEntry.totalUsage(entries)"]

let converting: Promise<ProjectReflection> | undefined

/**
 * `@tessera/runtime` as `docs:api` converts it (type errors are `tsc -b`'s
 * to report), with `internal/turnEntries.ts` as a second entry point for
 * the negative control: its `inferred.runTurn` is the entry as its body
 * infers it, without the named aliases.
 */
const runtimeReference = (): Promise<ProjectReflection> => {
  converting ??= (async () => {
    const app = await Application.bootstrapWithPlugins({
      options: configFile,
      entryPoints: [join(root, "packages/runtime")],
      packageOptions: {
        ...config.packageOptions,
        entryPoints: [...config.packageOptions.entryPoints, "src/internal/turnEntries.ts"]
      },
      skipErrorChecking: true,
      logLevel: "Error"
    })
    const project = await app.convert()
    if (project === undefined) throw new Error("typedoc could not convert @tessera/runtime")
    return project
  })()
  return converting
}

const declaration = (project: ProjectReflection, path: ReadonlyArray<string>): DeclarationReflection => {
  const found = project.getChildByName(["index", ...path])
  const target = found instanceof ReferenceReflection ? found.getTargetReflectionDeep() : found
  if (!(target instanceof DeclarationReflection)) throw new Error(`${path.join(".")} is not in the reference`)
  return target
}

/** Every type the reference renders for an entry: each signature's parameters, type parameters and return. */
const renderedTypes = (name: string, reflection: DeclarationReflection): ReadonlyArray<readonly [string, string]> => {
  const signatures = reflection.signatures ?? []
  if (signatures.length === 0) return [[name, reflection.type?.toString() ?? ""]]
  return signatures.flatMap((signature) => [
    [`${name}()`, signature.type?.toString() ?? ""] as const,
    ...(signature.parameters ?? []).map(
      (parameter) => [`${name}(${parameter.name})`, parameter.type?.toString() ?? ""] as const
    ),
    ...(signature.typeParameters ?? []).flatMap((parameter) =>
      [parameter.type, parameter.default].map((type) => [`${name}<${parameter.name}>`, type?.toString() ?? ""] as const)
    )
  ])
}

const tooLong = (types: ReadonlyArray<readonly [string, string]>) =>
  types
    .filter(([, text]) => text.length > maxRenderedType)
    .map(([where, text]) => `${where}: ${text.length} characters`)

describe("API reference (typedoc.json)", () => {
  it("covers every published package, from its index, into the git-ignored docs/api", () => {
    const published = readdirSync(join(root, "packages")).filter((folder) => {
      const manifest = join(root, "packages", folder, "package.json")
      return (
        existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as { private?: boolean }).private !== true
      )
    })
    assert.isAtLeast(published.length, 10)
    const uncovered = (entryPoints: ReadonlyArray<string>) =>
      published.map((folder) => `packages/${folder}`).filter((entry) => !entryPoints.includes(entry))
    assert.deepStrictEqual(uncovered(config.entryPoints), [], "typedoc.json leaves out a published package")
    assert.strictEqual(config.entryPoints.length, published.length, "typedoc.json lists only published packages")
    // Negative control: a configuration without one package is caught.
    assert.deepStrictEqual(uncovered(config.entryPoints.filter((entry) => entry !== "packages/mcp")), ["packages/mcp"])
    for (const folder of published) {
      for (const file of [...config.packageOptions.entryPoints, config.packageOptions.tsconfig]) {
        assert.isTrue(existsSync(join(root, "packages", folder, file)), `packages/${folder}/${file} is missing`)
      }
    }
    assert.strictEqual(config.out, "docs/api")
    assert.include(
      readFileSync(join(root, ".gitignore"), "utf8").split("\n"),
      "docs/api/",
      "the site is never committed"
    )
  })

  it("renders the harness entries with named error and requirement types, within the bound", {
    timeout: 300_000
  }, async () => {
    const project = await runtimeReference()
    const runTurn = declaration(project, ["TaskExecution", "runTurn"]).signatures?.[0]
    assert.strictEqual(
      runTurn?.type?.toString(),
      "Effect<TurnOutcome, TurnError<E>, TurnRequirements<R>>",
      "runTurn's rendered return names its error and requirement aliases"
    )
    assert.isTrue(
      runTurn?.comment?.blockTags.some((tag) => tag.tag === "@example") === true,
      "runTurn's @example is rendered"
    )
    for (const alias of ["TurnError", "TurnRequirements"]) {
      assert.isTrue(
        declaration(project, ["TaskExecution", alias]).comment !== undefined,
        `TaskExecution.${alias} is documented`
      )
    }
    const long: Array<string> = []
    for (const path of entries) {
      const name = path.join(".")
      const reflection = declaration(project, path)
      assert.isTrue((reflection.signatures?.length ?? 0) > 0, `${name} renders as a function with its signature`)
      for (const [where, text] of renderedTypes(name, reflection)) {
        assert.notInclude(text, "=> Effect", `${where} renders an erased return type`)
        if (text.length > maxRenderedType) long.push(where)
      }
    }
    assert.deepStrictEqual(long, knownLong, `rendered types longer than ${maxRenderedType} characters`)
  })

  it("negative control: the same entry typed by inference renders its inlined union and fails the bound", {
    timeout: 300_000
  }, async () => {
    const project = await runtimeReference()
    const holder = project.getChildByName(["internal/turnEntries", "inferred"])
    const members = holder instanceof DeclarationReflection ? holder.type : undefined
    const inferred = members instanceof ReflectionType ? members.declaration.getChildByName("runTurn") : undefined
    assert.instanceOf(inferred, DeclarationReflection, "the control finds the inferred entry")
    const types = renderedTypes("inferred.runTurn", inferred as DeclarationReflection)
    assert.isTrue(
      types.every(([, text]) => !text.includes("TurnError")),
      "the inferred entry does not name the alias"
    )
    assert.isNotEmpty(tooLong(types), "the inferred entry's rendered type exceeds the bound")
  })
})
