/** Fresh OPFS folders for browser tests, removed afterwards. */
export const freshRoot = (name: string): string => `/tessera-test-${name}-${crypto.randomUUID()}`

export const removeRoot = async (root: string): Promise<void> => {
  const top = await navigator.storage.getDirectory()
  await top.removeEntry(root.slice(1), { recursive: true }).catch(() => undefined)
}

export const withRoot = async <A>(name: string, body: (root: string) => Promise<A>): Promise<A> => {
  const root = freshRoot(name)
  try {
    return await body(root)
  } finally {
    await removeRoot(root)
  }
}
