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

type Predicate = (input: unknown) => boolean

const never: Predicate = () => false
const noOptions: SchemaAST.ParseOptions = {}

const passesChecks = (checks: SchemaAST.Checks | undefined, ast: SchemaAST.AST): Predicate | undefined => {
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

const withChecks = (ast: SchemaAST.AST, shape: Predicate): Predicate => {
  const checks = passesChecks(ast.checks, ast)
  return checks === undefined ? shape : (input) => shape(input) && checks(input)
}

const isPlainObject = (input: unknown): input is Record<string, unknown> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

const compile = (ast: SchemaAST.AST): Predicate => {
  // A node that transforms on decoding decodes to something other than its input. (A constructor default is
  // used by `make` alone; a default for decoding is an encoding.)
  if (ast.encoding !== undefined) return never
  switch (ast._tag) {
    case "String":
      return withChecks(ast, (input) => typeof input === "string")
    case "Number":
      return withChecks(ast, (input) => typeof input === "number" && Number.isFinite(input))
    case "Boolean":
      return withChecks(ast, (input) => typeof input === "boolean")
    case "Null":
      return withChecks(ast, (input) => input === null)
    case "Literal": {
      const literal = ast.literal
      return typeof literal === "bigint" ? never : withChecks(ast, (input) => input === literal)
    }
    case "Union": {
      if (ast.options?.mode === "oneOf") return never
      const members = ast.types.map(compile)
      return withChecks(ast, (input) => members.some((member) => member(input)))
    }
    case "Arrays": {
      if (ast.elements.length > 0 || ast.rest.length !== 1) return never
      const element = compile(ast.rest[0] as SchemaAST.AST)
      return withChecks(ast, (input) => Array.isArray(input) && input.every(element))
    }
    case "Objects": {
      if (ast.indexSignatures.length > 0) return never
      const fields: Array<readonly [string, Predicate, boolean]> = []
      for (const signature of ast.propertySignatures) {
        if (typeof signature.name !== "string") return never
        fields.push([signature.name, compile(signature.type), signature.type.context?.isOptional === true])
      }
      const known = new Set(fields.map(([name]) => name))
      return withChecks(ast, (input) => {
        if (!isPlainObject(input)) return false
        for (const [name, check, optional] of fields) {
          if (!(name in input)) {
            if (optional) continue
            return false
          }
          if (!check(input[name])) return false
        }
        // An extra key is dropped by decoding: such a value does not decode to itself.
        for (const key in input) if (!known.has(key)) return false
        return true
      })
    }
    default:
      return never
  }
}

/**
 * The predicate for `ast`: `true` only for an input that the Schema would
 * decode to an equal value (see the module's description); `false` means
 * "ask the Schema".
 */
export const plainValueCheck = (ast: SchemaAST.AST): Predicate => compile(ast)
