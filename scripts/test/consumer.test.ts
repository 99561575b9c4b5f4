/**
 * The packages as someone else's project gets them: build, `pnpm pack` every
 * package, install the tarballs with plain npm into a folder outside the
 * workspace, then run, type-check, bundle and inspect from there. Nothing here
 * resolves back into the workspace: the consumer sees only the tarballs and the
 * npm registry.
 */
import { type SpawnSyncReturns, spawnSync } from "node:child_process"
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { delimiter, dirname, join, relative } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"

const root = fileURLToPath(new URL("../..", import.meta.url))
const packages = [
  "core",
  "artifacts",
  "runtime",
  "node",
  "browser",
  "ai-sdk",
  "mcp",
  "effect-ai",
  "pi",
  "workflow"
] as const
const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const nodeManifest = JSON.parse(readFileSync(join(root, "packages", "node", "package.json"), "utf8"))
const aiSdkManifest = JSON.parse(readFileSync(join(root, "packages", "ai-sdk", "package.json"), "utf8"))
const piManifest = JSON.parse(readFileSync(join(root, "packages", "pi", "package.json"), "utf8"))
const workflowManifest = JSON.parse(readFileSync(join(root, "packages", "workflow", "package.json"), "utf8"))
const examplesManifest = JSON.parse(readFileSync(join(root, "examples", "package.json"), "utf8"))

/** What the consumer installs beside the tarballs: the peers at the workspace's versions, and the tools it uses. */
const consumerExtras = [
  `effect@${rootManifest.devDependencies.effect}`,
  `@effect/platform-node@${nodeManifest.devDependencies["@effect/platform-node"]}`,
  `ai@${aiSdkManifest.devDependencies.ai}`,
  `@ai-sdk/provider@${aiSdkManifest.devDependencies["@ai-sdk/provider"]}`,
  // The provider getting-started's real-model program imports.
  `@ai-sdk/openai-compatible@${examplesManifest.dependencies["@ai-sdk/openai-compatible"]}`,
  `@mariozechner/pi-agent-core@${piManifest.devDependencies["@mariozechner/pi-agent-core"]}`,
  `@mariozechner/pi-ai@${piManifest.devDependencies["@mariozechner/pi-ai"]}`,
  `@effect/sql-pg@${workflowManifest.devDependencies["@effect/sql-pg"]}`,
  `@types/node@${rootManifest.devDependencies["@types/node"]}`,
  "esbuild@0.28.2"
]

/** The strict flags a consumer may use; the published types must compile under all of them, libraries included. */
const strictOptions = {
  target: "ES2022",
  lib: ["ES2022"],
  types: ["node"],
  strict: true,
  exactOptionalPropertyTypes: true,
  noPropertyAccessFromIndexSignature: true,
  noUncheckedIndexedAccess: true,
  skipLibCheck: false,
  noEmit: true,
  allowImportingTsExtensions: true,
  // The negative control below re-checks a copy of the consumer; incremental state lets it re-check only what changed.
  incremental: true
}
const resolutions = {
  nodenext: { module: "nodenext", moduleResolution: "nodenext" },
  bundler: { module: "preserve", moduleResolution: "bundler" }
} as const

