import * as nodePath from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { DurableFiles } from "@tessera/core"
import * as fc from "fast-check"

/** The definition: what the platform's `relative` says, unless it climbs out. */
const byDefinition = (path: typeof nodePath.posix, root: string, candidate: string): string | undefined => {
  const relative = path.relative(root, candidate)
  return relative === "" || (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
    ? relative
    : undefined
}

// Segments chosen to collide: shared prefixes ("a", "ab"), dots that are names, not steps.
const segment = fc.constantFrom("a", "ab", "b", "a.b", "..a", ".a", "...", "é", "a b")
/** An absolute, normalized POSIX path, as a real path is. */
const absolute = fc.array(segment, { maxLength: 4 }).map((segments) => `/${segments.join("/")}`)

describe("relativeWithin", () => {
  it("with `/` separators agrees with path.relative for every pair of normalized absolute paths", () => {
    fc.assert(
      fc.property(absolute, absolute, fc.array(segment, { maxLength: 3 }), (root, other, below) => {
        // Half the candidates lie below the root, so both answers are exercised.
        for (const candidate of [other, nodePath.posix.join(root, ...below)]) {
          const expected = byDefinition(nodePath.posix, root, candidate)
          if (DurableFiles.relativeWithin(root, candidate, nodePath.posix) !== expected) return false
        }
        return true
      }),
      { numRuns: 2_000 }
    )
  })

  it("answers the edge cases: the root itself, the file system root, a sibling sharing a prefix", () => {
    const posix = nodePath.posix
    assert.strictEqual(DurableFiles.relativeWithin("/a/b", "/a/b", posix), "")
    assert.strictEqual(DurableFiles.relativeWithin("/a/b", "/a/b/c/d", posix), "c/d")
    assert.strictEqual(DurableFiles.relativeWithin("/", "/x/y", posix), "x/y")
    assert.strictEqual(DurableFiles.relativeWithin("/a/b", "/a/bc", posix), undefined)
    assert.strictEqual(DurableFiles.relativeWithin("/a/b", "/a", posix), undefined)
  })

  it("with other separators asks the platform's relative (Windows rules)", () => {
    const win = nodePath.win32
    assert.strictEqual(DurableFiles.relativeWithin("C:\\data", "C:\\data\\x\\y", win), "x\\y")
    assert.strictEqual(DurableFiles.relativeWithin("C:\\data", "c:\\DATA\\x", win), "x")
    assert.strictEqual(DurableFiles.relativeWithin("C:\\data", "C:\\database", win), undefined)
    assert.strictEqual(DurableFiles.relativeWithin("C:\\data", "D:\\data", win), undefined)
  })
})

describe("temporaryName", () => {
  it("draws a fresh token per name when none is given: hidden, recognisable, never repeated", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9._-]{1,24}$/), (finalName) => {
        const names = Array.from({ length: 64 }, () => DurableFiles.temporaryName(finalName))
        assert.strictEqual(new Set(names).size, names.length)
        for (const name of names) {
          assert.isTrue(DurableFiles.isTemporaryName(name), name)
          assert.isTrue(name.startsWith(`.${finalName}.`), name)
          assert.match(name.slice(finalName.length + 2, -DurableFiles.temporarySuffix.length), /^[0-9a-f-]{36}$/)
        }
      })
    )
  })

  it("keeps a token it is given", () => {
    assert.strictEqual(DurableFiles.temporaryName("4.txt", "0b1e"), ".4.txt.0b1e.tessera-partial")
  })
})
