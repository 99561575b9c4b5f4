/**
 * Where what the durable files opened really is. On Linux a descriptor's
 * path (`/proc/self/fd/<fd>`) answers exactly and names are created
 * relative to it, so a folder swapped for a link after its check cannot
 * redirect a creation; elsewhere real paths answer, checked against the
 * descriptor's device and inode.
 *
 * @internal
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { relativeWithin } from "@tessera/core/DurableFiles"

/** A folder the durable files opened, and where it really is. The caller closes it. */
export interface OpenedFolder {
  readonly folder: number
  readonly location: string
}

/** Locating with descriptor paths (`descriptorPaths`) or with real paths. */
export interface Locator {
  /** The path naming an opened descriptor, where descriptor paths are used. */
  readonly descriptorPath: (fd: number) => string
  /** The path to use for creating or opening `name` inside an opened folder. */
  readonly childOf: (folder: number, folderPath: string, name: string) => string
  /** Where an opened folder really is. */
  readonly folderLocation: (folder: number, folderPath: string) => string
  /**
   * Where an opened file really is: its descriptor's link on Linux; elsewhere
   * the real path of its name, accepted only if that name still denotes the
   * very file held open (same device and inode).
   */
  readonly fileLocation: (file: number, path: string) => string | undefined
}

/** The locator of one implementation: descriptor paths, or the portable real-path variant. */
export const makeLocator = (descriptorPaths: boolean): Locator => {
  const descriptorPath = (fd: number): string => `/proc/self/fd/${fd}`
  return {
    descriptorPath,
    childOf: (folder, folderPath, name) =>
      descriptorPaths ? `${descriptorPath(folder)}/${name}` : nodePath.join(folderPath, name),
    folderLocation: (folder, folderPath) =>
      descriptorPaths ? fs.readlinkSync(descriptorPath(folder)) : fs.realpathSync.native(folderPath),
    fileLocation: (file, path) => {
      if (descriptorPaths) return fs.readlinkSync(descriptorPath(file))
      const candidate = nodePath.join(fs.realpathSync.native(nodePath.dirname(path)), nodePath.basename(path))
      const held = fs.fstatSync(file)
      const named = fs.lstatSync(candidate)
      return held.dev === named.dev && held.ino === named.ino ? candidate : undefined
    }
  }
}

/** Whether `candidate` lies within `root` (or is it). */
export const isWithin = (root: string, candidate: string): boolean =>
  relativeWithin(root, candidate, nodePath) !== undefined
