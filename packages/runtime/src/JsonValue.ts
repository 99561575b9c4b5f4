/**
 * Whether a value that crossed a trust boundary really is JSON.
 *
 * A tool call's input is typed `Schema.Json`, but an adapter builds it at
 * run time from the provider's answer, where the type system does not reach:
 * a buggy adapter can hand over `undefined`, a circular object, a `BigInt`, a
 * function or a class instance. Such a value breaks everything that renders,
 * measures or journals the call later (compaction renders every call with
 * `JSON.stringify`), so the executor checks each call here, at the model
 * boundary, and refuses the response instead.
 *
 * JSON here means what round-trips through `JSON.stringify` and
 * `JSON.parse` unchanged: `null`, booleans, finite numbers, strings, arrays
 * without holes and plain objects (prototype `Object.prototype` or `null`) of
 * those, with no cycle. The same object may appear twice (that is still a
 * tree once written out).
 *
 * @since 0.1.0
 */
import * as Option from "effect/Option"

/**
 * Where a value stops being JSON: a path from the root (`$`, `$.key`,
 * `$[0]`, `$["odd key"]`) and what was found there.
 *
 * @since 0.1.0
 * @category models
 */
export interface NotJson {
  readonly path: string
  readonly found: string
}

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

const keyPath = (parent: string, key: string): string =>
  identifier.test(key) ? `${parent}.${key}` : `${parent}[${JSON.stringify(key)}]`

const describeLeaf = (value: unknown): string | undefined => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined
    case "number":
      return Number.isFinite(value) ? undefined : `a non-finite number (${value})`
    case "undefined":
      return "undefined"
    case "bigint":
      return `a bigint (${value}n)`
    case "function":
      return "a function"
    case "symbol":
      return "a symbol"
    default:
      return undefined
  }
}

const prototypeName = (value: object): string => {
  const maker = (Object.getPrototypeOf(value) as { readonly constructor?: { readonly name?: unknown } } | null)
    ?.constructor
  return typeof maker?.name === "string" && maker.name.length > 0 ? maker.name : "an unknown class"
}

type Frame =
  | { readonly _tag: "Visit"; readonly value: unknown; readonly path: string }
  | { readonly _tag: "Leave"; readonly value: object }

/**
 * The first place (depth first, in key order) where `value` is not JSON, or
 * `None` when all of it is. Walks with an explicit stack, so deeply nested
 * input cannot overflow the call stack, and never calls the value's own
 * methods (`toJSON` included); a property whose getter throws is reported,
 * not rethrown.
 *
 * @since 0.1.0
 * @category checking
 */
export const findNotJson = (value: unknown): Option.Option<NotJson> => {
  const stack: Array<Frame> = [{ _tag: "Visit", value, path: "$" }]
  // The containers on the path from the root to the current value: meeting one again is a cycle.
  const open = new Set<object>()
  while (stack.length > 0) {
    const frame = stack.pop() as Frame
    if (frame._tag === "Leave") {
      open.delete(frame.value)
      continue
    }
    const { path } = frame
    const current = frame.value
    if (current === null) continue
    if (typeof current !== "object") {
      const found = describeLeaf(current)
      if (found !== undefined) return Option.some({ path, found })
      continue
    }
    if (open.has(current)) return Option.some({ path, found: "a reference to a container it is inside of (a cycle)" })
    const children: Array<Frame> = []
    if (Array.isArray(current)) {
      if (Object.getPrototypeOf(current) !== Array.prototype) {
        return Option.some({ path, found: `an instance of ${prototypeName(current)}` })
      }
      for (let index = 0; index < current.length; index++) {
        if (!Object.hasOwn(current, index)) return Option.some({ path: `${path}[${index}]`, found: "an empty slot" })
        children.push({ _tag: "Visit", value: current[index], path: `${path}[${index}]` })
      }
    } else {
      const prototype = Object.getPrototypeOf(current)
      if (prototype !== Object.prototype && prototype !== null) {
        return Option.some({ path, found: `an instance of ${prototypeName(current)}` })
      }
      for (const key of Object.keys(current)) {
        const child = keyPath(path, key)
        let read: unknown
        try {
          read = (current as Record<string, unknown>)[key]
        } catch {
          return Option.some({ path: child, found: "a property that throws when read" })
        }
        children.push({ _tag: "Visit", value: read, path: child })
      }
    }
    open.add(current)
    stack.push({ _tag: "Leave", value: current })
    // Pushed in reverse so the first key (or index) is visited first.
    for (let index = children.length - 1; index >= 0; index--) stack.push(children[index] as Frame)
  }
  return Option.none()
}

/**
 * Whether `value` is JSON in the sense of this module.
 *
 * @since 0.1.0
 * @category checking
 */
export const isJson = (value: unknown): boolean => Option.isNone(findNotJson(value))
