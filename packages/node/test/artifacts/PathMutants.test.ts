/**
 * The edges of the lexical path guards that the broader path tests
 * (`ArtifactPath.test.ts`, `ArtifactOffload.test.ts`) do not pin down: the
 * target-length bound at exactly `maxTargetBytes`, the order of the refusals,
 * the drive check's anchor, a rejection's shown target, and the host policy's
 * folder comparison (the location itself, root `/`, trailing separators,
 * backslashes, a path under only one of two locations) and its location
 * checks. Each is a guarantee a caller can see; each has a negative control
 * showing the same assertion fails against a deliberately broken copy.
 */
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPath, ArtifactPathPolicy } from "@tessera/artifacts"
import { Effect, Exit, Result } from "effect"

const { maxTargetBytes, resolveRelative } = ArtifactPath

/** The problem a target is refused for, or `undefined` when it resolves. */
const problemOf = (target: string): ArtifactPath.ArtifactPathProblem | undefined => {
  const resolved = resolveRelative(target)
  return Result.isFailure(resolved) ? resolved.failure.problem : undefined
}

/** The normalised relative path a target resolves to; fails the test when it is refused. */
const relativeOf = (target: string): string => {
  const resolved = resolveRelative(target)
  if (Result.isFailure(resolved)) return assert.fail(`${JSON.stringify(target)} refused ${resolved.failure.problem}`)
  return resolved.success.relative
}

const messageOf = (target: string): string => {
  const resolved = resolveRelative(target)
  if (Result.isSuccess(resolved)) return assert.fail(`${JSON.stringify(target)} resolved`)
  return resolved.failure.message
}

const messageTail = `it must be a relative path of at most ${maxTargetBytes} bytes that stays below the artifact root`