// The consumer's npm keeps its cache inside the checkout, like the check's XDG folders, never in the home folder.
const npmCache = join(root, "node_modules", ".cache", "tessera-consumer", "npm")
// The shebang of the inspector's bin finds `node` on PATH: the Node running this test comes first.
const env = {
  ...process.env,
  PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`,
  npm_config_cache: npmCache,
  npm_config_update_notifier: "false",
  npm_config_audit: "false",
  npm_config_fund: "false"
}

const run = (
  command: string,
  args: ReadonlyArray<string>,
  cwd: string,
  extraEnv: Record<string, string> = {},
  timeout = 240_000
) => spawnSync(command, args, { cwd, env: { ...env, ...extraEnv }, encoding: "utf8", timeout })

/**
 * How long one strict type check of the consumer may take. With skipLibCheck
 * off it reads every peer's declarations, Pi's provider SDKs (through
 * `@mariozechner/pi-ai`) included: about three minutes on two busy cores.
 */
const typeCheckTimeout = 600_000

const output = (result: SpawnSyncReturns<string>) =>
  `exit ${result.status}${result.error ? ` (${result.error.message})` : ""}\n${result.stdout}\n${result.stderr}`

const succeed = (result: SpawnSyncReturns<string>, what: string) => {
  assert.strictEqual(result.status, 0, `${what} failed: ${output(result)}`)
  return result.stdout
}

/** The folders (relative to `consumer`) of every installed copy of package `name`, nested ones included. */
const copiesOf = (consumer: string, name: string): Array<string> => {
  const found: Array<string> = []
  const visitPackage = (folder: string) => {
    try {
      if (JSON.parse(readFileSync(join(folder, "package.json"), "utf8")).name === name)
        found.push(relative(consumer, folder))
    } catch {
      // a folder without a readable package.json is not a package
    }
    visitModules(join(folder, "node_modules"))
  }
  const visitModules = (folder: string) => {
    let entries: Array<string>
    try {
      entries = readdirSync(folder)
    } catch {
      return
    }
    for (const entry of entries.filter((entry) => !entry.startsWith("."))) {
      if (entry.startsWith("@"))
        for (const scoped of readdirSync(join(folder, entry))) visitPackage(join(folder, entry, scoped))
      else visitPackage(join(folder, entry))
    }
  }
  visitModules(join(consumer, "node_modules"))
  return found
}

/** Every `exports` or `bin` target of a manifest that is not JavaScript (declarations only under `types`). */
const typeScriptTargets = (manifest: { exports?: unknown; bin?: unknown }): Array<string> => {
  const wrong: Array<string> = []
  const visit = (value: unknown, condition: string) => {
    if (typeof value === "string") {
      const ok = condition === "types" ? value.endsWith(".d.ts") : value.endsWith(".js")
      if (!ok) wrong.push(`${condition}: ${value}`)
    } else if (value !== null && typeof value === "object") {
      for (const [key, inner] of Object.entries(value)) visit(inner, key.startsWith(".") ? condition : key)
    }
  }
  visit(manifest.exports, "default")
  visit(manifest.bin, "bin")
  return wrong
}

/** Peer packages whose own declarations do not compile under every strict flag (see {@link typeCheck}). */
const peerDeclarations = [
  "node_modules/effect/",
  "node_modules/ai/",
  "node_modules/@ai-sdk/",
  "node_modules/@mariozechner/",
  "node_modules/@anthropic-ai/",
  "node_modules/@google/genai/"
]

const diagnosticLine = /^(\S[^(]*)\((\d+),(\d+)\): error (TS\d+): (.*)$/

interface TypeCheck {
  readonly result: SpawnSyncReturns<string>
  /** Diagnostics outside the peers' own declarations (those are the peers', reported apart). */
  readonly ours: ReadonlyArray<string>
  readonly peers: ReadonlyArray<string>
}

/**
 * Type-checks `files` in the consumer under the strict flags. effect 4's own
 * declarations name the DOM type `JsonWebKey`, missing under lib ES2022 without
 * DOM, and the AI SDK's (`ai`, `@ai-sdk/*`, the peers of `@tessera/ai-sdk`) name
 * DOM types such as `HeadersInit` and fail some of the strict flags, and Pi's
 * (`@mariozechner/pi-ai`, the peer of `@tessera/pi`) bring provider SDKs whose
 * declarations name modules and DOM types they do not install
 * (`@anthropic-ai/sdk`: `undici-types` by a relative path; `@google/genai`:
 * `@modelcontextprotocol/sdk`, `ErrorEvent`); those diagnostics are the
 * peers', not ours, and are kept apart (and printed).
 */
const typeCheck = (consumer: string, resolution: keyof typeof resolutions, files: ReadonlyArray<string>): TypeCheck => {
  const config = `tsconfig.${resolution}.json`
  writeFileSync(
    join(consumer, config),
    JSON.stringify({ compilerOptions: { ...strictOptions, ...resolutions[resolution] }, files }, null, 2)
  )
  const result = run(
    process.execPath,
    [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", config],
    consumer,
    {},
    typeCheckTimeout
  )
  const lines = result.stdout.split("\n").filter((line) => diagnosticLine.test(line))
  const peers = lines.filter((line) => peerDeclarations.some((folder) => line.startsWith(folder)))
  return { result, ours: lines.filter((line) => !peers.includes(line)), peers }
}

/**
 * Complete programs that talk to a model server: type-checked here like
 * the others, and run by the examples project against a loopback server
 * speaking the provider's wire format (examples/test/examples.test.ts).
 */
const needServer = new Set(["real-provider"])

/** The documents whose complete programs (snippets that start with their imports) a newcomer copies and runs. */
const frontDocuments = ["README.md", "docs/getting-started.md"]
const snippetMarker = /<!-- snippet: ([^#\s]+)#([\w-]+) -->\n```ts\n([\s\S]*?)```/g

/**
 * Every snippet of {@link frontDocuments}, as the documents show it (the
 * text a reader copies, not the example file around it), each a program of
 * its own: none is filtered out, so a fragment fails to type-check in (b).
 */
const documentedPrograms = (): ReadonlyArray<{ readonly name: string; readonly text: string }> =>
  frontDocuments.flatMap((document) =>
    [...readFileSync(join(root, document), "utf8").matchAll(snippetMarker)].flatMap(([, , name, body]) =>
      name !== undefined && body !== undefined ? [{ name, text: body }] : []
    )
  )

/** A file importing every public entry point of every package, as listed in the installed `dist/` folders. */
const entriesFile = (consumer: string): string => {
  const lines: Array<string> = []
  for (const name of packages) {
    const dist = join(consumer, "node_modules", "@tessera", name, "dist")
    for (const file of readdirSync(dist)
      .filter((file) => file.endsWith(".d.ts"))
      .sort()) {
      const module = file.slice(0, -".d.ts".length)
      const specifier = module === "index" ? `@tessera/${name}` : `@tessera/${name}/${module}`
      lines.push(`import * as ${name.replace("-", "_")}_${module} from "${specifier}"`)
    }
  }
  const names = lines.map((line) => line.split(" ")[3])
  return `${lines.join("\n")}\n\nexport const entryPoints = [${names.join(", ")}].length\n`
}

/**
 * The JavaScript files of a tarball listing that an installed package could load other than its bundle: anything
 * under `dist/` but the inspector's bin, an entry point (a `.js` beside its `.d.ts`) or a shared chunk
 * (`dist/internal/chunks/`). tsc's file per module, left in `dist/`, is what this finds.
 */
const unbundledJavaScript = (files: ReadonlyArray<string>): Array<string> =>
  files.filter((file) => {
    if (!/^package\/dist\/.*\.js$/.test(file)) return false
    if (file.startsWith("package/dist/bin/") || file.startsWith("package/dist/internal/chunks/")) return false
    const entryPoint = !file.startsWith("package/dist/internal/") && files.includes(file.replace(/\.js$/, ".d.ts"))
    return !entryPoint
  })

/**
 * A program, run in a consumer folder, that imports every public module of every package both by its subpath
 * (`@tessera/runtime/Compaction`) and through the package's index (`(await import("@tessera/runtime")).Compaction`)
 * and compares every export of the two: identical values mean one copy of the module, its registries and service
 * keys included. Prints `{ compared, mismatches }` as JSON.
 */
const identityProgram = (modules: Record<string, ReadonlyArray<string>>): string => `
const modules = ${JSON.stringify(modules)}
let compared = 0
const mismatches = []
for (const [name, subpaths] of Object.entries(modules)) {
  const index = await import(name)
  for (const subpath of subpaths) {
    const direct = await import(name + "/" + subpath)
    const viaIndex = index[subpath]
    if (viaIndex === undefined) continue
    for (const key of Object.keys(direct)) {
      compared++
      if (direct[key] !== viaIndex[key]) mismatches.push(name + "/" + subpath + "." + key)
    }
  }
}
process.stdout.write(JSON.stringify({ compared, mismatches }))
`

/** Runs {@link identityProgram} in `folder` over the public modules of the installed packages. */
const compareIdentities = (folder: string): { readonly compared: number; readonly mismatches: Array<string> } => {
  const modules: Record<string, Array<string>> = {}
  for (const name of packages) {
    modules[`@tessera/${name}`] = readdirSync(join(folder, "node_modules", "@tessera", name, "dist"))
      .filter((file) => file.endsWith(".d.ts") && file !== "index.d.ts")
      .map((file) => file.slice(0, -".d.ts".length))
  }
  const out = succeed(
    run(process.execPath, ["--input-type=module", "-e", identityProgram(modules)], folder),
    "identity program"
  )
  return JSON.parse(out)
}

let scratch = ""
let consumer = ""
let tarballs: Array<string> = []
/** The folder the getting-started program (a) leaves its namespace in, for the inspector (d). */
let programState = ""

/**
 * Removes every compiled file of `dist/` (JavaScript, declarations, their maps) whose source no longer exists:
 * `src/<path>.ts`, or `bin/<path>.ts` for what `dist/bin/` holds.
 */
const removeStaleOutputs = (packageFolder: string): void => {
  const dist = join(packageFolder, "dist")
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const file = join(folder, entry.name)
      if (entry.isDirectory()) {
        walk(file)
        continue
      }
      const compiled = /^(.*?)(?:\.d\.ts|\.js)(?:\.map)?$/.exec(relative(dist, file))
      if (compiled?.[1] === undefined) continue
      const stem = compiled[1]
      const source = stem.startsWith("bin/")
        ? join(packageFolder, `${stem}.ts`)
        : join(packageFolder, "src", `${stem}.ts`)
      if (!existsSync(source)) rmSync(file)
    }
  }
  if (existsSync(dist)) walk(dist)
}

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), "tessera-consumer-"))
  assert.isTrue(relative(root, scratch).startsWith(".."), "the consumer must live outside the workspace")
  mkdirSync(npmCache, { recursive: true })
  // Build: every package's dist/ (JavaScript, declarations, maps) and the inspector's bin.
  succeed(
    run(
      process.execPath,
      [
        join(root, "node_modules", "typescript", "bin", "tsc"),
        "-b",
        "packages/node/tsconfig.src.json",
        "packages/node/tsconfig.bin.json",
        "packages/browser/tsconfig.src.json",
        "packages/ai-sdk/tsconfig.src.json",
        "packages/mcp/tsconfig.src.json",
        "packages/effect-ai/tsconfig.src.json",
        "packages/pi/tsconfig.src.json",
        "packages/workflow/tsconfig.src.json"
      ],
      root
    ),
    "tsc -b"
  )
  // tsc -b never removes the output of a source that was deleted or renamed; a tarball would ship it.
  for (const name of packages) removeStaleOutputs(join(root, "packages", name))
  // The published JavaScript: one file per entry point and one shared chunk per package, in place of tsc's.
  succeed(run(process.execPath, [join(root, "scripts", "bundle.mjs"), ...packages], root), "scripts/bundle.mjs")
  const packed = join(scratch, "tarballs")
  mkdirSync(packed)
  for (const name of packages) {
    succeed(run("pnpm", ["pack", "--pack-destination", packed], join(root, "packages", name)), `pnpm pack ${name}`)
  }
  tarballs = readdirSync(packed).map((file) => join(packed, file))
  consumer = join(scratch, "consumer")
  mkdirSync(consumer)
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
  succeed(run("npm", ["install", "--no-save", ...tarballs, ...consumerExtras], consumer), "npm install")
  cpSync(join(root, "examples", "getting-started.ts"), join(consumer, "app.ts"))
  for (const program of documentedPrograms()) writeFileSync(join(consumer, `doc-${program.name}.ts`), program.text)
  writeFileSync(join(consumer, "entries.ts"), entriesFile(consumer))
}, 300_000)

