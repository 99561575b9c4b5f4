/**
 * The page's entry: runs the example in this page's origin storage and
 * renders the report. Serve the folder with Vite (a secure, loopback
 * origin, so OPFS and Web Locks exist): `pnpm --filter @tessera/browser example`.
 */
import { renderReport, runExample } from "./runExample.ts"

const app = document.getElementById("app")
if (app !== null) {
  runExample({ root: "/tessera-example" })
    .then((report) => renderReport(app, report))
    .catch((error: unknown) => {
      app.textContent = `the example failed: ${error instanceof Error ? error.message : String(error)}`
    })
}
