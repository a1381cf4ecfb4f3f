// The verdict math of issue 34: every performance target of `npm run bench` is a ratio or a
// distance to the floor (bare node:http + undici, bench/reference/bare-undici-proxy.mjs)
// measured in the same rounds, and a run only judges a target when the floor itself held
// still across those rounds. Pure functions, no I/O: test/unit/bench/floor-verdicts.test.ts.
//
// Why the floor's spread decides whether a run can judge: the gateway and the floor share the
// machine's noise round by round, so a per-round ratio or distance cancels most of it; what
// the pairing cannot cancel shows as the floor moving between rounds. When the floor's own
// figure moves by more than the margin a target allows (0.5 ms, or 35 % of the floor's CPU),
// the same run could put the gateway on either side of the line, and the verdict says so
// (UNJUDGED) instead of passing or failing it (docs/decisions/0071-verdicts-against-the-floor.md).
import { median } from './stats.mjs';

const isNumber = (x) => typeof x === 'number' && Number.isFinite(x);

/** Largest minus smallest of the finite values; null with fewer than two. */
export function spread(values) {
  const xs = values.filter(isNumber);
  if (xs.length < 2) return null;
  return Math.max(...xs) - Math.min(...xs);
}

/** spread / median: the floor's movement as a share of itself; null without a spread or a positive median. */
export function relativeSpread(values) {
  const s = spread(values);
  const m = median(values);
  return s === null || !isNumber(m) || m <= 0 ? null : s / m;
}

/**
 * The rounds both sides measured, paired: `rounds` is [{ gateway, floor }] per round; a
 * round where either side has no figure is left out.
 */
function paired(rounds) {
  return rounds.filter((r) => isNumber(r.gateway) && isNumber(r.floor));
}

/** Median over rounds of gateway / floor; null when no round has both (or a floor of 0). */
export function medianRatio(rounds) {
  return median(paired(rounds).filter((r) => r.floor !== 0).map((r) => r.gateway / r.floor));
}

/** Median over rounds of gateway − floor; null when no round has both. */
export function medianDistance(rounds) {
  return median(paired(rounds).map((r) => r.gateway - r.floor));
}

/**
 * Whether a run is quiet enough to judge a target whose allowance over the floor is
 * `margin` (in the floor's unit for a distance, as a share of the floor for a ratio):
 * `floorSpread` is the floor's spread across the rounds (relative for a ratio). One round
 * has no spread, so it cannot show that the floor held still.
 */
export function noiseJudgement({ floorSpread, margin, rounds }) {
  if (rounds < 2 || floorSpread === null) return { quiet: false, reason: `${rounds} round${rounds === 1 ? '' : 's'} of the floor: its spread is unknown` };
  if (floorSpread > margin) return { quiet: false, reason: `the floor's spread ${floorSpread.toFixed(3)} > the margin ${margin.toFixed(3)}` };
  return { quiet: true, reason: `the floor's spread ${floorSpread.toFixed(3)} ≤ the margin ${margin.toFixed(3)}` };
}

/**
 * One floor-relative target. `kind` 'ratio': pass when median(gateway / floor) ≤ `limit`
 * (e.g. 1.35), margin limit − 1, the floor's spread taken relative to its median.
 * `kind` 'distance': pass when median(gateway − floor) ≤ `limit` (e.g. 0.5 ms), margin
 * `limit`, the floor's spread in its own unit. `floorValues` are the floor's own figures per
 * round (what is meant to hold still; by default the `floor` of each round).
 *
 * Returns { standing, limit, toSpare, floorSpread, margin, rounds, quiet, reason, result }:
 * result 'n/a' with no paired round, 'UNJUDGED' when the run is not quiet enough (whatever
 * side of the line the standing is on: a noisy pass is no more evidence than a noisy miss),
 * else 'PASS' or 'FAIL'. toSpare > 0 is room left, < 0 how far it is over.
 */
export function floorVerdict({ kind, limit, rounds, floorValues }) {
  if (kind !== 'ratio' && kind !== 'distance') throw new Error(`floorVerdict: kind must be ratio or distance, not ${kind}`);
  const usable = paired(rounds);
  const floors = (floorValues ?? rounds.map((r) => r.floor)).filter(isNumber);
  const margin = kind === 'ratio' ? limit - 1 : limit;
  const floorSpread = kind === 'ratio' ? relativeSpread(floors) : spread(floors);
  const standing = kind === 'ratio' ? medianRatio(usable) : medianDistance(usable);
  if (standing === null) return { standing: null, limit, toSpare: null, floorSpread, margin, rounds: usable.length, quiet: false, reason: 'no round measured both the gateway and the floor', result: 'n/a' };
  const noise = noiseJudgement({ floorSpread, margin, rounds: floors.length });
  return {
    standing,
    limit,
    toSpare: limit - standing,
    floorSpread,
    margin,
    rounds: usable.length,
    quiet: noise.quiet,
    reason: noise.reason,
    result: !noise.quiet ? 'UNJUDGED' : standing <= limit ? 'PASS' : 'FAIL',
  };
}

/**
 * "None held back": a count, not a spread. The gateway holding none back passes; holding
 * some back while the floor held none fails; when the floor held events back too, the run
 * (the client or the machine, not the proxy) delayed them, and it cannot judge.
 */
export function heldBackVerdict({ gateway, floor }) {
  const bad = gateway.heldBack + gateway.outOfOrder;
  if (!isNumber(bad)) return { result: 'n/a', reason: 'no figure' };
  if (bad === 0) return { result: 'PASS', reason: 'none held back' };
  const floorBad = floor ? floor.heldBack + floor.outOfOrder : null;
  if (!isNumber(floorBad)) return { result: 'n/a', reason: 'the floor did not run' };
  if (floorBad > 0) return { result: 'UNJUDGED', reason: `the floor held back ${floorBad} too` };
  return { result: 'FAIL', reason: 'the floor held none back' };
}

/** "×1.21 of the floor (limit ×1.35: ×0.14 to spare)" / "+0.83 ms over the floor (limit +0.50 ms: 0.33 ms over)". */
export function describeStanding(v, { kind, unit = 'ms', digits = 3 }) {
  if (v.standing === null) return 'no figure';
  if (kind === 'ratio') {
    const room = v.toSpare >= 0 ? `×${v.toSpare.toFixed(2)} to spare` : `×${(-v.toSpare).toFixed(2)} over`;
    return `×${v.standing.toFixed(2)} the floor (limit ×${v.limit.toFixed(2)}: ${room})`;
  }
  const signed = `${v.standing >= 0 ? '+' : '−'}${Math.abs(v.standing).toFixed(digits)} ${unit}`;
  const room = v.toSpare >= 0 ? `${v.toSpare.toFixed(digits)} ${unit} to spare` : `${(-v.toSpare).toFixed(digits)} ${unit} over`;
  return `${signed} vs the floor (limit +${v.limit.toFixed(digits)} ${unit}: ${room})`;
}

/** The result cell: PASS, FAIL, n/a, or "UNJUDGED (noisy: reason; load a–b)". */
export function resultCell(v, loadRange) {
  if (v.result !== 'UNJUDGED') return v.result;
  return `UNJUDGED (noisy: ${v.reason}${loadRange ? `; load ${loadRange}` : ''})`;
}

/** "2.31–4.05" from the 1-minute load averages recorded with each measurement, or null. */
export function loadRange(values) {
  const xs = values.filter(isNumber);
  if (xs.length === 0) return null;
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return lo === hi ? lo.toFixed(2) : `${lo.toFixed(2)}–${hi.toFixed(2)}`;
}
