import { describe, expect, it } from 'vitest'
import { expression, preparedExpression, preparedUpdate } from './expressions.js'

describe('prepared DynamoDB expressions', () => {
  it('give what expression() gives for the same values', () => {
    const parts = { condition: '#state = :held AND #token = :token', update: 'SET #ver = #ver + :one' }
    const values = { ':held': { S: 'held' }, ':one': { N: '1' }, ':token': { N: '7' } }
    const prepared = preparedUpdate(parts, { ':held': { S: 'held' }, ':one': { N: '1' } }, [':token'])
    expect(prepared({ ':token': { N: '7' } })).toEqual(expression(parts, values))
  })

  it('without values, carry none (DynamoDB refuses an empty map)', () => {
    expect(preparedExpression({ condition: 'attribute_not_exists(#pk)' }, {}, [])({})).toEqual({
      ConditionExpression: 'attribute_not_exists(#pk)',
      ExpressionAttributeNames: { '#pk': 'pk' },
    })
  })

  it('refuse, when made, values the expressions do not use and placeholders nobody gives', () => {
    expect(() => preparedExpression({ condition: '#ver = :ver' }, { ':one': { N: '1' } }, [':ver'])).toThrow(/uses :ver, not :one, :ver/)
    expect(() => preparedExpression({ condition: '#ver = :ver AND #n = :n' }, {}, [':ver'])).toThrow(/uses :ver, :n, not :ver/)
    expect(() => preparedExpression({ condition: '#ver = :ver' }, { ':ver': { N: '1' } }, [':ver'])).toThrow()
  })
})
