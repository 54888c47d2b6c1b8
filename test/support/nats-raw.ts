import net from 'node:net'
import { eventually } from '../queue/support.js'

/**
 * Publishes one message per id to `subject` with `Nats-Msg-Id` set to the id's raw bytes,
 * as a Go or C producer can (the JavaScript client only sends text headers), over the
 * plain protocol (HPUB), and waits for the server's PONG. The payload is `{"n": <index>}`.
 */
export async function publishRawIds(url: string, subject: string, ids: readonly Buffer[]): Promise<void> {
  const { hostname, port } = new URL(url)
  const socket = net.connect({ host: hostname, port: Number(port || 4222) })
  try {
    let received = ''
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')))
    await eventually(() => received.includes('INFO '), 5_000, 'the NATS INFO line')
    const frames: Buffer[] = [Buffer.from('CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\n')]
    ids.forEach((id, n) => {
      const headers = Buffer.concat([Buffer.from('NATS/1.0\r\nNats-Msg-Id: '), id, Buffer.from('\r\n\r\n')])
      const payload = Buffer.from(JSON.stringify({ n }))
      frames.push(Buffer.from(`HPUB ${subject} ${headers.length} ${headers.length + payload.length}\r\n`), headers, payload, Buffer.from('\r\n'))
    })
    frames.push(Buffer.from('PING\r\n'))
    socket.write(Buffer.concat(frames))
    await eventually(() => received.includes('PONG'), 10_000, 'the NATS PONG')
    if (received.includes('-ERR')) throw new Error(`NATS refused the raw publish: ${received}`)
  } finally {
    socket.destroy()
  }
}
