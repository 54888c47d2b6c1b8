import type { Reporter, SerializedError, TestModule } from 'vitest/node'

/**
 * Prints, as the very last lines of a run, which tests failed and the unhandled errors
 * that failed it, one line each: a CI log is often read from its end, and vitest's own
 * summary of failures is long and comes before the chaos table.
 */
export default class FailuresReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    const lines: string[] = []
    for (const module of testModules) {
      for (const error of module.errors()) lines.push(`${module.relativeModuleId}: ${firstLine(error.message)}`)
      for (const test of module.children.allTests()) {
        const result = test.result()
        if (result.state !== 'failed') continue
        lines.push(`${module.relativeModuleId} > ${test.fullName}: ${firstLine(result.errors?.[0]?.message)}`)
      }
    }
    for (const error of unhandledErrors) lines.push(`unhandled ${error.name ?? 'error'}: ${firstLine(error.message)}`)
    if (lines.length === 0) return
    process.stdout.write(`\nFAILED (${lines.length}):\n${lines.map((line) => `  ${line}`).join('\n')}\n`)
  }
}

const firstLine = (message: string | undefined) => (message ?? '(no message)').split('\n')[0]!.slice(0, 300)