afterAll(() => {
  if (scratch !== "") rmSync(scratch, { recursive: true, force: true })
})

describe("the packed packages, installed with npm outside the workspace", () => {
  it("each tarball holds package.json, README.md, LICENSE, dist/ (bundled) and src/ only, with no workspace: specifier", () => {
    assert.strictEqual(tarballs.length, packages.length)
    for (const tarball of tarballs) {
      const files = succeed(run("tar", ["-tzf", tarball], scratch), `tar -tzf ${tarball}`)
        .trim()
        .split("\n")
      const tops = new Set(files.map((file) => file.replace(/^package\//, "").split("/")[0]))
      assert.deepStrictEqual([...tops].sort(), ["LICENSE", "README.md", "dist", "package.json", "src"], tarball)
      assert.isTrue(files.includes("package/dist/index.js") && files.includes("package/dist/index.d.ts"), tarball)
      assert.isTrue(
        files.includes("package/dist/index.d.ts.map") && files.includes("package/dist/index.js.map"),
        tarball
      )
      assert.deepStrictEqual(unbundledJavaScript(files), [], `${tarball}: JavaScript outside the bundle`)
      assert.isTrue(
        files.some((file) => file.startsWith("package/dist/internal/chunks/") && file.endsWith(".js")),
        `${tarball}: no shared chunk`
      )
      const manifest = succeed(run("tar", ["-xzOf", tarball, "package/package.json"], scratch), "tar -xzOf")
      assert.notInclude(manifest, "workspace:", tarball)
      assert.deepStrictEqual(
        typeScriptTargets(JSON.parse(manifest)),
        [],
        `${tarball}: exports or bin point at TypeScript`
      )
    }
  })

  it("installs exactly one copy of effect and of each Tessera package (effect is a peer)", () => {
    assert.deepStrictEqual(copiesOf(consumer, "effect"), ["node_modules/effect"])
    for (const name of packages) {
      assert.deepStrictEqual(copiesOf(consumer, `@tessera/${name}`), [`node_modules/@tessera/${name}`])
    }
  })

  it("(a) runs the getting-started program with node, from the published JavaScript", () => {
    const state = join(scratch, "state")
    mkdirSync(state)
    const out = succeed(run(process.execPath, [join(consumer, "app.ts")], state), "node app.ts")
    assert.match(out, /answer after 2 model steps: The north report shows every measurement within tolerance\./)
    const folders = readdirSync(state)
    assert.strictEqual(folders.length, 1, `expected the program's one state folder, found ${folders.join(", ")}`)
    programState = join(state, folders[0] ?? "")
  })

  it("(e) runs every complete program of the README and getting-started as the documents show it, twice in one folder", () => {
    const programs = documentedPrograms()
    // The first program of getting-started is one of them; an empty list would prove nothing.
    assert.include(
      programs.map((program) => program.name),
      "first-program"
    )
    for (const program of programs.filter((one) => !needServer.has(one.name))) {
      const cwd = join(scratch, `run-${program.name}`)
      mkdirSync(cwd)
      const file = join(consumer, `doc-${program.name}.ts`)
      const first = succeed(run(process.execPath, [file], cwd), `node doc-${program.name}.ts`)
      const second = succeed(run(process.execPath, [file], cwd), `node doc-${program.name}.ts (again)`)
      assert.isAbove(first.length, 0, `${program.name} printed nothing`)
      assert.isAbove(second.length, 0, `${program.name} printed nothing the second time`)
    }
  })

  it("(d) runs the inspector's bin (JavaScript with a shebang, linked by npm) on the folder (a) left", () => {
    assert.notStrictEqual(programState, "", "(a) did not leave a namespace folder")
    const bin = join(consumer, "node_modules", ".bin", "tessera-inspect")
    assert.isTrue(readFileSync(bin, "utf8").startsWith("#!/usr/bin/env node\n"))
    const inspected = succeed(run(bin, [programState], consumer), "tessera-inspect")
    assert.include(inspected, "researcher-private       AgentPrivate owned by agent researcher")
    assert.match(inspected, /journal of task task-1 \(9 entries/)
    assert.include(inspected, "ArtifactOffloaded")
  })

  it("exports every public module as a subpath and keeps internal/ modules unexported", () => {
    const load = (specifier: string) =>
      run(process.execPath, ["--input-type=module", "-e", `await import(${JSON.stringify(specifier)})`], consumer)
    succeed(load("@tessera/runtime/Journal"), "import @tessera/runtime/Journal")
    const internal = load("@tessera/runtime/internal/digest")
    assert.notStrictEqual(internal.status, 0)
    assert.include(internal.stderr, "ERR_PACKAGE_PATH_NOT_EXPORTED")
  })

  it("imports each public module as one copy, by its subpath and through the package's index alike", () => {
    const { compared, mismatches } = compareIdentities(consumer)
    assert.deepStrictEqual(mismatches, [])
    // Every package's index re-exports its modules; a vacuous comparison would prove nothing.
    assert.isAbove(compared, 100)
  })

  for (const resolution of ["nodenext", "bundler"] as const) {
    it(
      `(b) type-checks every entry point and the program under strict flags, skipLibCheck off, ${resolution} resolution`,
      () => {
        const programs = documentedPrograms().map((program) => `doc-${program.name}.ts`)
        const checked = typeCheck(consumer, resolution, ["entries.ts", "app.ts", ...programs])
        assert.deepStrictEqual(checked.ours, [], output(checked.result))
        if (checked.peers.length > 0)
          process.stdout.write(`[consumer] the peers' own declarations: ${checked.peers.join("; ")}\n`)
        // No exit status other than "errors reported" is acceptable, and any error must be one of the peers'.
        assert.include([0, 2], checked.result.status, output(checked.result))
        assert.strictEqual(checked.result.status === 0, checked.peers.length === 0, output(checked.result))
      },
      typeCheckTimeout
    )
  }

  it("(c) bundles the program with esbuild and runs the bundle", () => {
    succeed(
      run(
        join(consumer, "node_modules", ".bin", "esbuild"),
        ["app.ts", "--bundle", "--platform=node", "--format=esm", "--outfile=bundle.mjs", "--log-level=warning"],
        consumer
      ),
      "esbuild"
    )
    const state = join(scratch, "bundle-state")
    mkdirSync(state)
    const out = succeed(
      run(process.execPath, ["bundle.mjs"], consumer, { TESSERA_EXAMPLE_DIR: state }),
      "node bundle.mjs"
    )
    assert.match(out, /answer after 2 model steps/)
    process.stdout.write(
      `[consumer] esbuild bundle: ${(statSync(join(consumer, "bundle.mjs")).size / 1024).toFixed(1)} KB\n`
    )
  })
})

describe("negative controls: the same consumer checks against broken packages", () => {
  it("an export pointing at a .ts file fails the manifest check and fails to run under node_modules", () => {
    const broken = join(scratch, "broken-ts-export")
    cpSync(consumer, broken, { recursive: true, verbatimSymlinks: true })
    const manifestPath = join(broken, "node_modules", "@tessera", "runtime", "package.json")
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8"))
    manifest.exports["."] = "./src/index.ts"
    writeFileSync(manifestPath, JSON.stringify(manifest, null, 2))
    assert.deepStrictEqual(typeScriptTargets(manifest), ["default: ./src/index.ts"])
    const state = join(scratch, "broken-state")
    mkdirSync(state)
    const ran = run(process.execPath, ["app.ts"], broken, { TESSERA_EXAMPLE_DIR: state })
    assert.notStrictEqual(ran.status, 0)
    assert.include(ran.stderr, "ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING")
    rmSync(broken, { recursive: true, force: true })
  })

  it(
    "an error inside a published declaration file is reported (skipLibCheck is really off)",
    () => {
      const broken = join(scratch, "broken-declaration")
      cpSync(consumer, broken, { recursive: true, verbatimSymlinks: true })
      const declaration = join(broken, "node_modules", "@tessera", "core", "dist", "index.d.ts")
      writeFileSync(declaration, `${readFileSync(declaration, "utf8")}\nexport declare const broken: NoSuchType\n`)
      const checked = typeCheck(broken, "bundler", ["entries.ts", "app.ts"])
      assert.isTrue(
        checked.ours.some((line) => line.startsWith("node_modules/@tessera/core/dist/index.d.ts")),
        output(checked.result)
      )
      rmSync(broken, { recursive: true, force: true })
    },
    typeCheckTimeout
  )

  it("tsc's file per module left in a tarball's dist/ is found", () => {
    const runtime = tarballs.find((tarball) => tarball.includes("tessera-runtime-"))
    assert.isDefined(runtime)
    const files = succeed(run("tar", ["-tzf", runtime ?? ""], scratch), "tar -tzf")
      .trim()
      .split("\n")
    assert.deepStrictEqual(unbundledJavaScript([...files, "package/dist/internal/digest.js"]), [
      "package/dist/internal/digest.js"
    ])
  })

  it("two separate bundles of one package (no shared chunk) fail the identity check", () => {
    // The consumer's node_modules linked, but for a copy of @tessera/runtime (copying all of it takes a minute).
    const broken = join(scratch, "broken-two-bundles")
    const installed = join(consumer, "node_modules")
    mkdirSync(join(broken, "node_modules", "@tessera"), { recursive: true })
    for (const entry of readdirSync(installed).filter((entry) => entry !== "@tessera"))
      symlinkSync(join(installed, entry), join(broken, "node_modules", entry))
    for (const name of packages.filter((name) => name !== "runtime"))
      symlinkSync(join(installed, "@tessera", name), join(broken, "node_modules", "@tessera", name))
    const runtime = join(broken, "node_modules", "@tessera", "runtime")
    cpSync(join(installed, "@tessera", "runtime"), runtime, { recursive: true })
    // The index and Compaction bundled each on its own from the shipped src/: each holds its own copy of every module.
    const rolldown = pathToFileURL(createRequire(join(root, "bench", "package.json")).resolve("rolldown")).href
    const separate = `
const { rolldown } = await import(${JSON.stringify(rolldown)})
for (const name of ["index", "Compaction"]) {
  const build = await rolldown({
    input: "src/" + name + ".ts",
    cwd: process.cwd(),
    platform: "neutral",
    external: (id) => !id.startsWith(".") && !id.startsWith("/"),
    treeshake: false,
    logLevel: "silent"
  })
  await build.write({ file: "dist/" + name + ".js", format: "esm" })
  await build.close()
}
`
    succeed(run(process.execPath, ["--input-type=module", "-e", separate], runtime), "separate bundles")
    const { mismatches } = compareIdentities(broken)
    assert.isTrue(
      mismatches.some((name) => name.startsWith("@tessera/runtime/Compaction.")),
      mismatches.join(", ")
    )
    rmSync(broken, { recursive: true, force: true })
  }, 120_000)

  it("a second copy of effect nested under a Tessera package is found", () => {
    const broken = join(scratch, "broken-two-effects")
    mkdirSync(broken)
    const nested = join(broken, "node_modules", "@tessera", "core", "node_modules", "effect")
    mkdirSync(nested, { recursive: true })
    cpSync(
      join(consumer, "node_modules", "effect", "package.json"),
      join(broken, "node_modules", "effect", "package.json")
    )
    cpSync(join(consumer, "node_modules", "effect", "package.json"), join(nested, "package.json"))
    writeFileSync(join(broken, "node_modules", "@tessera", "core", "package.json"), '{"name":"@tessera/core"}')
    assert.deepStrictEqual(copiesOf(broken, "effect").sort(), [
      "node_modules/@tessera/core/node_modules/effect",
      "node_modules/effect"
    ])
  })
})
