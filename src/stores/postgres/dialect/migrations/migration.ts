/** One schema change, as data: applied in order, each once, in one transaction. */
export interface Migration {
  version: number
  description: string
  /** The statements that apply it, for the schema given. */
  up: (schema: string) => string[]
}
