/**
 * Type tests: each `@ts-expect-error` line must fail to compile. If a change
 * makes one compile, tsc reports the directive as unused and `npm test` fails.
 */
import type { Grant, HostAuthority, InvalidInput, Unauthorized, Volume } from "@tessera/core"
import type { TaskHost } from "@tessera/runtime"
import { FilesystemTaskRuntime, VolumeStore } from "@tessera/runtime"
import type { Effect, FileSystem, Path } from "effect"
import { Option } from "effect"

declare const scope: Grant.Scope
declare const ref: Volume.VolumeRef
declare const host: TaskHost.TaskHost
declare const runtime: FilesystemTaskRuntime.FilesystemTaskRuntime

// The caller must decide about the private volume: leaving it out does not compile...
// @ts-expect-error
export const openWithoutPrivate = FilesystemTaskRuntime.open({ root: "/state", scope })
// @ts-expect-error
export const fromHostWithoutPrivate = FilesystemTaskRuntime.fromHost(host, { scope })

// ...a bare reference is not an Option...
// @ts-expect-error
export const openWithBareRef = FilesystemTaskRuntime.open({ root: "/state", scope, private: ref })
// @ts-expect-error
export const fromHostWithBareRef = FilesystemTaskRuntime.fromHost(host, { scope, private: ref })

// ...and `undefined` is not a decision either.
// @ts-expect-error
export const openWithUndefined = FilesystemTaskRuntime.open({ root: "/state", scope, private: undefined })

// Both explicit decisions compile, with the same option type for both constructors.
export const openWithNone = FilesystemTaskRuntime.open({ root: "/state", scope, private: Option.none() })
export const openWithSome = FilesystemTaskRuntime.open({ root: "/state", scope, private: Option.some(ref) })
export const fromHostWithSome = FilesystemTaskRuntime.fromHost(host, { scope, private: Option.some(ref) })

// There is no way to bind a private volume after open.
// @ts-expect-error
runtime.privateVolume = Option.none()
// @ts-expect-error
export const builder = runtime.withPrivateVolume

// A runtime cannot be assembled by hand: its brand is not importable.
// @ts-expect-error
export const forged: FilesystemTaskRuntime.FilesystemTaskRuntime = {
  host,
  scope,
  privateVolume: Option.none(),
  output: Option.none(),
  bindTask: runtime.bindTask
}

// Failures are typed: opening a runtime can only fail with the store's and the checks' errors.
export const typedOpen: Effect.Effect<
  FilesystemTaskRuntime.FilesystemTaskRuntime,
  | Unauthorized.Unauthorized
  | InvalidInput.InvalidInput
  | VolumeStore.VolumeMetadataInvalid
  | VolumeStore.StoreIoError
  | VolumeStore.StoreManifestInvalid
  | VolumeStore.StoreIdMismatch,
  HostAuthority.HostAuthority | FileSystem.FileSystem | Path.Path
> = openWithNone
export const typedStore: Effect.Effect<
  VolumeStore.VolumeStore,
  VolumeStore.OpenError,
  FileSystem.FileSystem | Path.Path
> = VolumeStore.open({ root: "/state" })
