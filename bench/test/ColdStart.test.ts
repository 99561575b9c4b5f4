import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type ColdInstall, makeInstall, removeInstall, workspaceProgram } from "../src/ColdInstall.ts"
import {
  coldStartSection,
  coldStartTargets,
  programOf,
  ratioPairs,
  runIn,
  type Side,
  sides,
  startProgram
} from "../src/ColdStart.ts"

const answer = "The north report shows every measurement within tolerance."
const sideNamed = (name: Side["name"]): Side => sides.find((side) => side.name === name) as Side

let install: ColdInstall | undefined
const prepared = (): ColdInstall => {
  if (install === undefined) throw new Error("no install folder")
  return install
}

beforeAll(async () => {
  install = await makeInstall()
}, 300_000)

afterAll(() => {
  if (install !== undefined) removeInstall(install)
})

describe("cold-start job", () => {
  it("installs Tessera from its packed tarballs with npm, outside the workspace, exporting JavaScript only", () => {
    const folder = prepared().folder
    assert.isTrue(path.relative(path.resolve(import.meta.dirname, "..", ".."), folder).startsWith(".."))
    assert.deepStrictEqual(prepared().tarballs, [
      "tessera-artifacts-0.1.0.tgz",
      "tessera-core-0.1.0.tgz",
      "tessera-node-0.1.0.tgz",
      "tessera-runtime-0.1.0.tgz"
    ])
    const manifest = JSON.parse(
      fs.readFileSync(path.join(folder, "node_modules", "@tessera", "runtime", "package.json"), "utf8")
    ) as { readonly exports: Record<string, unknown> }
    assert.deepStrictEqual(manifest.exports["."], { types: "./dist/index.d.ts", import: "./dist/index.js" })
    // Installed by npm as real folders, Tessera's and the others' alike: nothing links back into the workspace.
    for (const name of ["@tessera/runtime", "effect", "ai", "langchain"]) {
      assert.isTrue(fs.lstatSync(path.join(folder, "node_modules", ...name.split("/"))).isDirectory(), name)
    }
  })

  it("starts every side once: each reaches its first model call and answers; rss and times are positive", async () => {
    const result = await runIn(prepared(), { rounds: 1, medium: "memory", countModules: true })
    assert.deepStrictEqual(
      result.sides.map((side) => side.side),
      sides.map((side) => side.name)
    )
    assert.strictEqual(result.runs.length, sides.length)
    for (const run of result.runs) {
      assert.strictEqual(run.report.answer.text, answer, run.side)
      assert.isAbove(run.report.rss, 0, run.side)
      assert.isAtLeast(run.report.rss, run.report.loadedRss * 0.9, run.side)
      assert.isAbove(run.report.loadedMs, 0, run.side)
      assert.isAbove(run.report.sinceOriginMs, run.report.loadedMs, run.side)
      // The parent's spawn comes before the child's time origin: both clocks agree on the order.
      assert.isAbove(run.fromSpawnMs, run.report.sinceOriginMs, run.side)
    }
    const library = (name: Side["name"]) => result.sides.find((side) => side.side === name)?.library ?? ""
    assert.strictEqual(library("tessera"), "<install>/node_modules/@tessera/runtime/dist/index.js")
    assert.strictEqual(library("tessera-ts"), "<workspace>/packages/runtime/src/index.ts")
    for (const side of result.sides) {
      assert.isDefined(side.modules, side.side)
      assert.isAbove(side.modules?.total ?? 0, 0, side.side)
    }
    // Counted: the installed side loads Tessera's compiled modules, the sources row its .ts sources.
    const counts = (name: Side["name"]) => result.sides.find((side) => side.side === name)?.modules?.byPackage ?? {}
    assert.isAbove(counts("tessera")["@tessera/runtime"] ?? 0, 0)
    assert.isAbove(counts("tessera-ts")["@tessera/runtime"] ?? 0, 0)
    // The bundled row holds Tessera's code in its one program module; the floor has none of it. Both load exactly
    // the Effect and platform-node modules the installed side loads (the floor is defined as those).
    const effectModules = (name: Side["name"]) =>
      ["effect", "@effect/platform-node", "@effect/platform-node-shared"].map((key) => counts(name)[key] ?? 0)
    for (const name of ["tessera-bundled", "effect-floor"] as const) {
      assert.deepStrictEqual(
        Object.keys(counts(name)).filter((key) => key.startsWith("@tessera/")),
        [],
        name
      )
      assert.deepStrictEqual(effectModules(name), effectModules("tessera"), name)
    }
    assert.deepStrictEqual(
      result.ratios.map((ratio) => [ratio.side, ratio.over]),
      ratioPairs.map(([side, over]) => [side, over])
    )
    for (const ratio of result.ratios) {
      assert.isTrue(Number.isFinite(ratio.time.median) && ratio.time.median > 0)
      assert.isTrue(Number.isFinite(ratio.rss.median) && ratio.rss.median > 0)
    }
    const section = coldStartSection(result).join("\n")
    assert.include(section, "## Cold start")
    assert.strictEqual(coldStartTargets(result).length, 2)
  }, 120_000)

  it("negative control: Tessera's packages exporting their .ts sources fail to load in the installed side", async () => {
    const manifestFile = path.join(prepared().folder, "node_modules", "@tessera", "runtime", "package.json")
    const original = fs.readFileSync(manifestFile, "utf8")
    const manifest = JSON.parse(original) as { exports: Record<string, unknown> }
    // Both ways in: the main entry and the modules by path (the program and the packages import modules by path).
    manifest.exports["."] = "./src/index.ts"
    manifest.exports["./*"] = "./src/*.ts"
    fs.writeFileSync(manifestFile, JSON.stringify(manifest))
    try {
      const tessera = sideNamed("tessera")
      const failure = await startProgram(
        prepared(),
        programOf(prepared(), tessera),
        ["--no-experimental-strip-types"],
        "memory"
      ).then(
        () => undefined,
        (error: unknown) => String(error)
      )
      assert.isDefined(failure, "the side ran from .ts sources")
      assert.match(failure ?? "", /ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING|ERR_UNKNOWN_FILE_EXTENSION/)
    } finally {
      fs.writeFileSync(manifestFile, original)
    }
  }, 60_000)

  it("negative control: the workspace's .ts program does not run where type stripping is off", async () => {
    const failure = await startProgram(
      prepared(),
      workspaceProgram("TesseraFirstCall"),
      ["--no-experimental-strip-types"],
      "memory"
    ).then(
      () => undefined,
      (error: unknown) => String(error)
    )
    assert.match(failure ?? "", /ERR_UNKNOWN_FILE_EXTENSION/)
  }, 60_000)

  it("negative control: a program that answers without calling its model is refused", async () => {
    const program = path.join(prepared().folder, "NoCall.mjs")
    fs.writeFileSync(program, 'export const firstCall = async () => ({ text: "no call", library: "" })\n')
    const failure = await startProgram(prepared(), program, [], "memory").then(
      () => undefined,
      (error: unknown) => String(error)
    )
    assert.include(failure ?? "", "answered without calling its model")
  }, 60_000)
})
