/**
 * What a caller can reach of a value, for the scrub tests of every package
 * (the runtime's own and, by path, the node package's door measures).
 */
/**
 * Every text reachable from `value`, the way a caller could reach it: own
 * keys and what each own property holds (getters called), `message`,
 * `stack` and `String(value)` read through the prototype too, map and set
 * entries. Cycles are followed once; at most `limit` objects are visited.
 */
export const everyText = (value: unknown, limit = 50_000): Array<string> => {
  const texts: Array<string> = []
  const seen = new Set<object>()
  const visit = (item: unknown): void => {
    if (typeof item === "string") {
      texts.push(item)
      return
    }
    if ((typeof item !== "object" && typeof item !== "function") || item === null || seen.has(item)) return
    if (seen.size >= limit) return
    seen.add(item)
    const attempt = (read: () => unknown) => {
      try {
        visit(read())
      } catch {
        // An unreadable property shows nothing.
      }
    }
    if (item instanceof Error) {
      attempt(() => item.message)
      attempt(() => item.stack)
      attempt(() => String(item))
    }
    if (item instanceof Map) {
      for (const [key, entry] of item) {
        visit(key)
        visit(entry)
      }
    }
    if (item instanceof Set) for (const entry of item) visit(entry)
    let keys: Array<string | symbol> = []
    try {
      keys = Reflect.ownKeys(item)
    } catch {
      return
    }
    for (const key of keys) {
      if (typeof key === "string") texts.push(key)
      attempt(() => {
        const descriptor = Object.getOwnPropertyDescriptor(item, key)
        if (descriptor === undefined) return undefined
        return "value" in descriptor ? descriptor.value : descriptor.get?.call(item)
      })
    }
  }
  visit(value)
  return texts
}
