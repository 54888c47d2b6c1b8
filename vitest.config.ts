import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The chaos table (test/chaos/): printed once at the end when a chaos scenario ran.
    reporters: ['default', './test/chaos/reporter.ts'],
  },
})
