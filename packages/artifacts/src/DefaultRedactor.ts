/**
 * The shipped redactor: a list of named rules that are plain data, plus the
 * secret values a host registers as `Redacted` values.
 *
 * Every match is replaced by `[REDACTED:<rule name>]`. All rules are matched
 * against the same input in one pass and overlapping matches are merged
 * before anything is replaced, so one rule's replacement text is never
 * re-matched by another and a secret partly covered by two rules is covered
 * entirely.
 *
 * Every rule declares the longest text it can match (`maxLength`, in UTF-16
 * code units, bounded by the pattern's own quantifiers). That bound is what
 * makes streaming safe: {@link streaming} holds back a tail of that many
 * characters, so a secret split across two chunks is always seen whole.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Redacted } from "effect"
import { ArtifactRedactor } from "./ArtifactRedactor.ts"

/**
 * One redaction rule. `pattern` is a regular expression source; when it has a
 * named group `secret`, only that group is replaced (so `password=` stays
 * readable), otherwise the whole match is.
 *
 * @since 0.1.0
 * @category models
 */
export interface RedactionRule {
  readonly name: string
  readonly pattern: string
  readonly flags?: string
  /** The longest match the pattern allows, in UTF-16 code units. */
  readonly maxLength: number
}

/**
 * The default rules.
 *
 * @since 0.1.0
 * @category rules
 */
export const defaultRules: ReadonlyArray<RedactionRule> = [
  {
    name: "aws-access-key-id",
    pattern: "\\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\\b",
    maxLength: 20
  },
  {
    name: "aws-secret-access-key",
    pattern:
      "\\baws_?(?:secret_?access_?key|secret_?key)\\b[\"']?[ \\t]{0,8}[:=][ \\t]{0,8}[\"']?(?<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    flags: "i",
    maxLength: 96
  },
  { name: "github-token", pattern: "\\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,251}\\b", maxLength: 255 },
  { name: "github-fine-grained-token", pattern: "\\bgithub_pat_[A-Za-z0-9_]{22,244}", maxLength: 255 },
  { name: "gitlab-token", pattern: "\\bglpat-[A-Za-z0-9_-]{20,249}", maxLength: 255 },
  {
    name: "jwt",
    pattern: "\\beyJ[A-Za-z0-9_-]{2,4096}\\.eyJ[A-Za-z0-9_-]{2,8192}\\.[A-Za-z0-9_-]{0,4096}",
    maxLength: 16392
  },
  {
    name: "private-key-block",
    // A complete block, or (when no END line follows) the header and everything key-like after it.
    pattern:
      "-----BEGIN[A-Z0-9 ]{0,32} PRIVATE KEY-----(?:[\\s\\S]{0,16384}?-----END[A-Z0-9 ]{0,32} PRIVATE KEY-----|[A-Za-z0-9+/=\\s:,.-]{0,16384})",
    maxLength: 16512
  },
  {
    name: "bearer-token",
    pattern: "\\bbearer[ \\t]{1,8}(?<secret>[A-Za-z0-9._~+/-]{8,4096}={0,8})",
    flags: "i",
    maxLength: 4128
  },
  {
    name: "key-value-secret",
    pattern:
      "\\b(?:password|passwd|pwd|passphrase|secret|client[_-]?secret|api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?key)\\b[\"']?[ \\t]{0,8}[:=][ \\t]{0,8}[\"']?(?<secret>[^\\s\"',;]{1,512})",
    flags: "i",
    maxLength: 560
  },
  {
    name: "connection-string-password",
    pattern: "\\b[A-Za-z][A-Za-z0-9+.-]{1,31}://[^\\s:/@]{0,256}:(?<secret>[^\\s@/]{1,256})@",
    maxLength: 560
  }
]

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

interface CompiledRule {
  readonly name: string
  readonly regex: RegExp
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
  readonly spans: (text: string) => ReadonlyArray<Span>
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

const compile = (rule: RedactionRule): CompiledRule => {
  const flags = new Set([...(rule.flags ?? ""), "g", "d"])
  return { name: rule.name, regex: new RegExp(rule.pattern, [...flags].join("")) }
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
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: DefaultRedactorOptions = {}): DefaultRedactor => {
  const rules = options.rules ?? defaultRules
  const compiled = rules.map(compile)
  const secrets = (options.secrets ?? []).map((secret) => Redacted.value(secret)).filter((value) => value.length > 0)
  const window = Math.max(0, ...rules.map((rule) => rule.maxLength), ...secrets.map((value) => value.length)) + 1

  const spans = (text: string): ReadonlyArray<Span> => {
    const found: Array<Span> = []
    for (const rule of compiled) {
      for (const match of text.matchAll(rule.regex)) {
        const range = match.indices?.groups?.secret ?? match.indices?.[0]
        if (range !== undefined && range[1] > range[0]) found.push({ start: range[0], end: range[1], rule: rule.name })
      }
    }
    for (const secret of secrets) {
      for (let at = text.indexOf(secret); at >= 0; at = text.indexOf(secret, at + 1)) {
        found.push({ start: at, end: at + secret.length, rule: registeredSecretRule })
      }
    }
    found.sort((a, b) => a.start - b.start || b.end - a.end)
    const merged: Array<Span> = []
    for (const span of found) {
      const last = merged[merged.length - 1]
      if (last !== undefined && span.start < last.end) {
        if (span.end > last.end) merged[merged.length - 1] = { ...last, end: span.end }
      } else {
        merged.push(span)
      }
    }
    return merged
  }

  return { redactText: (text) => render(text, spans(text)), window, spans }
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
 * `window` characters before the end of what has arrived, and never cuts
 * inside a match, so the concatenated output contains no secret that a
 * whole-body redaction would have caught, wherever the chunk boundaries fall.
 *
 * @since 0.1.0
 * @category constructors
 */
export const streaming = (redactor: DefaultRedactor): StreamingRedactor => {
  let pending = ""
  return {
    push: (chunk) => {
      pending += chunk
      if (pending.length <= redactor.window) return ""
      const spans = redactor.spans(pending)
      let cut = pending.length - redactor.window
      for (const span of spans) {
        if (span.start < cut && span.end > cut) cut = span.start
      }
      if (cut > 0 && isHighSurrogate(pending.charCodeAt(cut - 1))) cut -= 1
      const released = render(
        pending.slice(0, cut),
        spans.filter((span) => span.end <= cut)
      )
      pending = pending.slice(cut)
      return released
    },
    end: () => {
      const rest = redactor.redactText(pending)
      pending = ""
      return rest
    }
  }
}

/**
 * Provides the default redactor as the host's `ArtifactRedactor`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: DefaultRedactorOptions = {}): Layer.Layer<ArtifactRedactor> => {
  const redactor = make(options)
  return Layer.succeed(ArtifactRedactor)({ redact: (body) => Effect.sync(() => redactor.redactText(body)) })
}
