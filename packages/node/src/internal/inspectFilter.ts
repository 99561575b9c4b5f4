/**
 * The inspector's entry filters (`--kind`, `--turn`, `--since`): checked
 * once into an {@link EntryFilter}, then a pure predicate on entries. An
 * entry is shown when it matches every filter given; no filter shows all.
 *
 * @internal
 */
import * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/** A journal entry's tag. */
export type EntryKind = JournalEntry.Entry["_tag"]

/** Every entry tag the journal knows, in the order `JournalEntry.Entry` declares them. */
export const entryKinds: ReadonlyArray<EntryKind> = JournalEntry.Entry.members.map(
  (member) => member.fields._tag.schema.literal
)

/** A filter the inspector was given could not be used; documented where `Inspector` exports it. */
export class InvalidFilter extends Schema.TaggedError<InvalidFilter>()("InvalidFilter", {
  filter: Schema.Literals(["kind", "turn", "since"]),
  detail: Schema.String
}) {
  override get message(): string {
    return `--${this.filter}: ${this.detail}`
  }
}

/** The filters as given to `Inspector.inspect` (strings for kinds and times, as a command line has them). */
export interface FilterOptions {
  /** Only entries of these tags. Each item may hold several, comma-separated (`"ToolCalled,ToolResulted"`). */
  readonly kinds?: ReadonlyArray<string> | undefined
  /** Only entries of this turn (entries without a turn, such as a store-level repair, do not match). */
  readonly turn?: number | undefined
  /** Only entries journaled at or after this instant (a `Date`, or an ISO 8601 time such as `2026-01-02T03:04:05Z`). */
  readonly since?: Date | string | undefined
}

/** Checked filters; an absent field does not filter. */
export interface EntryFilter {
  readonly kinds?: ReadonlyArray<EntryKind>
  readonly turn?: number
  readonly since?: Date
}

const known: ReadonlySet<string> = new Set(entryKinds)
const isKind = (name: string): name is EntryKind => known.has(name)

// A calendar date, optionally followed by a time: what ISO 8601 looks like; `Date.parse` alone accepts far more.
const isoTime = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/

/** The filters checked: every kind a known tag, the turn a positive integer, the time a valid ISO 8601 instant. */
export const makeFilter = (options: FilterOptions): Result.Result<EntryFilter, InvalidFilter> => {
  const filter: { kinds?: ReadonlyArray<EntryKind>; turn?: number; since?: Date } = {}
  if (options.kinds !== undefined) {
    const names = options.kinds.flatMap((item) => item.split(",")).map((name) => name.trim())
    const given = names.filter((name) => name.length > 0)
    const unknown = given.filter((name) => !isKind(name))
    if (unknown.length > 0) {
      return Result.fail(
        new InvalidFilter({
          filter: "kind",
          detail: `unknown entry kind${unknown.length === 1 ? "" : "s"} ${unknown.map((name) => JSON.stringify(name)).join(", ")}; the known kinds are ${entryKinds.join(", ")}`
        })
      )
    }
    if (given.length === 0) {
      return Result.fail(
        new InvalidFilter({ filter: "kind", detail: `no kind given; the known kinds are ${entryKinds.join(", ")}` })
      )
    }
    filter.kinds = [...new Set(given.filter(isKind))]
  }
  if (options.turn !== undefined) {
    if (!Number.isSafeInteger(options.turn) || options.turn < 1) {
      return Result.fail(
        new InvalidFilter({ filter: "turn", detail: `a turn is an integer >= 1, not ${options.turn}` })
      )
    }
    filter.turn = options.turn
  }
  if (options.since !== undefined) {
    const since = options.since
    const date = typeof since === "string" ? (isoTime.test(since.trim()) ? new Date(since.trim()) : undefined) : since
    if (date === undefined || Number.isNaN(date.getTime())) {
      return Result.fail(
        new InvalidFilter({
          filter: "since",
          detail: `expected an ISO 8601 time such as 2026-01-02T03:04:05Z, not ${JSON.stringify(String(since))}`
        })
      )
    }
    filter.since = date
  }
  return Result.succeed(filter)
}

/** Whether a filter is given at all. */
export const isFiltering = (filter: EntryFilter): boolean =>
  filter.kinds !== undefined || filter.turn !== undefined || filter.since !== undefined

/** Whether `entry` matches every filter given. */
export const matches = (filter: EntryFilter, entry: JournalEntry.Entry): boolean =>
  (filter.kinds === undefined || filter.kinds.includes(entry._tag)) &&
  (filter.turn === undefined || ("turn" in entry && entry.turn === filter.turn)) &&
  (filter.since === undefined || entry.at >= filter.since.getTime())

/** The filters in words, for the text report: `kind ToolCalled,ToolResulted, turn 2, since 2026-…`. */
export const describeFilter = (filter: EntryFilter): string =>
  [
    filter.kinds === undefined ? undefined : `kind ${filter.kinds.join(",")}`,
    filter.turn === undefined ? undefined : `turn ${filter.turn}`,
    filter.since === undefined ? undefined : `since ${filter.since.toISOString()}`
  ]
    .filter((part) => part !== undefined)
    .join(", ")
