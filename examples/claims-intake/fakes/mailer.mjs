// A fake mail provider: records every email handed to it. With an idempotency key it
// accepts a repeat but does not send it twice (as Postmark and SES do with message ids).

export function createMailer() {
  const handed = []
  const sent = new Map()
  return {
    async send({ to, subject, idempotencyKey }) {
      handed.push({ to, subject, idempotencyKey: idempotencyKey ?? null })
      const id = idempotencyKey ?? `anon-${handed.length}`
      if (!sent.has(id)) sent.set(id, { to, subject })
    },
    /** Every hand-over, duplicates included. */
    handed: () => [...handed],
    /** What reached inboxes. */
    sent: () => [...sent.values()],
  }
}
