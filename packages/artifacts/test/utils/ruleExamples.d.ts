/**
 * True-positive and true-negative examples for every default rule.
 *
 * Values are generated from each vendor's documented shape (prefix, length,
 * charset) by a seeded generator, so the examples are the same on every run
 * and no literal credential sits in the repository.
 */
/** A small seeded generator (mulberry32), so examples are stable across runs. */
export declare const generator: (seed: number) => {
  next: () => number
  pick: <A>(items: ReadonlyArray<A>) => A
  chars: (charset: string, length: number) => string
}
export declare const HEX = "0123456789abcdef"
export declare const DIGITS = "0123456789"
export declare const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
export declare const LOWER = "abcdefghijklmnopqrstuvwxyz"
export declare const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
export declare const URLSAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
export declare const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
export declare const BASE32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
/** Appends a Luhn check digit to `digits`. */
export declare const withLuhn: (digits: string) => string
/** A text in which exactly `secret` must be replaced, and nothing else. */
export interface Positive {
  readonly before: string
  readonly secret: string
  readonly after: string
}
export interface RuleExamples {
  readonly positives: ReadonlyArray<Positive>
  /** Texts the rule must leave unchanged. */
  readonly negatives: ReadonlyArray<string>
}
/** Every default rule's examples, by rule name. */
export declare const ruleExamples: Readonly<Record<string, RuleExamples>>
//# sourceMappingURL=ruleExamples.d.ts.map
