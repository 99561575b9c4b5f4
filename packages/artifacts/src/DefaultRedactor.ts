/**
 * The shipped redactor: a list of named rules that are plain data, plus the
 * secret values a host registers as `Redacted` values.
 *
 * Every match is replaced by `[REDACTED:<rule name>]`. The text is scanned
 * once per set of regular-expression flags (the default rules use two: none
 * and `i`), not once per rule: the rules of a set are combined into one
 * expression that finds where some rule matches, and there each rule of the
 * set is tried; the longest match that passes its rule's check wins, and the
 * scan goes on after it. Overlapping replacements are merged before anything
 * is replaced, so one rule's replacement text is never re-matched by another
 * and a secret partly covered by two rules is covered entirely.
 *
 * Every rule declares the longest text it can match (`maxLength`, in UTF-16
 * code units, bounded by the pattern's own quantifiers, including what its
 * lookaheads read). That bound is what makes streaming safe: {@link streaming}
 * holds back a tail of that many characters, so a secret split across two
 * chunks is always seen whole.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { ArtifactRedactor } from "./ArtifactRedactor.ts"
import { rules as shippedRules } from "./internal/secretRules.ts"

/**
 * One redaction rule. `pattern` is a regular expression source; when it has
 * named groups `secret`, `secret2`, ... only the ones that took part in a
 * match are replaced (so `password=` stays readable), otherwise the whole
 * match is. `verify`, when present, gets the replaced text (the first secret
 * group's, or the match's) and the name of that group, and can reject the
 * match (a checksum, a decoded form, an entropy floor).
 *
 * A pattern must not use numbered backreferences (`\1`): rules are combined
 * into one expression, which renumbers groups. Named ones (`\k<name>`) work.
 *
 * @since 0.1.0
 * @category models
 */
export interface RedactionRule {
  readonly name: string
  readonly pattern: string
  readonly flags?: string
  /** The longest match the pattern allows, plus what its lookaheads read past it, in UTF-16 code units. */
  readonly maxLength: number
  /**
   * How far before where it starts matching the pattern reads (lookbehinds,
   * `\b`), in UTF-16 code units; 1 when absent. A streaming redactor keeps
   * that much released text to scan with, so a chunk boundary never hides
   * the context a rule needs.
   */
  readonly maxLookbehind?: number
  /** What the rule catches, for people reading a list of rules. */
  readonly description?: string
  readonly verify?: (secret: string, group: string) => boolean
}

/**
 * The default rules, one per kind of secret; `docs/security-model.md` lists
 * them with what each catches and what none does.
 *
 * @example
 * ```ts
 * import { DefaultRedactor } from "@tessera/artifacts"
 *
 * const redactor = DefaultRedactor.make({ rules: DefaultRedactor.defaultRules })
 *
 * console.log(redactor.redactText("key AKIAIOSFODNN7EXAMPLE, db postgres://app:hunter2pass@db.internal/app"))
 * // "key [REDACTED:aws-access-key-id], db postgres://app:[REDACTED:url-credentials]@db.internal/app"
 * console.log(redactor.redactText("password=hunter2-pass-2026")) // "password=[REDACTED:password-assignment]"
 * ```
 *
 * @since 0.1.0
 * @category rules
 */
export const defaultRules: ReadonlyArray<RedactionRule> = shippedRules

/**
 * The name used for registered secret values.
 *
 * @since 0.1.0
 * @category rules
 */
export const registeredSecretRule = "registered-secret"

/**
 * The replacement for a match of `rule`.
 *
 * @since 0.1.0
 * @category rules
 */
export const replacementFor = (rule: string): string => `[REDACTED:${rule}]`

/**
 * A rule that cannot be used: its pattern does not compile, uses a numbered
 * backreference, matches the empty string, or its `maxLength` is not a
 * positive integer. `reason` says which; the pattern itself is not quoted.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidRedactionRule extends Schema.TaggedError<InvalidRedactionRule>()("InvalidRedactionRule", {
  rule: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `redaction rule ${this.rule} is invalid: ${this.reason}`
  }
}

/**
 * Options for {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface DefaultRedactorOptions {
  /** Defaults to {@link defaultRules}. */
  readonly rules?: ReadonlyArray<RedactionRule>
  /** Known secret values, replaced wherever they occur verbatim. */
  readonly secrets?: ReadonlyArray<Redacted.Redacted<string>>
}

