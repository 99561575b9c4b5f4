/**
 * A loopback OTLP/HTTP receiver for tests: takes JSON-encoded trace and
 * metric exports on 127.0.0.1 (port chosen by the system) and keeps them,
 * plus readers for the parts of OTLP/JSON the tests look at.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

export interface Received {
  readonly path: string
  readonly contentType: string
  readonly body: string
}

export interface Receiver {
  readonly url: string
  readonly received: ReadonlyArray<Received>
}

/** Starts a receiver for the scope's life; every request is answered 200 and kept. */
export const receiver = Effect.acquireRelease(
  Effect.callback<{ readonly server: http.Server; readonly receiver: Receiver }>((resume) => {
    const received: Array<Received> = []
    const server = http.createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        received.push({
          path: request.url ?? "",
          contentType: request.headers["content-type"] ?? "",
          body: Buffer.concat(chunks).toString("utf8")
        })
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ server, receiver: { url: `http://127.0.0.1:${port}`, received } }))
    })
  }),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ receiver }) => receiver))

export interface OtlpValue {
  readonly stringValue?: string
  readonly intValue?: number | string
  readonly doubleValue?: number
  readonly boolValue?: boolean
  readonly arrayValue?: { readonly values: ReadonlyArray<OtlpValue> }
}

export interface OtlpKeyValue {
  readonly key: string
  readonly value: OtlpValue
}

export interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<OtlpKeyValue>
}

/** Every span of every trace export received. */
export const spansOf = (received: ReadonlyArray<Received>): ReadonlyArray<OtlpSpan> =>
  received
    .filter((entry) => entry.path === "/v1/traces")
    .flatMap((entry) => {
      const data = JSON.parse(entry.body) as {
        resourceSpans: ReadonlyArray<{ scopeSpans: ReadonlyArray<{ spans: ReadonlyArray<OtlpSpan> }> }>
      }
      return data.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans))
    })

export interface OtlpMetric {
  readonly name: string
  readonly sum?: { readonly dataPoints: ReadonlyArray<OtlpDataPoint> }
  readonly histogram?: { readonly dataPoints: ReadonlyArray<OtlpDataPoint> }
}

export interface OtlpDataPoint {
  readonly attributes?: ReadonlyArray<OtlpKeyValue>
  readonly count?: number | string
  readonly asInt?: number | string
  readonly asDouble?: number
  readonly timeUnixNano?: string
}

/** The metrics of the last metric export received (exports are cumulative). */
export const lastMetricsOf = (received: ReadonlyArray<Received>): ReadonlyArray<OtlpMetric> => {
  const last = received.filter((entry) => entry.path === "/v1/metrics").at(-1)
  if (last === undefined) return []
  const data = JSON.parse(last.body) as {
    resourceMetrics: ReadonlyArray<{ scopeMetrics: ReadonlyArray<{ metrics: ReadonlyArray<OtlpMetric> }> }>
  }
  return data.resourceMetrics.flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics))
}

/** An OTLP value as a plain value (arrays as arrays, 64-bit integers as numbers). */
export const plain = (value: OtlpValue): unknown =>
  value.stringValue ??
  (value.intValue === undefined ? undefined : Number(value.intValue)) ??
  value.doubleValue ??
  value.boolValue ??
  value.arrayValue?.values.map(plain)

/** A span's or data point's attributes as a record. */
export const attributesOf = (owner: {
  readonly attributes?: ReadonlyArray<OtlpKeyValue> | undefined
}): Record<string, unknown> =>
  Object.fromEntries((owner.attributes ?? []).map((attribute) => [attribute.key, plain(attribute.value)]))
