// Splits a claim document into fixed-size chunks of words.

export const WORDS_PER_CHUNK = 20

export function chunk(document) {
  const words = document.split(/\s+/).filter(Boolean)
  const chunks = []
  for (let i = 0; i < words.length; i += WORDS_PER_CHUNK) chunks.push(words.slice(i, i + WORDS_PER_CHUNK).join(' '))
  return chunks
}

/** A claim document of `chunks` chunks, different for each claim. */
export function makeDocument(claimId, chunks) {
  const words = []
  for (let i = 0; i < chunks * WORDS_PER_CHUNK; i++) words.push(`${claimId}-w${i}`)
  return words.join(' ')
}
