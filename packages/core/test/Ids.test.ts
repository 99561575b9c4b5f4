import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@tessera/core"
import { Result, Schema } from "effect"
import * as fc from "fast-check"

const decode = Schema.decodeUnknownResult(Ids.VolumeId)

describe("identifiers", () => {
  it("accept letters, digits, '_' and '-'", () => {
    assert.isTrue(Result.isSuccess(decode("agent-7_private")))
  })

  it("refuse anything that could act as a path: separators, dots, NUL, empty", () => {
    for (const bad of ["", ".", "..", "a/b", "a\\b", ".hidden", "a\u0000b", "x".repeat(129), "é"]) {
      assert.isTrue(Result.isFailure(decode(bad)), JSON.stringify(bad))
    }
  })

  it("every accepted identifier is a single safe path segment", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 140 }), (text) => {
        const decoded = decode(text)
        if (Result.isFailure(decoded)) return true
        return !/[/\\\0]/.test(text) && !text.startsWith(".") && text.length > 0 && text.length <= 128
      }),
      { numRuns: 2000 }
    )
  })

  it("a bad identifier is reported as a Schema error with a readable message", () => {
    const result = decode("../etc")
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result)) assert.include(result.failure.message, "identifier")
  })
})
