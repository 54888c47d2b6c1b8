/**
 * The Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag (the text between the
 * first `{` and the next `}`, when not empty) or of the whole key, modulo 16384, as
 * Redis computes it (CLUSTER KEYSLOT). What routes a write and its `WAIT` to one master
 * on a node-redis Cluster.
 * @example clusterSlot('{user1000}.following') === clusterSlot('{user1000}.followers')
 */
export function clusterSlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8')
  const open = bytes.indexOf(0x7b)
  let part = bytes
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1)
    if (close > open + 1) part = bytes.subarray(open + 1, close)
  }
  let crc = 0
  for (const byte of part) {
    crc ^= byte << 8
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % 16384
}
