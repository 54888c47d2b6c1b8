// What a user reads before upgrading or reporting a flaw, shipped in the package:
// CHANGELOG.md (an Unreleased section on top, then every version newest first, the one in
// package.json among them; breaking changes first in each; every entry point named where
// it came), SECURITY.md (private reporting, scope, the supported minor: package.json's) and
// the README's statement of what is public and how versions move.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { entryPoints } from '../support/declarations.js'
import { packedFiles, page, root } from './support.js'

const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }

/** The `## ` sections of a page: heading and text up to the next one. */
function sections(text: string): Array<{ heading: string; body: string }> {
  return text
    .split(/^## /m)
    .slice(1)
    .map((part) => ({ heading: part.slice(0, part.indexOf('\n')), body: part.slice(part.indexOf('\n')) }))
}

/** `0.10.2` → [0, 10, 2], compared part by part. */
const parts = (semver: string): number[] => semver.split('.').map(Number)
const newer = (a: string, b: string): boolean => {
  const [x, y] = [parts(a), parts(b)]
  const i = x.findIndex((n, at) => n !== y[at])
  return i !== -1 && x[i]! > y[i]!
}

describe('CHANGELOG.md', () => {
  const changelog = sections(page('CHANGELOG.md'))

  it("opens with Unreleased, then every version newest first, package.json's among them", () => {
    expect(changelog[0]?.heading).toBe('Unreleased')
    const versions = changelog.slice(1).map(({ heading }) => /^(\d+\.\d+\.\d+)(?: |$)/.exec(heading)?.[1] ?? `not a version: ${heading}`)
    expect(versions).toContain(version)
    for (let i = 1; i < versions.length; i++) expect(newer(versions[i - 1]!, versions[i]!), `${versions[i - 1]} above ${versions[i]}`).toBe(true)
  })

  it('lists breaking changes first in every version', () => {
    for (const { heading, body } of changelog) {
      const kinds = [...body.matchAll(/^### (.+)$/gm)].map((match) => match[1])
      if (kinds.includes('Breaking changes')) expect(kinds[0], heading).toBe('Breaking changes')
    }
  })

  it('names every entry point of package.json', () => {
    const text = page('CHANGELOG.md')
    expect(entryPoints.map(({ specifier }) => specifier).filter((specifier) => !text.includes(`\`${specifier}\``))).toEqual([])
  })
})

describe('SECURITY.md', () => {
  const security = sections(page('SECURITY.md'))
  const section = (heading: string) => security.find((found) => found.heading === heading)?.body ?? ''

  it('says how to report privately, what is in scope and what happens next', () => {
    expect(security.map(({ heading }) => heading)).toEqual(['Reporting a vulnerability', 'Supported versions', 'Scope', 'What happens after a report'])
    expect(section('Reporting a vulnerability')).toContain('private vulnerability reporting on this repository')
    for (const area of ['Tenant isolation', 'Credentials in output', 'Signature verification', 'Denial of service']) expect(section('Scope')).toContain(area)
  })

  it("supports the latest minor: package.json's", () => {
    const [major, minor] = parts(version)
    expect(section('Supported versions')).toContain(`| ${major}.${minor}.x (the latest minor) | yes |`)
  })
})

describe('the release documents', () => {
  it('ship in the package, and the README links them', async () => {
    const shipped = await packedFiles()
    for (const file of ['CHANGELOG.md', 'SECURITY.md', 'README.md', 'LICENSE']) expect(shipped.has(file), file).toBe(true)
    const readme = sections(page('README.md'))
    const stability = readme.find(({ heading }) => heading === 'Stability and versioning')?.body ?? ''
    for (const link of ['](CHANGELOG.md)', '](SECURITY.md)', '](docs/api/README.md)']) expect(stability, link).toContain(link)
  })
})
