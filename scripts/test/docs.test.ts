import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** Markdown files whose TypeScript snippets must come from tested files. */
const documents = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`)
]

/**
 * A snippet is a ```ts block preceded by `<!-- snippet: <file>#<region> -->`;
 * it must equal the `// #region <region>` ... `// #endregion <region>` lines of
 * that file, which is an example run by the examples smoke test.
 */
const snippetPattern = /<!-- snippet: ([^#\s]+)#([\w-]+) -->\n```ts\n([\s\S]*?)```/g
const anyTsBlock = /```ts\n/g

/** The documents a newcomer copies from: each of their snippets is a program of its own, imports first. */
const frontDocuments = new Set(["README.md", "docs/getting-started.md"])

/** Why `snippet` is no complete program (it does not begin with its imports), or undefined. */
const incomplete = (snippet: string): string | undefined =>
  snippet.startsWith("import ") ? undefined : `begins with ${JSON.stringify(snippet.split("\n")[0])}, not an import`

const region = (file: string, name: string): string | undefined => {
  const text = readFileSync(join(root, file), "utf8")
  const start = text.indexOf(`// #region ${name}\n`)
  const end = text.indexOf(`// #endregion ${name}`)
  if (start < 0 || end < start) return undefined
  return text.slice(start + `// #region ${name}\n`.length, end)
}

describe("documentation snippets", () => {
  for (const document of documents) {
    it(`${document}: every TypeScript snippet is extracted from a tested example`, () => {
      const text = readFileSync(join(root, document), "utf8")
      const snippets = [...text.matchAll(snippetPattern)]
      const blocks = [...text.matchAll(anyTsBlock)]
      assert.strictEqual(snippets.length, blocks.length, `${document} has a ts block without a snippet marker`)
      for (const [, file, name, body] of snippets) {
        assert.isTrue(file?.startsWith("examples/"), `${file} is not an example (examples are run by npm test)`)
        const source = region(file ?? "", name ?? "")
        assert.isDefined(source, `${file} has no region ${name}`)
        assert.strictEqual(body, source, `${document}: snippet ${file}#${name} differs from the file`)
        if (frontDocuments.has(document)) {
          assert.isUndefined(incomplete(body ?? ""), `${document}: snippet ${file}#${name} is a fragment`)
        }
      }
    })
  }

  it("front documents' snippets are complete programs; negative control: a fragment (a region cut after the imports) is told apart", () => {
    const program = region("examples/first-program.ts", "first-program") ?? ""
    assert.isUndefined(incomplete(program))
    const fragment = program.slice(program.indexOf("\n\n") + 2)
    assert.match(incomplete(fragment) ?? "", /not an import/)
  })
})
