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
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"

/** What a compiled node answers for an input it does not vouch for. */
const notPlain: unique symbol = Symbol("notPlain")

/** A compiled node: the value (itself, or a copy in the Schema's key order), or {@link notPlain}. */
type Compiled = (input: unknown) => unknown

const never: Compiled = () => notPlain
const noOptions: SchemaAST.ParseOptions = {}

const filtersOf = (checks: SchemaAST.Checks | undefined): Array<SchemaAST.Filter<unknown>> => {
  const filters: Array<SchemaAST.Filter<unknown>> = []
  const collect = (check: SchemaAST.Check<unknown>): void => {
    if (check._tag === "Filter") filters.push(check)
    else for (const inner of check.checks) collect(inner)
  }
  for (const check of checks ?? []) collect(check)
  return filters
}

/** `shape`, then the node's own checks on what it accepted. */
const withChecks = (ast: SchemaAST.AST, shape: Compiled): Compiled => {
  const filters = filtersOf(ast.checks)
  if (filters.length === 0) return shape
  return (input) => {
    const value = shape(input)
    if (value === notPlain) return notPlain
    for (const filter of filters) if (filter.run(value, ast, noOptions) !== undefined) return notPlain
    return value
  }
}

// The predicates behind filters made by `predicateFilter`, by filter: a leaf calls the predicate itself instead of
// the filter's `run`, which wraps it to build an issue the fast path never reports.
const predicates = new WeakMap<object, (input: never) => boolean>()

/**
 * `Schema.makeFilter(predicate, annotations)`, whose predicate a compiled
 * check calls directly. For the checks of a Schema read on a hot path (a
 * journal's counts and digests, checked on every line of a reopen).
 */
export const predicateFilter = <T>(
  predicate: (input: T) => boolean,
  annotations: { readonly expected: string }
): SchemaAST.Filter<T> => {
  const filter = Schema.makeFilter(predicate, annotations)
  predicates.set(filter, predicate)
  return filter
}

/**
 * A leaf: its type test and its checks in one function (a journal's lines are
 * mostly leaves: counts, ordinals, digests), the common single check unrolled.
 */
const leaf = (ast: SchemaAST.AST, accepts: (input: unknown) => boolean): Compiled => {
  const filters = filtersOf(ast.checks)
  if (filters.length === 0) return (input) => (accepts(input) ? input : notPlain)
  if (filters.length === 1) {
    const only = filters[0] as SchemaAST.Filter<unknown>
    const predicate = predicates.get(only) as ((input: unknown) => boolean) | undefined
    if (predicate !== undefined) return (input) => (accepts(input) && predicate(input) ? input : notPlain)
    return (input) => (accepts(input) && only.run(input, ast, noOptions) === undefined ? input : notPlain)
  }
  return withChecks(ast, (input) => (accepts(input) ? input : notPlain))
}

// Only objects as `JSON.parse` and object literals make them: no array, no class instance, nothing inherited.
const isPlainObject = (input: unknown): input is Record<string, unknown> => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return false
  const prototype = Object.getPrototypeOf(input)
  return prototype === Object.prototype || prototype === null
}

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
      // Parallel arrays and indexed loops: this runs for every line of a journal being reopened.
      const names: Array<string> = []
      const checks: Array<Compiled> = []
      const optional: Array<boolean> = []
      for (const signature of ast.propertySignatures) {
        if (typeof signature.name !== "string") return never
        names.push(signature.name)
        checks.push(compile(signature.type, copy))
        optional.push(signature.type.context?.isOptional === true)
      }
      const count = names.length
      // A line this library wrote has its keys in the Schema's order: one pass over them, matched by position,
      // beats looking each name up. Any other order goes on to the lookups below.
      const inOrder = (input: Record<string, unknown>): boolean => {
        let index = 0
        for (const key in input) {
          while (index < count && names[index] !== key) {
            if (optional[index] !== true) return false
            index++
          }
          if (index === count || (checks[index] as Compiled)(input[key]) === notPlain) return false
          index++
        }
        for (; index < count; index++) if (optional[index] !== true) return false
        return true
      }
      return withChecks(ast, (input) => {
        if (!isPlainObject(input)) return notPlain
        if (!copy && inOrder(input)) return input
        const out: Record<string, unknown> | undefined = copy ? {} : undefined
        let present = 0
        for (let index = 0; index < count; index++) {
          const name = names[index] as string
          const given = input[name]
          if (given === undefined && !(name in input)) {
            if (optional[index] === true) continue
            return notPlain
          }
          const value = (checks[index] as Compiled)(given)
          if (value === notPlain) return notPlain
          if (out !== undefined) out[name] = value
          present++
        }
        // An extra key is dropped by decoding: such a value does not decode to itself. Every known key present
        // was counted, so any further key is an extra one.
        let keys = 0
        for (const _ in input) keys++
        return keys === present ? (out ?? input) : notPlain
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
