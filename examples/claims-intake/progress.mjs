// A one-line progress bar on a terminal; plain milestones when output is piped.

export function createProgress(label, total) {
  const tty = process.stdout.isTTY
  let done = 0
  let lastPrinted = -1
  const draw = () => {
    const share = total === 0 ? 1 : done / total
    if (tty) {
      const width = 30
      const filled = Math.round(share * width)
      process.stdout.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.round(share * 100)).padStart(3)}%  ${done}/${total}`)
    } else {
      const decile = Math.floor(share * 4)
      if (decile !== lastPrinted) {
        lastPrinted = decile
        console.log(`${label} ${Math.round(share * 100)}% (${done}/${total})`)
      }
    }
  }
  draw()
  return {
    tick() {
      done++
      draw()
    },
    done() {
      done = total
      draw()
      if (tty) process.stdout.write('\n')
    },
  }
}