/**
 * A compiled redactor.
 *
 * @since 0.1.0
 * @category models
 */
export interface DefaultRedactor {
  /** Returns `text` with every match replaced. */
  readonly redactText: (text: string) => string
  /**
   * The tail a streaming redactor holds back: one more than the longest
   * possible match, so a match's end and the character after it are seen.
   */
  readonly window: number
  /** The released text a streaming redactor keeps to scan with: the rules' longest look behind. */
  readonly context: number
  /** The merged regions {@link DefaultRedactor.redactText} replaces, in order. */
  readonly spans: (text: string) => ReadonlyArray<Span>
  /** Every accepted match, whole (name and operator included), with the regions it replaces. */
  readonly matches: (text: string) => ReadonlyArray<Match>
}

/**
 * A merged region to replace, named after the rule of its first match.
 *
 * @since 0.1.0
 * @category models
 */
export interface Span {
  readonly start: number
  readonly end: number
  readonly rule: string
}

/**
 * One accepted match: the whole matched text (`start`, `end`; `start` is
 * earlier than where the pattern matched when a secret group inside a
 * lookbehind captured text before it) and the regions of it that are replaced.
 *
 * @since 0.1.0
 * @category models
 */
export interface Match {
  readonly start: number
  readonly end: number
  readonly rule: string
  readonly replaced: ReadonlyArray<Span>
}

interface CompiledRule {
  readonly rule: RedactionRule
  /** The rule alone, sticky: tried at a position the combined expression found. */
  readonly sticky: RegExp
  readonly secretGroups: ReadonlyArray<string>
}

interface RuleSet {
  /** All rules of the set as alternatives: finds the next position where one of them matches. */
  readonly finder: RegExp
  readonly rules: ReadonlyArray<CompiledRule>
}

const allowedFlags = /^[imsu]*$/
const groupName = /\(\?<([A-Za-z_$][\w$]*)>/g
const numberedBackreference = /(?<!\\)(?:\\\\)*\\[1-9]/

const invalid = (rule: RedactionRule, reason: string) => new InvalidRedactionRule({ rule: rule.name, reason })

/** Prefixes the pattern's group names, so rules can share names inside one combined expression. */
const prefixGroups = (pattern: string, prefix: string): string =>
  pattern
    .replace(groupName, (_, name: string) => `(?<${prefix}${name}>`)
    .replace(/\\k<([A-Za-z_$][\w$]*)>/g, (_, name: string) => `\\k<${prefix}${name}>`)

const compileRule = (rule: RedactionRule, flags: string): CompiledRule => {
  if (!Number.isInteger(rule.maxLength) || rule.maxLength <= 0)
    throw invalid(rule, "maxLength must be a positive integer")
  if (rule.maxLookbehind !== undefined && (!Number.isInteger(rule.maxLookbehind) || rule.maxLookbehind < 0)) {
    throw invalid(rule, "maxLookbehind must be a non-negative integer")
  }
  if (numberedBackreference.test(rule.pattern)) throw invalid(rule, "numbered backreferences are not supported")
  let sticky: RegExp
  try {
    sticky = new RegExp(rule.pattern, `${flags}dy`)
  } catch (error) {
    // The engine's message quotes the pattern; only its diagnosis is kept.
    const diagnosis =
      error instanceof Error ? error.message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, "") : ""
    throw invalid(rule, `the pattern does not compile${diagnosis === "" ? "" : ` (${diagnosis})`}`)
  }
  sticky.lastIndex = 0
  if (sticky.test("")) throw invalid(rule, "the pattern matches the empty string")
  const secretGroups = [...rule.pattern.matchAll(groupName)]
    .map((found) => found[1] ?? "")
    .filter((name) => /^secret\d*$/.test(name))
  return { rule, sticky, secretGroups }
}

const normalFlags = (rule: RedactionRule): string => {
  const flags = [...new Set(rule.flags ?? "")].sort().join("")
  if (!allowedFlags.test(flags)) throw invalid(rule, `flags may only be i, m, s and u (got ${rule.flags})`)
  return flags
}

