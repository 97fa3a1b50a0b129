/**
 * Preloaded into a control plane by the fleet bench (`node --expose-gc -r memory-probe.cjs`):
 * on SIGUSR2 it runs a full GC and writes process.memoryUsage() as one JSON line to the file
 * named by BENCH_MEMORY_PROBE (each answer numbered: `{"n", "heapUsed", ...}`), so the bench
 * measures live heap per connected site rather than RSS with garbage not yet collected. With
 * BENCH_HEAP_SNAPSHOTS=1 it also writes a heap snapshot beside that file at each signal.
 */
'use strict';
const { writeFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
const v8 = require('node:v8');

const out = process.env.BENCH_MEMORY_PROBE;
let n = 0;
if (out) {
  process.on('SIGUSR2', () => {
    n++;
    if (typeof globalThis.gc === 'function') {
      globalThis.gc();
      globalThis.gc();
    }
    if (process.env.BENCH_HEAP_SNAPSHOTS === '1')
      v8.writeHeapSnapshot(join(dirname(out), `cp-${process.pid}-${n}.heapsnapshot`));
    writeFileSync(out, JSON.stringify({ n, ...process.memoryUsage() }) + '\n');
  });
}
