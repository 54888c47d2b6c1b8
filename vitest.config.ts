import { defineConfig } from 'vitest/config'

export default defineConfig({
  // NestJS apps (the nestjs front ends, docs/nestjs.md's guide) use TypeScript's legacy
  // decorators with emitted parameter types, as Nest's own tsconfig does.
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
