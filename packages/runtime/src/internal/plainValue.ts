/**
 * A fast yes for values that a Schema would decode to themselves.
 *
 * Reopening a journal checks every field of every line. The Schema decoder
 * does that in general (transformations, defaults, error reporting) and
 * builds a new object for every value it accepts; for a line that is already
 * exactly an entry, both are work for nothing. {@link plainValueCheck}
 * compiles, from a Schema's AST, a predicate that answers `true` only when
 * the Schema would accept the input and decode it to an equal value: every
 * node is a plain JSON shape (strings, numbers, booleans, null, literals,
 * arrays, objects without extra keys, unions of those) with its checks
 * passed. Whatever it does not know (a transformation, a declaration, an
 * index signature, a recursive schema) makes it answer `false`, and so does
 * every failure: the caller then runs the Schema decoder itself, which
 * decides and names what is wrong. So the predicate can only save work,
 * never change a verdict (a property test holds it to that).
 */
import type { SchemaAST } from "effect"

/** What a compiled node answers for an input it does not vouch for. */
const notPlain: unique symbol = Symbol("notPlain")

/** A compiled node: the value (itself, or a copy in the Schema's key order), or {@link notPlain}. */
type Compiled = (input: unknown) => unknown

const never: Compiled = () => notPlain
const noOptions: SchemaAST.ParseOptions = {}

const passesChecks = (
  checks: SchemaAST.Checks | undefined,
  ast: SchemaAST.AST
): ((input: unknown) => boolean) | undefined => {
  if (checks === undefined) return undefined
  const filters: Array<SchemaAST.Filter<unknown>> = []
  const collect = (check: SchemaAST.Check<unknown>): void => {
    if (check._tag === "Filter") filters.push(check)
    else for (const inner of check.checks) collect(inner)
  }
  for (const check of checks) collect(check)
  return (input) => {
    for (const filter of filters) if (filter.run(input, ast, noOptions) !== undefined) return false
    return true
  }
}

const withChecks = (ast: SchemaAST.AST, shape: Compiled): Compiled => {
  const checks = passesChecks(ast.checks, ast)
  return checks === undefined
    ? shape
    : (input) => {
        const value = shape(input)
        return value === notPlain || !checks(value) ? notPlain : value
      }
}

const leaf = (ast: SchemaAST.AST, accepts: (input: unknown) => boolean): Compiled =>
  withChecks(ast, (input) => (accepts(input) ? input : notPlain))

const isPlainObject = (input: unknown): input is Record<string, unknown> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

/** With `copy`, objects and arrays come back as new values with the Schema's key order; else as given. */
const compile = (ast: SchemaAST.AST, copy: boolean): Compiled => {
  // A node that transforms on decoding decodes to something other than its input. (A constructor default is
  // used by `make` alone; a default for decoding is an encoding.)
  if (ast.encoding !== undefined) return never
  switch (ast._tag) {
    case "String":
      return leaf(ast, (input) => typeof input === "string")
    case "Number":
      return leaf(ast, (input) => typeof input === "number" && Number.isFinite(input))
    case "Boolean":
      return leaf(ast, (input) => typeof input === "boolean")
    case "Null":
      return leaf(ast, (input) => input === null)
    case "Literal": {
      const literal = ast.literal
      return typeof literal === "bigint" ? never : leaf(ast, (input) => input === literal)
    }
    case "Union": {
      if (ast.options?.mode === "oneOf") return never
      const members = ast.types.map((member) => compile(member, copy))
      return withChecks(ast, (input) => {
        for (const member of members) {
          const value = member(input)
          if (value !== notPlain) return value
        }
        return notPlain
      })
    }
    case "Arrays": {
      if (ast.elements.length > 0 || ast.rest.length !== 1) return never
      const element = compile(ast.rest[0] as SchemaAST.AST, copy)
      return withChecks(ast, (input) => {
        if (!Array.isArray(input)) return notPlain
        const out: Array<unknown> | undefined = copy ? new Array(input.length) : undefined
        for (let index = 0; index < input.length; index++) {
          const value = element(input[index])
          if (value === notPlain) return notPlain
          if (out !== undefined) out[index] = value
        }
        return out ?? input
      })
    }
    case "Objects": {
      if (ast.indexSignatures.length > 0) return never
      const fields: Array<readonly [string, Compiled, boolean]> = []
      for (const signature of ast.propertySignatures) {
        if (typeof signature.name !== "string") return never
        fields.push([signature.name, compile(signature.type, copy), signature.type.context?.isOptional === true])
      }
      const known = new Set(fields.map(([name]) => name))
      return withChecks(ast, (input) => {
        if (!isPlainObject(input)) return notPlain
        const out: Record<string, unknown> | undefined = copy ? {} : undefined
        for (const [name, field, optional] of fields) {
          if (!(name in input)) {
            if (optional) continue
            return notPlain
          }
          const value = field(input[name])
          if (value === notPlain) return notPlain
          if (out !== undefined) out[name] = value
        }
        // An extra key is dropped by decoding: such a value does not decode to itself.
        for (const key in input) if (!known.has(key)) return notPlain
        return out ?? input
      })
    }
    default:
      return never
  }
}

/**
 * The predicate for `ast`: `true` only for an input that the Schema would
 * decode (and encode) to an equal value (see the module's description);
 * `false` means "ask the Schema".
 */
export const plainValueCheck = (ast: SchemaAST.AST): ((input: unknown) => boolean) => {
  const compiled = compile(ast, false)
  return (input) => compiled(input) !== notPlain
}

/**
 * For `ast`: a copy of an input that {@link plainValueCheck} accepts, with
 * every object's keys in the Schema's order (what the Schema's own encoding
 * produces, so a line written from it has the same bytes), or `undefined`
 * for any other input ("ask the Schema").
 */
export const plainValueCopy = (ast: SchemaAST.AST): ((input: unknown) => unknown) => {
  const compiled = compile(ast, true)
  return (input) => {
    const value = compiled(input)
    return value === notPlain ? undefined : value
  }
}