describe("ArtifactPath edges", () => {
  it("target_length_bound: a target of exactly maxTargetBytes UTF-8 bytes resolves and one byte more is TooLong, in ASCII, two-byte, three-byte and four-byte text", () => {
    assert.strictEqual(maxTargetBytes, 4096)
    const exact = [
      "a".repeat(maxTargetBytes),
      "é".repeat(maxTargetBytes / 2),
      `${"€".repeat(1365)}a`,
      `${"👩".repeat(1023)}abcd`,
      `${"a/".repeat(2047)}bc`
    ]
    for (const target of exact) {
      assert.strictEqual(new TextEncoder().encode(target).length, maxTargetBytes)
      assert.isUndefined(problemOf(target), `${target.length} units`)
    }
    for (const target of exact.map((text) => `${text}x`)) assert.strictEqual(problemOf(target), "TooLong")
    // 1,366 units of a three-byte character: the first length whose tripled count passes the bound.
    assert.strictEqual(problemOf("€".repeat(1366)), "TooLong")
    assert.isUndefined(problemOf("€".repeat(1365)))
  })

  it("negative control: a bound checked with >= instead of > refuses the exact-length targets the guarantee admits", () => {
    const offByOne = (target: string) => new TextEncoder().encode(target).length >= maxTargetBytes
    assert.isTrue(offByOne("a".repeat(maxTargetBytes)))
    assert.isTrue(offByOne("é".repeat(maxTargetBytes / 2)))
    assert.isUndefined(problemOf("a".repeat(maxTargetBytes)))
  })

  it("refusal_order: TooLong before NulByte before Absolute before the segment checks", () => {
    assert.strictEqual(problemOf(`/\0${"a".repeat(maxTargetBytes)}`), "TooLong")
    assert.strictEqual(problemOf("/a\0"), "NulByte")
    assert.strictEqual(problemOf("a\0b"), "NulByte")
    assert.strictEqual(problemOf("../\0"), "NulByte")
    assert.strictEqual(problemOf("/.."), "Absolute")
    assert.strictEqual(problemOf("\\.."), "Absolute")
    assert.strictEqual(problemOf("C:.."), "Absolute")
    assert.strictEqual(problemOf("a/C:/.."), "Absolute")
    assert.strictEqual(problemOf("../C:"), "Traversal")
  })

  it("absolute_forms: a leading / or \\ and a drive designator at the start of any segment are Absolute; a colon elsewhere and a trailing separator are not", () => {
    for (const target of [
      "/x",
      "\\x",
      "//server/share",
      "\\\\server\\share",
      "C:x",
      "z:\\x",
      "a/B:x",
      "a\\c:",
      "a/./Q:"
    ]) {
      assert.strictEqual(problemOf(target), "Absolute", target)
    }
    assert.strictEqual(relativeOf("aC:b"), "aC:b")
    assert.strictEqual(relativeOf("call:1.txt"), "call:1.txt")
    assert.strictEqual(relativeOf("a/1:x"), "a/1:x")
    assert.strictEqual(relativeOf("a/_:x"), "a/_:x")
    assert.strictEqual(relativeOf("a/"), "a")
    assert.strictEqual(relativeOf("a\\"), "a")
    assert.strictEqual(relativeOf("a/b\\"), "a/b")
  })

  it("segments: both separators split, empty and . segments drop, .. pops one segment and is Traversal only at the root, nothing left is Empty", () => {
    assert.deepStrictEqual(
      resolveRelative("a//b/./c\\\\d"),
      Result.succeed({ segments: ["a", "b", "c", "d"], relative: "a/b/c/d" })
    )
    assert.strictEqual(relativeOf("a/b/../c"), "a/c")
    assert.strictEqual(relativeOf("a/b/../../c"), "c")
    assert.strictEqual(relativeOf("..a/b.."), "..a/b..")
    assert.strictEqual(relativeOf("..."), "...")
    for (const target of ["", ".", "./", "a/..", "a\\b\\..\\.."]) assert.strictEqual(problemOf(target), "Empty", target)
    for (const target of ["..", "../a", "a/../..", "a/../../b", ".\\.."])
      assert.strictEqual(problemOf(target), "Traversal", target)
  })

  it("rejection_message: names the target and the problem; a target over 200 units is shown by its first 199 (its last, maybe cut, code point dropped) and an ellipsis", () => {
    assert.strictEqual(messageOf("/etc/passwd"), `artifact target "/etc/passwd" rejected (Absolute): ${messageTail}`)
    const exactly200 = `/${"a".repeat(199)}`
    assert.strictEqual(
      messageOf(exactly200),
      `artifact target ${JSON.stringify(exactly200)} rejected (Absolute): ${messageTail}`
    )
    const long = `/${"b".repeat(300)}`
    assert.strictEqual(
      messageOf(long),
      `artifact target ${JSON.stringify(`/${"b".repeat(198)}`)}… rejected (Absolute): ${messageTail}`
    )
    // Unit 200 is the first half of a surrogate pair: the shown start ends before the cut character.
    const cut = `/${"c".repeat(198)}👩${"d".repeat(10)}`
    assert.strictEqual(
      messageOf(cut),
      `artifact target ${JSON.stringify(`/${"c".repeat(198)}`)}… rejected (Absolute): ${messageTail}`
    )
    const tooLong = "e".repeat(maxTargetBytes + 1)
    assert.strictEqual(
      messageOf(tooLong),
      `artifact target ${JSON.stringify("e".repeat(199))}… rejected (TooLong): ${messageTail}`
    )
  })

  it("negative control: showing the first 200 units whole (no code point dropped) leaves half a surrogate pair in the message", () => {
    const cut = `/${"c".repeat(198)}👩`
    const naive = JSON.stringify(cut.slice(0, 200))
    assert.include(naive, "\\ud83d")
    assert.notInclude(messageOf(`${cut}tail`), "\\ud83d")
  })
})

const policyFrom = (locations: ArtifactPathPolicy.InternalLocations): ArtifactPathPolicy.ArtifactPathPolicyShape => {
  const made = ArtifactPathPolicy.fromLocations(locations)
  if (Result.isFailure(made)) return assert.fail(made.failure.message)
  return made.success
}

const refusal = (locations: unknown): { readonly field: string; readonly value: string; readonly detail: string } => {
  const made = ArtifactPathPolicy.fromLocations(locations as ArtifactPathPolicy.InternalLocations)
  if (Result.isSuccess(made)) return assert.fail(`accepted ${JSON.stringify(locations)}`)
  assert.strictEqual(made.failure._tag, "InvalidInput")
  assert.strictEqual(made.failure.entry, "ArtifactPathPolicy.fromLocations")
  return made.failure
}

