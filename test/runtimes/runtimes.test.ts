// Bun and Deno: each runs the slice (test/runtimes/slice) in a process of its own, and the
// README's quickstart. Both slices start at once: each mostly waits (for leases, expiries,
// the network), so the two overlap.
import { describeRuntime } from './describe-runtime.js'

describeRuntime('bun')
describeRuntime('deno')
