/**
 * The default rules as they were before connection strings, CLI passwords,
 * JSON-escaped text, pagination tokens, bare base64 keys, Docker configs and
 * line-start config assignments were handled: built from the shipped rules
 * by taking each fix out again, for the negative controls. Every swap fails
 * when its text is no longer in the pattern, so a control never silently
 * runs the shipped rule.
 */
import { DefaultRedactor } from "@tessera/artifacts"

export type Rule = DefaultRedactor.RedactionRule
const shipped = DefaultRedactor.defaultRules

export const ruleNamed = (name: string): Rule => {
  const rule = shipped.find((one) => one.name === name)
  if (rule === undefined) throw new Error(`no default rule ${name}`)
  return rule
}

/** `rule` with `from` replaced by `to` in its pattern; throws when `from` is not there. */
export const swapped = (rule: Rule, from: string, to: string): Rule => {
  if (!rule.pattern.includes(from)) throw new Error(`${rule.name}'s pattern does not contain ${from}`)
  return { ...rule, pattern: rule.pattern.replaceAll(from, to) }
}

/** The shipped rules without `removed`, and with `changed` in place of the rules of the same names. */
export const formerRules = (removed: ReadonlyArray<string>, changed: ReadonlyArray<Rule> = []): ReadonlyArray<Rule> => {
  for (const name of [...removed, ...changed.map((rule) => rule.name)]) ruleNamed(name)
  return shipped
    .filter((rule) => !removed.includes(rule.name))
    .map((rule) => changed.find((one) => one.name === rule.name) ?? rule)
}

/** The user-info check before `;`, `?` and `&` ended user info: any run without `/` or `@` after `://` counted. */
export const formerUserInfo = (rule: Rule): Rule =>
  swapped(rule, String.raw`(?<!://[^\s/@;?&]{0,64})`, String.raw`(?<!://[^\s/@]{0,64})`)

/** The unquoted value before it stopped at escapes: a backslash was a value character like any other. */
export const formerBare = (rule: Rule): Rule =>
  swapped(
    rule,
    String.raw`(?:[^\s"'\x60,;&<>(){}\[\]\\]|\\{1,8}(?![nrt"'\x60\\])|`,
    String.raw`(?:[^\s"'\x60,;&<>(){}\[\]]|`
  )

const tokenNames =
  "(?:eos|bos|pad|unk|sep|cls|mask|max|next|page|pagination|continuation|starting|start|resume|resumption|forward|backward|skip|sync|cancellation|idempotency|request)"
/** The token names before pagination and idempotency tokens were told apart. */
export const formerTokenNames = (rule: Rule): Rule =>
  swapped(rule, tokenNames, "(?:eos|bos|pad|unk|sep|cls|mask|next|page|continuation|cancellation|sync|max)")
/** The flag rule before it knew pagination tokens. */
export const formerFlag = (): Rule => swapped(ruleNamed("cli-secret-flag"), `token(?<!${tokenNames}-token)`, "token")

/** The patterns the changed rules had. */
export const formerPatterns = {
  "cli-user-password": String.raw`(?<![\w-])(?:-u|--user|--proxy-user|--http-user)(?:[ \t]{1,8}|=)["']?[^\s:"']{1,128}:(?<secret>[^\s"']{1,256})`,
  "authorization-header": String.raw`\bauthorization\b(?:\\?["'])?[ \t]{0,8}[:=][ \t]{0,8}(?:\\?["'])?(?:(?:token|apikey|api-key|key|sso-key)[ \t]{1,8})?(?!AWS4-)(?<secret>[A-Za-z0-9._~+/:-]{8,1024}={0,8})(?![A-Za-z0-9._~+/:=-])`,
  "docker-config-auth": String.raw`"auth"[ \t]{0,8}:[ \t]{0,8}"(?<secret>[A-Za-z0-9+/]{6,1024}={0,2})"`
} as const
/** `name` with its former pattern (and the look behind the former pattern needed). */
export const withFormerPattern = (name: keyof typeof formerPatterns): Rule => ({
  ...ruleNamed(name),
  pattern: formerPatterns[name],
  maxLookbehind: 1
})

/** The rules added with these fixes. */
export const addedRules = [
  "connection-string-password",
  "cli-password-option",
  "private-key-base64",
  "docker-config-json",
  "dynatrace-token",
  "config-secret-assignment"
] as const

/** Pagination tokens as the former rules saw them: flagged by the flag rule and the token names. */
export const formerPagination = (): ReadonlyArray<Rule> =>
  formerRules(
    [],
    [
      formerFlag(),
      formerTokenNames(ruleNamed("secret-assignment")),
      formerTokenNames(ruleNamed("config-secret-assignment"))
    ]
  )

/** Every fix taken out at once: the rules as they were. */
export const rulesBefore = (): ReadonlyArray<Rule> =>
  formerRules(addedRules, [
    formerTokenNames(formerUserInfo(formerBare(ruleNamed("secret-assignment")))),
    formerUserInfo(formerBare(ruleNamed("password-assignment"))),
    formerBare(ruleNamed("name-value-secret")),
    withFormerPattern("cli-user-password"),
    withFormerPattern("authorization-header"),
    withFormerPattern("docker-config-auth"),
    formerFlag()
  ])
