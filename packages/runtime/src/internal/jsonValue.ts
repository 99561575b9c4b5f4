/**
 * The JSON check behind `Tool.findNotJson`, `Tool.isJson` and
 * `Tool.stringifyJson` (their doc comments state the contract): one walk that
 * checks a value crossing the model boundary and, when asked, writes it.
 */
import * as Option from "effect/Option"
import * as Result from "effect/Result"

/** Where a value stops being JSON: a path from the root and what was found there (see `Tool.NotJson`). */
export interface NotJson {
  readonly path: string
  readonly found: string
}

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * Where a value sits, as a chain up to the root. Paths are only spelled out
 * for the one place that is reported, so a large value that is all JSON
 * costs no path strings.
 */
interface Place {
  readonly up: Place | undefined
  readonly step: string | number
}

const spell = (place: Place | undefined, root: string): string => {
  const steps: Array<string | number> = []
  for (let at = place; at !== undefined; at = at.up) steps.push(at.step)
  let path = root
  for (let index = steps.length - 1; index >= 0; index--) {
    const step = steps[index] as string | number
    path += typeof step === "number" ? `[${step}]` : identifier.test(step) ? `.${step}` : `[${JSON.stringify(step)}]`
  }
  return path
}

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

/**
 * A value still to visit, and where it sits: the frame is its own place in
 * the chain (`up` is the frame of its container), so a visit allocates one
 * object. `prefix` is the text written before the value (`,` or `"key":`).
 */
interface Visit extends Place {
  readonly value: unknown
  readonly prefix: string
}

/** The end of a container: it leaves the open path, and its closing bracket is written. */
interface Leave {
  readonly leave: object
  readonly close: string
}

/**
 * The one walk behind {@link findNotJson} and {@link stringify}: depth
 * first, in key order, with an explicit stack (deep nesting cannot overflow
 * the call stack). Each property is read exactly once, so what is checked is
 * what is written (a getter cannot answer differently the second time), and
 * the value's own methods (`toJSON` included) are never called. With
 * `write`, the compact JSON text is built as the walk goes.
 */
const walk = (value: unknown, root: string, write: boolean): Result.Result<string, NotJson> => {
  const top: Visit = { up: undefined, step: root, value, prefix: "" }
  const stack: Array<Visit | Leave> = [top]
  // The containers on the path from the root to the current value: meeting one again is a cycle.
  const open = new Set<object>()
  // Keys repeat across the objects of one value (rows of a table): each is quoted once.
  const quoted = new Map<string, string>()
  const notJson = (place: Place | undefined, found: string) => Result.fail({ path: spell(place, root), found })
  let out = ""
  while (stack.length > 0) {
    const frame = stack.pop() as Visit | Leave
    if ("leave" in frame) {
      open.delete(frame.leave)
      if (write) out += frame.close
      continue
    }
    // The top frame stands for the root name itself, not for a step below it.
    const place = frame === top ? undefined : frame
    const current = frame.value
    if (write) out += frame.prefix
    if (current === null) {
      if (write) out += "null"
      continue
    }
    if (typeof current !== "object") {
      const found = describeLeaf(current)
      if (found !== undefined) return notJson(place, found)
      // JSON.stringify of a string, a finite number or a boolean is exactly its JSON text.
      if (write) out += typeof current === "string" ? JSON.stringify(current) : String(current)
      continue
    }
    if (open.has(current)) return notJson(place, "a reference to a container it is inside of (a cycle)")
    const first = stack.length
    if (Array.isArray(current)) {
      if (Object.getPrototypeOf(current) !== Array.prototype) {
        return notJson(place, `an instance of ${prototypeName(current)}`)
      }
      stack.push({ leave: current, close: "]" })
      for (let index = 0; index < current.length; index++) {
        if (!Object.hasOwn(current, index)) return notJson({ up: place, step: index }, "an empty slot")
        stack.push({ up: place, step: index, value: current[index], prefix: index === 0 ? "" : "," })
      }
      if (write) out += "["
    } else {
      const prototype = Object.getPrototypeOf(current)
      if (prototype !== Object.prototype && prototype !== null) {
        return notJson(place, `an instance of ${prototypeName(current)}`)
      }
      stack.push({ leave: current, close: "}" })
      const keys = Object.keys(current)
      for (let index = 0; index < keys.length; index++) {
        const key = keys[index] as string
        let read: unknown
        try {
          read = (current as Record<string, unknown>)[key]
        } catch {
          return notJson({ up: place, step: key }, "a property that throws when read")
        }
        let prefix = ""
        if (write) {
          let text = quoted.get(key)
          if (text === undefined) {
            text = `${JSON.stringify(key)}:`
            quoted.set(key, text)
          }
          prefix = index === 0 ? text : `,${text}`
        }
        stack.push({ up: place, step: key, value: read, prefix })
      }
      if (write) out += "{"
    }
    open.add(current)
    // The children were pushed in order above their container's end: reversed, the first is visited first.
    reverse(stack, first + 1, stack.length - 1)
  }
  return Result.succeed(out)
}

const reverse = (items: Array<unknown>, from: number, to: number): void => {
  for (let low = from, high = to; low < high; low++, high--) {
    const swap = items[low]
    items[low] = items[high]
    items[high] = swap
  }
}

/** See `Tool.findNotJson`. */
export const findNotJson = (value: unknown, root = "$"): Option.Option<NotJson> =>
  Result.getFailure(walk(value, root, false))

/** See `Tool.isJson`. */
export const isJson = (value: unknown): boolean => Option.isNone(findNotJson(value))

/** See `Tool.stringifyJson`. */
export const stringify = (value: unknown, root = "$"): Result.Result<string, NotJson> => walk(value, root, true)
