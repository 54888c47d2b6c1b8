import { describe, expect, it } from 'vitest'
import { createEventStream, type IdemEvent } from './events.js'

const warning: IdemEvent = { type: 'warning', code: 'test', source: 'test', message: 'hello' }

describe('createEventStream', () => {
  it('listens while anyone is subscribed, and says so in a plain field (reading it runs no code)', () => {
    const events = createEventStream()
    expect(events.listening).toBe(false)
    const first = events.subscribe(() => {})
    const second = events.subscribe(() => {})
    expect(events.listening).toBe(true)
    first()
    expect(events.listening).toBe(true)
    second()
    expect(events.listening).toBe(false)
    const field = Object.getOwnPropertyDescriptor(events, 'listening')
    expect(field?.get).toBeUndefined()
    expect(field?.value).toBe(false)
  })

  it('hands each event to every listener, ignores one that throws, and works taken off the stream', () => {
    const { emit, subscribe } = createEventStream()
    const heard: IdemEvent[] = []
    subscribe(() => {
      throw new Error('a broken listener')
    })
    subscribe((event) => heard.push(event))
    emit(warning)
    expect(heard).toEqual([warning])
  })
})
