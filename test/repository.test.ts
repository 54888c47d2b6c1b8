// What the repository itself holds. A worktree that shares a checkout's install links
// node_modules in; once such a link was committed (test/http/nest10/node_modules), and a
// merge replaced the real install with a link to itself. A clean clone then has a
// dangling link where npm installs Nest 10.
import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'

describe('the repository', () => {
  it('tracks no node_modules, as a folder or as a link', () => {
    const tracked = execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8' }).split('\0')
    expect(tracked.filter((path) => path.split('/').includes('node_modules'))).toEqual([])
  })
})
