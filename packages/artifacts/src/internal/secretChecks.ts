/**
 * Checks a rule runs on a candidate secret after its pattern matched. They
 * exist for what a pattern cannot say: a checksum, the decoded form of a
 * value, or that a value assigned to a secret-like name is a literal and not
 * a reference, a type or a placeholder.
 */

/** Shannon entropy in bits per character. */
export const entropy = (value: string): number => {
  const counts = new Map<string, number>()
  for (const char of value) counts.set(char, (counts.get(char) ?? 0) + 1)
  let bits = 0
  const length = [...value].length
  for (const count of counts.values()) {
    const p = count / length
    bits -= p * Math.log2(p)
  }
  return bits
}

/** The Luhn checksum of a card number (digits only). */
export const luhn = (digits: string): boolean => {
  let sum = 0
  for (let index = 0; index < digits.length; index++) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48
    if (digit < 0 || digit > 9) return false
    if (index % 2 === 1) {
      digit *= 2
      if (digit > 9) digit -= 9
    }
    sum += digit
  }
  return sum % 10 === 0
}

/** Whether `value` is the base64 of printable `user:password` credentials (HTTP Basic, Docker's `auth`). */
export const basicCredentials = (value: string): boolean => {
  if (value.length % 4 !== 0) return false
  let decoded: string
  try {
    decoded = atob(value)
  } catch {
    return false
  }
  const colon = decoded.indexOf(":")
  return colon > 0 && colon < decoded.length - 1 && /^[\x20-\x7e]+$/.test(decoded)
}

/** Words that, as a whole value, are a type, a keyword or a mask rather than a secret. */
const notSecrets = new Set([
  "true",
  "false",
  "null",
  "nil",
  "none",
  "undefined",
  "empty",
  "required",
  "optional",
  "string",
  "str",
  "text",
  "int",
  "integer",
  "number",
  "bool",
  "boolean",
  "bytes",
  "object",
  "any",
  "unknown",
  "secretstr",
  "redacted",
  "hidden",
  "masked",
  "omitted",
  "changeit-placeholder"
])

const reference =
  /^(?:\$|%[A-Za-z_]\w*%|\{\{|<[^>]*>$|#\{|!(?:Ref|Sub|GetAtt|vault)\b|@Value|(?:process\.env|os\.environ|os\.getenv|getenv|env|ENV|secrets|vars|config|settings|self|this|ctx|context|params|args|options|opts|props)[.[(])/
const masked = /^(?:[*xX•.#_-]{3,}|\[REDACTED[^\]]*\]|your[_-][\w-]*|<.*)$/
const identifierPath = /^[A-Za-z_$][A-Za-z_$]*(?:\.[A-Za-z_$][A-Za-z_$]*)*$/

/** A value that is a reference, a type, a keyword or a mask, not a literal secret. */
export const notALiteral = (value: string, quoted: boolean): boolean => {
  if (reference.test(value) || masked.test(value) || notSecrets.has(value.toLowerCase())) return true
  // A path with two or more folders is a file's location (`"PWD": "/Users/ann"`).
  if (/^(?:~|\.{1,2})?\/[^/\s]+\//.test(value)) return true
  // Unquoted, a bare identifier or member path (no digit, no symbol) is code (`password = user.password`),
  // a hexadecimal literal is a constant (`STENCIL_PASS_DEPTH_PASS: 0x0B96`), and so is a path.
  return !quoted && (identifierPath.test(value) || /^0x[0-9a-f]+$/i.test(value) || /^(?:~|\.{1,2})?\//.test(value))
}

/** A value that looks generated: long enough, varied, and not a plain word or number. */
export const looksGenerated = (value: string): boolean => {
  if (value.length < 8 || /^\d+$/.test(value) || /^[a-z]+$/i.test(value)) return false
  // Lower case with separators is a name (`my-app-secret`); generated values mix letters and digits or cases.
  const classes = Number(/[a-z]/.test(value)) + Number(/[A-Z]/.test(value)) + Number(/\d/.test(value))
  return classes >= 2 && entropy(value) >= 2.8
}
