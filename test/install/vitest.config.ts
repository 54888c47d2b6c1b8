import { defineConfig } from 'vitest/config'

// The fresh-install check (`npm run test:install`): packs idem and installs it from the
// registry into an empty project, so it runs apart from `npm test`.
export default defineConfig({
  test: {
    include: ['test/install/**/*.test.ts'],
    testTimeout: 240_000,
  },
})
