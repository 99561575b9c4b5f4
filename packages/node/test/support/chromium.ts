/**
 * Real headless Chromium for node tests that check a page as a person sees
 * it, driven by `playwright` (a root devDependency) with the system's
 * Chromium, as the browser project is (vitest.workspace.ts: Debian's
 * `chromium` package, `TESSERA_CHROMIUM` overrides; Playwright's own browser
 * download is not used). When it is missing the tests that need it are
 * skipped, and the run says so loudly on stderr, once per worker.
 */
import { existsSync } from "node:fs"
import { Effect } from "effect"
import { type Browser, type BrowserContextOptions, chromium, type Page } from "playwright"

export const chromiumPath: string = process.env.TESSERA_CHROMIUM ?? "/usr/bin/chromium"

/** Why Chromium cannot be driven in this run, or `undefined` when it can. */
export const chromiumMissing: string | undefined = existsSync(chromiumPath)
  ? undefined
  : `no Chromium at ${chromiumPath}: install it (Debian/Ubuntu: sudo apt-get install -y chromium) or set TESSERA_CHROMIUM`

if (chromiumMissing !== undefined) {
  process.stderr.write(
    `\n${"!".repeat(78)}\n[tessera] SKIPPING THE CHROMIUM CHECKS OF packages/node (the inspector's HTML page): ${chromiumMissing}\n${"!".repeat(78)}\n\n`
  )
}

/**
 * A launched headless Chromium, closed with the scope. `--no-sandbox`: the
 * tests run as root in a container, where Chromium's own sandbox cannot
 * start; `--force-color-profile=srgb` so screenshots hold the colours the
 * page asked for.
 */
export const browser = Effect.acquireRelease(
  Effect.promise(() =>
    chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ["--no-sandbox", "--force-color-profile=srgb"]
    })
  ),
  (launched) => Effect.promise(() => launched.close())
)

/** A fresh page in its own context (closed with the scope), with the given context options. */
export const newPage = (launched: Browser, options: BrowserContextOptions = {}) =>
  Effect.acquireRelease(
    Effect.promise(() => launched.newContext(options)),
    (context) => Effect.promise(() => context.close())
  ).pipe(Effect.flatMap((context) => Effect.promise((): Promise<Page> => context.newPage())))

/** A PNG's width and height, from its IHDR chunk; fails on anything that is not a PNG. */
export const pngSize = (png: Uint8Array): { readonly width: number; readonly height: number } => {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
  if (png.length < 33 || signature.some((byte, index) => png[index] !== byte)) throw new Error("not a PNG")
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength)
  if (String.fromCharCode(...png.subarray(12, 16)) !== "IHDR") throw new Error("PNG without IHDR first")
  return { width: view.getUint32(16), height: view.getUint32(20) }
}

/**
 * How many pixels of a PNG are each of the given colours (`#rrggbb`, each
 * channel within `tolerance`), decoded by Chromium itself (an image drawn on
 * a canvas in a blank page), so no PNG decoder of ours is trusted.
 */
export const colorCounts = (
  launched: Browser,
  png: Uint8Array,
  colors: Record<string, string>,
  tolerance = 3
): Effect.Effect<Record<string, number>> =>
  Effect.scoped(
    Effect.flatMap(newPage(launched), (page) =>
      Effect.promise(() =>
        page.evaluate(
          async ({ data, wanted, tolerance }) => {
            const image = new Image()
            image.src = `data:image/png;base64,${data}`
            await image.decode()
            const canvas = document.createElement("canvas")
            canvas.width = image.naturalWidth
            canvas.height = image.naturalHeight
            const context = canvas.getContext("2d")
            if (context === null) throw new Error("no 2d context")
            context.drawImage(image, 0, 0)
            const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data
            const targets = Object.entries(wanted).map(([name, hex]) => ({
              name,
              rgb: [1, 3, 5].map((at) => Number.parseInt(hex.slice(at, at + 2), 16))
            }))
            const counts: Record<string, number> = Object.fromEntries(targets.map((target) => [target.name, 0]))
            for (let at = 0; at < pixels.length; at += 4) {
              for (const target of targets) {
                if (
                  target.rgb.every((channel, index) => Math.abs((pixels[at + index] ?? -999) - channel) <= tolerance)
                ) {
                  counts[target.name] = (counts[target.name] ?? 0) + 1
                }
              }
            }
            return counts
          },
          { data: Buffer.from(png).toString("base64"), wanted: colors, tolerance }
        )
      )
    )
  )
