// What the budget threshold check (src/ratelimit/budget-thresholds.ts) adds per request, in
// instructions, so the load of a shared machine cannot move it (decision 0069). Run each mode
// under callgrind at two request counts; the difference over the extra requests is the cost
// per request of the loop, and `with` minus `without` is the check's own:
//
//   for mode in without with; do for n in 200000 400000; do
//     valgrind --tool=callgrind --callgrind-out-file=/dev/null node scripts/threshold-check-instructions.mjs $mode $n
//   done; done
//
// Each iteration does what the request path does around the check: a fresh subject string
// for one of 50 accounts, looked up in a map first (as the limiter does, which leaves the
// string flattened and hashed), two window statuses like the bench plan's; `with` then runs
// observe() with the default fractions (no crossing: the limits are out of reach).
import { BudgetThresholds } from '../dist/ratelimit/budget-thresholds.js';
import { windowStatus } from '../dist/ratelimit/rate-limiter.js';

const [mode, count] = process.argv.slice(2);
if ((mode !== 'with' && mode !== 'without') || !(Number(count) > 0)) throw new Error('usage: threshold-check-instructions.mjs with|without N');
const n = Number(count);
const watch = new BudgetThresholds([0.5, 0.8, 1], { publish() {} }, { now: () => Date.now() });
const minute = { name: 'minute', limit: 100_000_000, windowMs: 60_000 };
const day = { name: 'day', limit: 1_000_000_000, windowMs: 86_400_000 };
const limiterMap = new Map();
for (let j = 0; j < 50; j++) limiterMap.set(`account:acct${j}`, 1);
let remaining = 100_000_000;
let sink = 0;
for (let i = 0; i < n; i++) {
  remaining--;
  const windows = [windowStatus(minute, remaining, 0, 0), windowStatus(day, remaining * 10, 0, 0)];
  const subject = `account:acct${i % 50}`;
  sink += limiterMap.get(subject) ?? 1;
  if (mode === 'with') watch.observe(subject, windows);
}
if (sink === 0) console.log(sink);
