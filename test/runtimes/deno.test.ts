import { describeRuntime } from './describe-runtime.js'

describeRuntime('deno')
