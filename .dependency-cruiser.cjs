/**
 * The architecture, as rules on imports. `npm test` checks them (test/architecture.test.ts,
 * or `npm run lint:deps` alone); a forbidden import fails the build.
 *
 *   ports     the contracts between the front ends, the engines and the stores: the
 *             KeyStore and LeasedStore ports (and the identity string and outcome limit
 *             every store shares), KeyPeek, the inbox, outbox, dead-letter and once
 *             tables, the SQL dialect of the data helpers, the SQL client shapes (one
 *             SqliteDatabase for store and helpers). Types and the contract's few
 *             constants; they import nothing but core/errors.
 *   core      key syntax, value fingerprint, outcomes, the two engines, the event stream;
 *             core/errors holds the error classes, the option checks that raise them and
 *             the warning a store reports. Imports only itself and the ports.
 *   stores    one folder per backend (postgres, sqlite, mysql, memory, redis, dynamodb): the only
 *             code that knows a driver, its SQL and its error codes. Implements the
 *             ports; imports only the ports, core/errors and the shared helpers in stores/.
 *             sql/ is the SQL stores' protocol written once (sessions, inbox, outbox,
 *             once, prune, migrations, the operator) over a dialect and a driver
 *             interface; it imports no store folder. postgres, sqlite and mysql each split their
 *             dialect (dialect/: statements, migrations, pure) from their driver
 *             (driver/: the client library's shapes, connections, errors); the store,
 *             one folder up, puts them together over sql/.
 *   headers   what both ends of an HTTP exchange must agree on: the Idempotency-Key header
 *             (its name, RFC 9651 parse and serialisation) and the statuses that carry no
 *             body. Shared by http and the client, which may not import each other.
 *             Imports core at most.
 *   http      the Fetch-standard middleware, its adapters, the request fingerprint,
 *             problem+json, the webhook receiver.
 *   queue     inbox, outbox, dispatcher over their ports; broker adapters.
 *   lambda    AWS Lambda front ends (any event, SQS batches, Middy) over the engines and the inbox.
 *   data      content ids, upserts, memo, once, reconcile.
 *   client    the retrying fetch wrapper: runs in apps that call idem'd servers.
 *   ops       metrics exporters, subscribers of the event stream; the label values come from
 *             the core's and the front ends' event declarations (http|queue|data/events.ts,
 *             which import core only).
 *   testing   contract suites and fault proxies (idem/testing).
 *   cli       the `idem` command: may use everything, stores through the registry only
 *             (stores/registry.ts: one line per store, naming its entry, <store>/entry.ts,
 *             which implements ports/store-entry.ts and loads its driver and operator lazily).
 *             A store is its folder plus that one line.
 */
module.exports = {
  forbidden: [
    {
      name: 'core-is-pure',
      comment: 'core knows no store, framework, broker or front end, only the ports it drives stores through: everything else depends on it, never the other way',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^src/(?!core/|ports/)' },
    },
    {
      name: 'headers-are-shared',
      comment: 'the header both ends speak: core at most, so the server (http) and the client can share it without knowing each other',
      severity: 'error',
      from: { path: '^src/headers/' },
      to: { path: '^src/(?!headers/|core/)' },
    },
    {
      name: 'front-ends-know-no-driver',
      comment: 'http, queue, data, ops and lambda reach stores through the ports only (ports/key-store.ts, ports/leased-store.ts, the tables)',
      severity: 'error',
      from: { path: '^src/(http|queue|data|ops|lambda)/' },
      to: { path: '^src/stores/' },
    },
    {
      name: 'queue-knows-no-http',
      comment: 'the queue runs in workers; HTTP (the webhook receiver included) builds on the queue, not the reverse',
      severity: 'error',
      from: { path: '^src/queue/' },
      to: { path: '^src/(http|cli|client|ops|testing)/' },
    },
    {
      name: 'data-stands-alone',
      comment: 'data helpers use core and their own ports only',
      severity: 'error',
      from: { path: '^src/data/' },
      to: { path: '^src/(http|queue|cli|client|ops|testing)/' },
    },
    {
      name: 'http-is-a-front-end',
      comment: 'http uses core and the queue (the webhook receiver), never the CLI, client or test tools',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/(cli|client|ops|testing|data)/' },
    },
    {
      name: 'lambda-is-a-front-end',
      comment: 'lambda maps Lambda events onto the engines, the inbox and the HTTP handler: never the CLI, client, ops, test tools or data helpers',
      severity: 'error',
      from: { path: '^src/lambda/' },
      to: { path: '^src/(cli|client|ops|testing|data)/' },
    },
    {
      name: 'client-has-no-server-code',
      comment: 'the client runs in apps that call servers: only core (key syntax, errors), the header both ends speak (headers) and itself',
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/(?!client/|core/|headers/)' },
    },
    {
      name: 'ports-are-contracts',
      comment: 'a port is a contract between the engines, the front ends and the stores: it knows core/errors at most, no engine, no front end and no store',
      severity: 'error',
      from: { path: '^src/ports/' },
      to: { path: '^src/(?!ports/|core/errors/)' },
    },
    {
      name: 'stores-implement-ports-only',
      comment: 'a store imports the ports, core/errors (errors, option checks, warnings), the shared store helpers and its own folder: no engine, no front end',
      severity: 'error',
      from: { path: '^src/stores/' },
      to: { path: '^src/(?!core/errors/|ports/|stores/)' },
    },
    {
      name: 'one-driver-per-store',
      comment: 'a store folder never imports another store folder, only the SQL stores\' protocol (stores/sql/), which imports none',
      severity: 'error',
      from: { path: '^src/stores/([^/]+)/' },
      to: { path: '^src/stores/([^/]+)/', pathNot: '^src/stores/($1|sql)/' },
    },
    {
      name: 'dialect-knows-no-driver',
      comment: "a store's dialect/ (SQL as pure functions, migrations as data) imports nothing else of its store: not the driver, not the operations that run it",
      severity: 'error',
      from: { path: '^src/stores/([^/]+)/dialect/' },
      to: { path: '^src/stores/$1/(?!dialect/)' },
    },
    {
      name: 'cli-uses-stores-by-their-entry',
      comment: "the CLI reaches stores through the registry (stores/registry.ts), which lists each store's CLI entry (<store>/entry.ts: its flag, target, connection and operator): never a store's module, not even its public index.ts",
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^src/stores/', pathNot: '^src/stores/registry[.]ts$' },
    },
    {
      name: 'ops-subscribes',
      comment: "metrics exporters read the event stream: core, and the front ends' event declarations (their events.ts) for the label values",
      severity: 'error',
      from: { path: '^src/ops/' },
      to: { path: '^src/(?!ops/|core/)', pathNot: '^src/(http|queue|data)/events[.]ts$' },
    },
    {
      name: 'events-are-declarations',
      comment: "a front end's events.ts declares its events and their values over core only, so ops reads them without loading the front end",
      severity: 'error',
      from: { path: '^src/(http|queue|data)/events[.]ts$' },
      to: { path: '^src/(?!core/)' },
    },
    {
      name: 'nothing-imports-the-outside',
      comment: 'the library never imports its examples, benches or tests',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(examples|bench|test)/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    // TypeScript 7 ships no compiler API: swc parses the sources, type-only imports included.
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '[.]test[.]ts$' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
}
