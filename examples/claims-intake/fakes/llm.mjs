// A deliberately non-deterministic fake LLM: the same prompt gets different wording on
// every call, as a real model at temperature > 0 does.

const openings = ['Summary:', 'In short,', 'Overview:', 'Key points:', 'Briefly,']
const verbs = ['reports', 'describes', 'documents', 'claims', 'states']

export function createLlm(random = Math.random) {
  let calls = 0
  return {
    async summarise(claimId, text) {
      calls++
      const pick = (list) => list[Math.floor(random() * list.length)]
      const words = text.split(/\s+/).length
      return `${pick(openings)} claim ${claimId} ${pick(verbs)} ${words} words of damage (${Math.floor(random() * 1e6).toString(36)}).`
    },
    calls: () => calls,
  }
}
