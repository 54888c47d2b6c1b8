// idem's first example: a charge that runs once per key, however often it is retried.
import { createIdem } from 'idem'
import { memoryStore } from 'idem/memory' // for trying it out; Postgres, SQLite, Redis… in production

const idem = createIdem({ store: memoryStore() })
let charges = 0
for (const attempt of [1, 2, 3]) {
  const result = await idem.run({ scope: 'account_42', key: 'charge-7', input: { amount: 1500 } }, () => ({ chargeId: ++charges }))
  console.log(`attempt ${attempt}:`, result)
}
