import { isDeepStrictEqual } from "node:util"
import { assert, describe, it } from "@effect/vitest"
import { Journal } from "@tessera/runtime"
import { Result, Schema, type SchemaAST } from "effect"
import * as fc from "fast-check"
// The predicate is internal (the package blocks `./internal/*`); the test reaches it by path.
import { plainValueCheck, plainValueCopy } from "../src/internal/plainValue.js"

const stringCandidates = ["task-1", "op", "a".repeat(64), "0f".repeat(32), "text"]
const numberCandidates = [0, 1, 2, 7, 1_764_572_400_000]
const oddValues: ReadonlyArray<unknown> = ["", "../x", "A".repeat(64), -1, 1.5, 2 ** 53, null, true, [], {}]

/** The candidates a leaf's own checks accept (so a drawn value is valid unless corrupted on purpose). */
const passing = <A>(ast: SchemaAST.AST, candidates: ReadonlyArray<A>): ReadonlyArray<A> => {
  const filters: Array<SchemaAST.Filter<unknown>> = []
  const collect = (check: SchemaAST.Check<unknown>): void => {
    if (check._tag === "Filter") filters.push(check)
    else for (const inner of check.checks) collect(inner)
  }
  for (const check of ast.checks ?? []) collect(check)
  const kept = candidates.filter((candidate) => filters.every((filter) => filter.run(candidate, ast, {}) === undefined))
  return kept.length > 0 ? kept : candidates
}

/** Values of the shape `ast` describes, valid as far as the generator can tell; built from the AST itself. */
const shaped = (ast: SchemaAST.AST): fc.Arbitrary<unknown> => {
  switch (ast._tag) {
    case "String":
      return fc.constantFrom(...passing(ast, stringCandidates))
    case "Number":
      return fc.constantFrom(...passing(ast, numberCandidates))
    case "Boolean":
      return fc.boolean()
    case "Null":
      return fc.constant(null)
    case "Literal":
      return fc.constant(ast.literal)
    case "Union":
      return fc.oneof(...ast.types.map(shaped))
    case "Arrays":
      return ast.rest.length === 1 && ast.elements.length === 0
        ? fc.array(shaped(ast.rest[0] as SchemaAST.AST), { maxLength: 3 })
        : fc.jsonValue()
    case "Objects": {
      const fields = ast.propertySignatures.map(
        (signature) =>
          [String(signature.name), shaped(signature.type), signature.type.context?.isOptional === true] as const
      )
      return fc
        .tuple(
          ...fields.map(([name, value, optional]) =>
            fc.tuple(fc.constant(name), value, fc.boolean(), fc.constant(optional))
          )
        )
        .map((entries) => {
          const value: Record<string, unknown> = {}
          for (const [name, field, present, optional] of entries) if (present || !optional) value[name] = field
          return value
        })
    }
    default:
      return fc.jsonValue()
  }
}

/**
 * An entry-shaped value, then at most one corruption of one field: dropped,
 * replaced by an odd value, or joined by an extra key; or its keys in reverse
 * order. Valid values and
 * near misses both come often, and a counterexample shrinks to one field.
 */
const near = (ast: SchemaAST.AST): fc.Arbitrary<unknown> =>
  fc
    .tuple(
      shaped(ast),
      fc.option(
        fc.tuple(
          fc.constantFrom("drop", "replace", "extra", "reorder"),
          fc.nat({ max: 15 }),
          fc.oneof(fc.constantFrom(...oddValues), fc.jsonValue({ maxDepth: 1 }))
        ),
        { freq: 2 }
      )
    )
    .map(([value, corruption]) => {
      if (corruption === null || typeof value !== "object" || value === null || Array.isArray(value)) return value
      const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) }
      const keys = Object.keys(copy)
      const [kind, index, odd] = corruption
      const key = keys[index % Math.max(1, keys.length)]
      if (kind === "extra") copy.extra = odd
      // The same fields in another order: a line another writer made (the check then looks each name up).
      else if (kind === "reorder") return Object.fromEntries(Object.entries(copy).reverse())
      else if (key !== undefined && kind === "drop") delete copy[key]
      else if (key !== undefined) copy[key] = odd
      return copy
    })

const members = Journal.Entry.members

/** A predicate answers for a schema as it must: `true` only where the Schema decodes the value to an equal one. */
const holdsFor =
  (member: (typeof members)[number], check: (input: unknown) => boolean) =>
  (input: unknown): boolean => {
    if (!check(input)) return true
    const decoded = Schema.decodeUnknownResult(member)(input)
    // Equal as values: the order of an object's keys is not part of its value.
    return Result.isSuccess(decoded) && isDeepStrictEqual(decoded.success, input)
  }

describe("plain-value check (the journal's fast path on reopen)", () => {
  it("plain_value_never_overrules_the_schema: for every entry kind, a value it accepts decodes to itself", () => {
    let accepted = 0
    for (const member of members) {
      const check = plainValueCheck(member.ast)
      // JSON round trip: what a journal line parses to.
      const lines = near(member.ast).map((value) => JSON.parse(JSON.stringify(value)) as unknown)
      fc.assert(
        fc.property(lines, (input) => {
          if (check(input)) accepted++
          return holdsFor(member, check)(input)
        }),
        { numRuns: 400 }
      )
    }
    // The fast path is taken, not only declined: a predicate answering `false` always would pass the above.
    assert.isAbove(accepted, members.length * 20)
  })

  it("plain_value_copy_is_the_schema_encoding: for every entry kind, a copy it makes has the bytes the Schema's encoding gives", () => {
    let copied = 0
    for (const member of members) {
      const copy = plainValueCopy(member.ast)
      const encode = Schema.encodeUnknownResult(member)
      fc.assert(
        fc.property(near(member.ast), (input) => {
          const made = copy(input)
          if (made === undefined) return true
          copied++
          const encoded = encode(input)
          return Result.isSuccess(encoded) && JSON.stringify(encoded.success) === JSON.stringify(made)
        }),
        { numRuns: 300 }
      )
    }
    assert.isAbove(copied, members.length * 20)
  })

  it("every entry kind as the journal writes it takes the fast path", () => {
    for (const member of members) {
      const check = plainValueCheck(member.ast)
      const decode = Schema.decodeUnknownResult(member)
      const valid = fc
        .sample(shaped(member.ast), { numRuns: 50, seed: 7 })
        .map((value) => JSON.parse(JSON.stringify(value)) as unknown)
        .filter((value) => Result.isSuccess(decode(value)))
      const tag = member.fields._tag.schema.literal
      assert.isNotEmpty(valid, `${tag}: no valid sample drawn`)
      for (const value of valid) {
        const line = JSON.parse(JSON.stringify(Schema.encodeSync(member)(value as never))) as unknown
        assert.isTrue(check(line), `${tag}: a valid line was sent to the slow path: ${fc.stringify(line)}`)
      }
    }
  })

  it("negative control: a check that skips the fields' checks is caught, with a readable counterexample", () => {
    const member = members.find((candidate) => candidate.fields._tag.schema.literal === "RequestDispatched")
    assert.isDefined(member)
    if (member === undefined) return
    // Broken wiring: only the shape of the value is looked at (an object with a `_tag`).
    const careless = (input: unknown) => typeof input === "object" && input !== null && "_tag" in input
    const outcome = fc.check(fc.property(near(member.ast), holdsFor(member, careless)), { numRuns: 400, seed: 1 })
    assert.isTrue(outcome.failed)
    assert.include(fc.defaultReportMessage(outcome) ?? "", "Counterexample")
  })
})
