// idem's TypeDoc plugin for the Markdown reference: each module is named by the specifier
// a user imports (`idem/hono`) instead of its source path (`http/hono`), and every link
// to a heading uses the anchor GitHub gives that heading.
import { Converter } from 'typedoc'
import { ModuleRouter } from 'typedoc-plugin-markdown'
import { entryPoints } from './entries.mjs'

/** TypeDoc's own name for an entry point: its path under src/, without `.ts` and `/index`. */
const typedocName = (source) => source.replace(/^src\//, '').replace(/\.ts$/, '').replace(/(^|\/)index$/, '') || 'index'

/**
 * typedoc-plugin-markdown's one page per module, with one fix. It anchors a member twice,
 * first from the page (`FaultProxy.stats` → `faultproxystats`), then from its parent
 * (`stats`), and keeps the second; but the first stays taken on the page, so a later
 * heading with that text (`### FaultProxyStats`) is linked as `#faultproxystats-1`,
 * which is not its anchor on GitHub. The first pass is skipped: the second anchors every
 * member of a declaration that has a heading.
 */
class ModuleHeadingsRouter extends ModuleRouter {
  buildAnchors(target, pageTarget) {
    if (this.sluggers.has(pageTarget) && target.parent !== pageTarget) return
    super.buildAnchors(target, pageTarget)
  }
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  const specifiers = new Map(entryPoints().map(({ specifier, source }) => [typedocName(source), specifier]))
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.children ?? []) {
      const specifier = specifiers.get(module.name)
      if (specifier === undefined) throw new Error(`api-reference: no entry point is documented as ${module.name}`)
      module.name = specifier
    }
  })
  app.renderer.defineRouter('module-headings', ModuleHeadingsRouter)
}