const compileSets = (rules: ReadonlyArray<RedactionRule>): ReadonlyArray<RuleSet> => {
  const byFlags = new Map<string, Array<RedactionRule>>()
  for (const rule of rules) {
    const flags = normalFlags(rule)
    byFlags.set(flags, [...(byFlags.get(flags) ?? []), rule])
  }
  return [...byFlags].map(([flags, members]) => {
    const compiled = members.map((rule) => compileRule(rule, flags))
    const source = compiled.map((one, index) => `(?:${prefixGroups(one.rule.pattern, `r${index}_`)})`).join("|")
    return { finder: new RegExp(source, `${flags}g`), rules: compiled }
  })
}

/** The rule's match at `at`, when it has one that passes its check. */
const matchAt = (compiled: CompiledRule, text: string, at: number): Match | undefined => {
  compiled.sticky.lastIndex = at
  const found = compiled.sticky.exec(text)
  if (found === null || found[0].length === 0) return undefined
  const end = at + found[0].length
  const name = compiled.rule.name
  const groups = found.indices?.groups ?? {}
  const replaced: Array<Span> = []
  let checked: { readonly text: string; readonly group: string } | undefined
  for (const group of compiled.secretGroups) {
    const range = groups[group]
    if (range === undefined || range[1] <= range[0]) continue
    replaced.push({ start: range[0], end: range[1], rule: name })
    checked ??= { text: text.slice(range[0], range[1]), group }
  }
  if (compiled.secretGroups.length === 0) replaced.push({ start: at, end, rule: name })
  if (replaced.length === 0) return undefined
  const verify = compiled.rule.verify
  if (verify !== undefined && !verify(checked?.text ?? found[0], checked?.group ?? "")) return undefined
  // A secret group inside a lookbehind starts before the match; the match is counted from there.
  return { start: Math.min(at, ...replaced.map((span) => span.start)), end, rule: name, replaced }
}

const scanSet = (set: RuleSet, text: string, into: Array<Match>): void => {
  const finder = set.finder
  finder.lastIndex = 0
  while (finder.lastIndex <= text.length) {
    const found = finder.exec(text)
    if (found === null) return
    const at = found.index
    let best: Match | undefined
    for (const compiled of set.rules) {
      const match = matchAt(compiled, text, at)
      if (match !== undefined && (best === undefined || match.end > best.end)) best = match
    }
    if (best !== undefined) into.push(best)
    // After a rejected candidate the scan goes on at the next character: its text may hold another rule's match.
    finder.lastIndex = best !== undefined ? best.end : at + 1
  }
}

const merge = (found: Array<Span>): ReadonlyArray<Span> => {
  found.sort((a, b) => a.start - b.start || b.end - a.end)
  const merged: Array<Span> = []
  for (const span of found) {
    const last = merged[merged.length - 1]
    // Adjacent regions become one: a marker never sits right beside another.
    if (last !== undefined && span.start <= last.end) {
      if (span.end > last.end) merged[merged.length - 1] = { ...last, end: span.end }
    } else {
      merged.push(span)
    }
  }
  return merged
}

const render = (text: string, spans: ReadonlyArray<Span>): string => {
  let out = ""
  let at = 0
  for (const span of spans) {
    out += text.slice(at, span.start) + replacementFor(span.rule)
    at = span.end
  }
  return out + text.slice(at)
}

/**
 * Compiles rules and registered secrets.
 *
 * @throws InvalidRedactionRule when a rule cannot be used.
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: DefaultRedactorOptions = {}): DefaultRedactor => {
  const rules = options.rules ?? defaultRules
  const sets = compileSets(rules)
  const secrets = (options.secrets ?? []).map((secret) => Redacted.value(secret)).filter((value) => value.length > 0)
  const window = Math.max(0, ...rules.map((rule) => rule.maxLength), ...secrets.map((value) => value.length)) + 1
  const context = Math.max(1, ...rules.map((rule) => rule.maxLookbehind ?? 1))

  const matches = (text: string): ReadonlyArray<Match> => {
    const found: Array<Match> = []
    for (const set of sets) scanSet(set, text, found)
    for (const secret of secrets) {
      for (let at = text.indexOf(secret); at >= 0; at = text.indexOf(secret, at + 1)) {
        const end = at + secret.length
        found.push({
          start: at,
          end,
          rule: registeredSecretRule,
          replaced: [{ start: at, end, rule: registeredSecretRule }]
        })
      }
    }
    return found
  }
  const spans = (text: string): ReadonlyArray<Span> => merge(matches(text).flatMap((match) => match.replaced))

  return { redactText: (text) => render(text, spans(text)), window, context, spans, matches }
}

/**
 * A redactor for a body that arrives in chunks.
 *
 * @since 0.1.0
 * @category models
 */