const relativeDetail =
  "expected an absolute path (`/...`, `C:\\...` or `\\\\server\\share`); a relative one matches no target"
const normalisedDetail =
  "expected a normalised path: no `.`, `..` or empty segments, since targets are compared lexically"

describe("ArtifactPathPolicy edges", () => {
  it("at_or_below: the folder itself and what lies below it, not a sibling sharing its name's start, nor its parent", () => {
    const { isAtOrBelow } = ArtifactPathPolicy
    assert.isTrue(isAtOrBelow("/srv/state", "/srv/state"))
    assert.isTrue(isAtOrBelow("/srv/state", "/srv/state/db.json"))
    assert.isTrue(isAtOrBelow("/srv/state", "/srv/state/a/b"))
    assert.isFalse(isAtOrBelow("/srv/state", "/srv/stateful"))
    assert.isFalse(isAtOrBelow("/srv/state", "/srv/state.json"))
    assert.isFalse(isAtOrBelow("/srv/state", "/srv"))
    assert.isFalse(isAtOrBelow("/srv/state", "/"))
    assert.isFalse(isAtOrBelow("/srv/state", "/other/srv/state"))
  })

  it("at_or_below_root: root / covers every absolute path and itself, and a trailing separator on either side changes nothing", () => {
    const { isAtOrBelow } = ArtifactPathPolicy
    assert.isTrue(isAtOrBelow("/", "/"))
    assert.isTrue(isAtOrBelow("/", "/x"))
    assert.isTrue(isAtOrBelow("/", "/srv/state/db.json"))
    assert.isTrue(isAtOrBelow("\\", "\\x"))
    // Root covers absolute paths only: an empty or relative path lies below no folder.
    assert.isFalse(isAtOrBelow("/", ""))
    assert.isFalse(isAtOrBelow("\\", ""))
    assert.isFalse(isAtOrBelow("/", "srv"))
    assert.isTrue(isAtOrBelow("/srv/state/", "/srv/state"))
    assert.isTrue(isAtOrBelow("/srv/state", "/srv/state/"))
    assert.isTrue(isAtOrBelow("/srv/state/", "/srv/state/x"))
    assert.isTrue(isAtOrBelow("/srv/state\\", "/srv/state"))
    assert.isFalse(isAtOrBelow("/srv/state/", "/srv/stateful"))
    assert.isFalse(isAtOrBelow("/srv/state/", "/srv"))
  })

  it("at_or_below_separators: backslashes compare as forward slashes on either side", () => {
    const { isAtOrBelow } = ArtifactPathPolicy
    assert.isTrue(isAtOrBelow("C:\\state", "C:/state/x"))
    assert.isTrue(isAtOrBelow("C:/state", "C:\\state\\x"))
    assert.isTrue(isAtOrBelow("C:\\state\\", "C:\\state"))
    assert.isTrue(isAtOrBelow("\\\\server\\share", "//server/share/a"))
    assert.isFalse(isAtOrBelow("C:\\state", "C:\\stately"))
    assert.isFalse(isAtOrBelow("C:\\state\\x", "C:\\state"))
  })

  it("negative control: a plain startsWith comparison takes a sibling for a child and misses a trailing separator", () => {
    const naive = (folder: string, path: string) => path.startsWith(folder)
    assert.isTrue(naive("/srv/state", "/srv/stateful"))
    assert.isFalse(naive("/srv/state/", "/srv/state"))
    assert.isFalse(ArtifactPathPolicy.isAtOrBelow("/srv/state", "/srv/stateful"))
    assert.isTrue(ArtifactPathPolicy.isAtOrBelow("/srv/state/", "/srv/state"))
  })

  it("state_locations: each location is refused itself and below, a path under only one of two is refused, the root covers the rest", () => {
    const policy = policyFrom({
      internalRoot: "/srv/host",
      stateLocations: ["/srv/host/db", "/data/keys.json"]
    })
    assert.isTrue(policy.isInternalState("/srv/host/db"))
    assert.isTrue(policy.isInternalState("/srv/host/db/x"))
    assert.isTrue(policy.isInternalState("/data/keys.json"))
    assert.isFalse(policy.isInternalState("/data/keys.json.bak"))
    assert.isFalse(policy.isInternalState("/srv/host/dbx"))
    assert.isFalse(policy.isInternalState("/srv/host"))
    assert.isTrue(policy.isUnderInternalRoot("/srv/host"))
    assert.isTrue(policy.isUnderInternalRoot("/srv/host/dbx"))
    assert.isFalse(policy.isUnderInternalRoot("/data/keys.json"))
    assert.isFalse(policy.isUnderInternalRoot("/srv/hostile"))
    const none = policyFrom({ internalRoot: "/", stateLocations: [] })
    assert.isFalse(none.isInternalState("/srv/host/db"))
    assert.isTrue(none.isUnderInternalRoot("/anything"))
  })

  it("negative control: requiring a path under every state location (every instead of some) lets a path under only one through", () => {
    const locations = ["/srv/host/db", "/data/keys.json"]
    const every = (path: string) => locations.every((location) => ArtifactPathPolicy.isAtOrBelow(location, path))
    assert.isFalse(every("/srv/host/db/x"))
    assert.isTrue(
      policyFrom({ internalRoot: "/srv/host", stateLocations: locations }).isInternalState("/srv/host/db/x")
    )
  })

  it("locations_copied: changing the caller's array after the policy is made changes nothing", () => {
    const stateLocations = ["/srv/host/db"]
    const policy = policyFrom({ internalRoot: "/srv/host", stateLocations })
    stateLocations[0] = "/elsewhere"
    stateLocations.push("/data")
    assert.isTrue(policy.isInternalState("/srv/host/db"))
    assert.isFalse(policy.isInternalState("/elsewhere"))
    assert.isFalse(policy.isInternalState("/data/x"))
  })

  it("check: the specific question first (its error wins), then the root, else success; each error names the path", () => {
    const asked: Array<string> = []
    const policy = (state: boolean, root: boolean): ArtifactPathPolicy.ArtifactPathPolicyShape => ({
      isInternalState: (path) => {
        asked.push(`state ${path}`)
        return state
      },
      isUnderInternalRoot: (path) => {
        asked.push(`root ${path}`)
        return root
      }
    })
    const both = ArtifactPathPolicy.check(policy(true, true), "/p")
    assert.isTrue(Result.isFailure(both))
    if (Result.isFailure(both)) {
      assert.strictEqual(both.failure._tag, "ArtifactInternalState")
      assert.strictEqual(both.failure.path, "/p")
      assert.strictEqual(both.failure.message, "artifact path /p is a host internal state location")
    }
    assert.deepStrictEqual(asked.splice(0), ["state /p"])
    const root = ArtifactPathPolicy.check(policy(false, true), "/q")
    assert.isTrue(Result.isFailure(root))
    if (Result.isFailure(root)) {
      assert.strictEqual(root.failure._tag, "ArtifactInternalRoot")
      assert.strictEqual(root.failure.path, "/q")
      assert.strictEqual(root.failure.message, "artifact path /q lies under the host's internal root")
    }
    assert.deepStrictEqual(asked.splice(0), ["state /q", "root /q"])
    assert.deepStrictEqual(ArtifactPathPolicy.check(policy(false, false), "/r"), Result.void)
    assert.deepStrictEqual(asked.splice(0), ["state /r", "root /r"])
    const stateOnly = ArtifactPathPolicy.check(policy(true, false), "/s")
    assert.isTrue(Result.isFailure(stateOnly) && stateOnly.failure._tag === "ArtifactInternalState")
  })

  it("accepted_locations: POSIX, drive, UNC and root forms, with or without a trailing separator", () => {
    for (const location of [
      "/",
      "/srv",
      "/srv/state/",
      "/srv/state\\",
      "C:\\",
      "C:/",
      "c:\\state\\x",
      "C:/state",
      "\\\\server\\share",
      "//server/share/state",
      "/a.b/c-d/.e/f.."
    ]) {
      assert.isTrue(
        Result.isSuccess(ArtifactPathPolicy.fromLocations({ internalRoot: location, stateLocations: [location] })),
        location
      )
    }
  })

  it("refused_locations: a non-string, NUL, relative, rooted-without-drive, or not normalised location is InvalidInput naming its field, value and reason", () => {
    assert.deepInclude(refusal({ internalRoot: 7, stateLocations: [] }), {
      field: "internalRoot",
      value: "7",
      detail: "expected a string (an absolute path)"
    })
    assert.deepInclude(refusal({ internalRoot: "/srv\0x", stateLocations: [] }), {
      field: "internalRoot",
      value: JSON.stringify("/srv\0x"),
      detail: "a path cannot contain a NUL character"
    })
    for (const relative of ["srv", "./srv", "C:", "C:srv", "\\srv", "///srv", "\\\\\\srv", "", "1:/x"]) {
      assert.deepInclude(refusal({ internalRoot: relative, stateLocations: [] }), {
        field: "internalRoot",
        value: JSON.stringify(relative),
        detail: relativeDetail
      })
    }
    for (const unnormalised of [
      "/srv//state",
      "/srv/./state",
      "/srv/../state",
      "/srv/state/.",
      "/srv/state/..",
      "/srv/state//",
      "C:\\srv\\..\\x",
      "\\\\server\\share\\\\x",
      "/./"
    ]) {
      assert.deepInclude(refusal({ internalRoot: "/srv", stateLocations: [unnormalised] }), {
        field: "stateLocations[0]",
        detail: normalisedDetail
      })
    }
  })

  it("refused_shape: locations that are no object, and state locations that are no array, are InvalidInput on that field; a bad entry is named by its index", () => {
    for (const given of [null, undefined, "/srv", 7]) {
      assert.deepInclude(refusal(given), { field: "locations", detail: "expected { internalRoot, stateLocations }" })
    }
    assert.deepInclude(refusal({ internalRoot: "/srv", stateLocations: "/srv/db" }), {
      field: "stateLocations",
      value: JSON.stringify("/srv/db"),
      detail: "expected an array of absolute paths"
    })
    assert.deepInclude(refusal({ internalRoot: "/srv" }), { field: "stateLocations" })
    assert.deepInclude(refusal({ internalRoot: "/srv", stateLocations: ["/srv/a", "/srv/b", "rel", "/srv/c"] }), {
      field: "stateLocations[2]",
      value: JSON.stringify("rel"),
      detail: relativeDetail
    })
    assert.deepInclude(refusal({ internalRoot: "/srv", stateLocations: ["/srv/a", 3] }), {
      field: "stateLocations[1]",
      detail: "expected a string (an absolute path)"
    })
    const message = ArtifactPathPolicy.fromLocations({ internalRoot: "rel", stateLocations: [] })
    assert.strictEqual(
      Result.isFailure(message) ? message.failure.message : "",
      `ArtifactPathPolicy.fromLocations: invalid internalRoot "rel": ${relativeDetail}`
    )
  })

  it.effect(
    "layers: layer provides the given policy; layerFromLocations provides the made one or fails with its InvalidInput",
    () =>
      Effect.gen(function* () {
        const given: ArtifactPathPolicy.ArtifactPathPolicyShape = {
          isInternalState: (path) => path === "/x",
          isUnderInternalRoot: () => false
        }
        const provided = yield* ArtifactPathPolicy.ArtifactPathPolicy.pipe(
          Effect.provide(ArtifactPathPolicy.layer(given))
        )
        assert.strictEqual(provided, given)
        const made = yield* ArtifactPathPolicy.ArtifactPathPolicy.pipe(
          Effect.provide(ArtifactPathPolicy.layerFromLocations({ internalRoot: "/srv", stateLocations: ["/srv/db"] }))
        )
        assert.isTrue(made.isInternalState("/srv/db/x"))
        assert.isFalse(made.isInternalState("/srv/dbx"))
        assert.isTrue(made.isUnderInternalRoot("/srv/dbx"))
        const failed = yield* Effect.exit(
          ArtifactPathPolicy.ArtifactPathPolicy.pipe(
            Effect.provide(ArtifactPathPolicy.layerFromLocations({ internalRoot: "srv", stateLocations: [] }))
          )
        )
        assert.isTrue(Exit.isFailure(failed))
        if (Exit.isFailure(failed)) {
          const error = Exit.findErrorOption(failed)
          assert.isTrue(
            error._tag === "Some" && error.value._tag === "InvalidInput" && error.value.field === "internalRoot"
          )
        }
      })
  )
})
