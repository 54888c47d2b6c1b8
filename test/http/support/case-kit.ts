// What the rows of the conformance table share: their shape, and the checks most of them make.
import { randomUUID } from 'node:crypto'
import { expect } from 'vitest'
import { DEFAULT_PROBLEM_TYPE_BASE as PROBLEM_TYPE_BASE } from '../../../src/http/problem.js'
import type { AppState } from './app.js'
import type { Backend } from './backends.js'
import type { AppOptions, Call, Client, FrontEnd } from './frontends.js'

export interface CaseContext {
  client: Client
  backend: Backend
  state: AppState
  frontEnd: FrontEnd['name']
  /** Run after the case, pass or fail. */
  cleanup: Array<() => void>
}

/** One row of the conformance table: the app's options and what must hold. */
export interface ConformanceCase {
  name: string
  options?: AppOptions
  run(t: CaseContext): Promise<unknown>
}

/** A key no other case uses. */
export const fresh = (): string => `k-${randomUUID()}`
/** A key as an sf-string. */
export const quoted = (key: string): string => `"${key}"`
/** A response's JSON body. */
export const body = async (response: Response): Promise<Record<string, unknown>> => (await response.json()) as Record<string, unknown>

/** A problem+json answer of the given status and code, with the documented type URI. */
export async function expectProblem(response: Response, status: number, code: string): Promise<Record<string, unknown>> {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toBe('application/problem+json')
  const problem = await body(response)
  expect(problem).toMatchObject({ type: `${PROBLEM_TYPE_BASE}#${code}`, status, code })
  expect(typeof problem.title).toBe('string')
  expect(typeof problem.detail).toBe('string')
  return problem
}

/** Sends, expecting no route to run and no key to be stored; the answer, its body read. */
export async function rejected(t: CaseContext, call: Call, status: number, code: string): Promise<Response> {
  const keysBefore = await t.backend.countKeys()
  const response = await t.client.send(call)
  await expectProblem(response, status, code)
  expect(t.state.runs[call.path]).toBeUndefined()
  expect(await t.backend.countKeys()).toBe(keysBefore)
  return response
}