export interface StreamingRedactor {
  /** Accepts the next chunk and returns the redacted text that is now final (possibly empty). */
  readonly push: (chunk: string) => string
  /** Returns the redacted rest; the redactor is empty afterwards. */
  readonly end: () => string
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

/**
 * A streaming redactor: it releases text only once it lies more than
 * `window` characters before the end of what has arrived (scanning once at
 * least another `window` characters have arrived), never cuts inside
 * a match, and keeps the last `context` released characters to scan with (a
 * rule's look behind reads them), so the concatenated output contains no
 * secret that a whole-body redaction would have caught, wherever the chunk
 * boundaries fall.
 *
 * @since 0.1.0
 * @category constructors
 */
export const streaming = (redactor: DefaultRedactor): StreamingRedactor => {
  // `pending` starts with `kept` characters that were already released: context for the rules' look behind.
  let pending = ""
  let kept = 0
  /** Renders `pending` from `kept` to `cut` with the regions of `matches` inside it. */
  const release = (matches: ReadonlyArray<Match>, cut: number): string => {
    const spans = merge(matches.filter((match) => match.end <= cut).flatMap((match) => match.replaced))
      .map((span) => ({ ...span, start: Math.max(span.start - kept, 0), end: span.end - kept }))
      .filter((span) => span.end > span.start)
    return render(pending.slice(kept, cut), spans)
  }
  return {
    push: (chunk) => {
      pending += chunk
      // Scanning waits for a window's worth of new text beyond the held-back tail, so each scan releases at
      // least that much and small chunks cost linear time overall, not a rescan of the tail per chunk.
      if (pending.length - kept <= 2 * redactor.window) return ""
      const matches = redactor.matches(pending)
      // The cut never falls inside a whole match (name included): the rest would no longer match on its own.
      let cut = pending.length - redactor.window
      if (cut > kept && isHighSurrogate(pending.charCodeAt(cut - 1))) cut -= 1
      for (let moved = true; moved; ) {
        moved = false
        for (const match of matches) {
          const earlier = Math.max(match.start, kept)
          if (match.start < cut && match.end > cut && earlier < cut) {
            cut = earlier
            moved = true
          }
        }
      }
      const released = release(matches, cut)
      const from = Math.max(0, cut - redactor.context)
      pending = pending.slice(from)
      kept = cut - from
      return released
    },
    end: () => {
      const rest = release(redactor.matches(pending), pending.length)
      pending = ""
      kept = 0
      return rest
    }
  }
}

/**
 * Provides the default redactor as the host's `ArtifactRedactor`. Fails with
 * {@link InvalidRedactionRule} when a host rule cannot be used.
 *
 * @example
 * ```ts
 * import { DefaultRedactor } from "@tessera/artifacts"
 * import { Effect, Layer, Redacted } from "effect"
 *
 * // Tessera's rules, the host's own pattern, and a secret the host knows by value.
 * export const redactor = DefaultRedactor.layer({
 *   rules: [...DefaultRedactor.defaultRules, { name: "internal-ticket-token", pattern: "TKT-[0-9]{6}", maxLength: 10 }],
 *   secrets: [Redacted.make("s3cret-db-pass-2026")]
 * })
 *
 * // A rule that matches the empty string cannot be used: the layer fails instead of redacting nothing.
 * export const refused = Layer.build(DefaultRedactor.layer({ rules: [{ name: "empty", pattern: "x*", maxLength: 10 }] })).pipe(
 *   Effect.flip,
 *   Effect.map((error) => error.reason),
 *   Effect.scoped
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: DefaultRedactorOptions = {}): Layer.Layer<ArtifactRedactor, InvalidRedactionRule> =>
  Layer.effect(ArtifactRedactor)(
    Effect.map(
      Effect.try({
        try: () => make(options),
        // `make` throws nothing else: every failure of a rule is turned into this error where it is found.
        catch: (error) => error as InvalidRedactionRule
      }),
      (redactor) => ({ redact: (body: string) => Effect.sync(() => redactor.redactText(body)) })
    )
  )
