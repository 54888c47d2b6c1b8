import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'
import { patience } from './test/support/patience.js'

export default defineConfig({
  // NestJS apps (the nestjs front ends, docs/nestjs.md's guide) use TypeScript's legacy
  // decorators with emitted parameter types, as Nest's own tsconfig does.
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // Needs the npm registry, so not part of `npm test` (tests talk to loopback only):
    // `npm run test:install` runs it, and .ci/run does after the tests.
    exclude: ['test/install/**', '**/node_modules/**'],
    // Most files spend their time waiting on servers, brokers and child processes, so one
    // file more than there are cores keeps the machine busy (vitest's default, one fewer
    // than the cores, runs them one at a time on two). Each file has its own schema,
    // prefix, queues and servers, so files in parallel never share state.
    maxWorkers: availableParallelism() + 1,
    // Hang guards, not budgets: a minute on an idle machine, longer on a loaded one
    // (test/support/patience.ts); no test asserts how long anything took.
    testTimeout: patience(60_000),
    hookTimeout: patience(60_000),
    // The chaos table (test/chaos/): printed once at the end when a chaos scenario ran; then
    // the failed tests and unhandled errors, one line each, as the last lines of the run.
    reporters: ['default', './test/chaos/reporter.ts', './test/support/failures-reporter.ts'],
  },
})
