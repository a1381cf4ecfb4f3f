// Choosing a target for a request (docs/upstreams.md, "Balancing"): the power of two
// choices, weighted. Two distinct targets are drawn with probability proportional to their
// weight, and the one with fewer outstanding requests per unit of weight wins (a tie goes to
// the first draw, so idle targets share traffic by weight). Nothing is allocated: the
// targets are walked in place.

export interface PickableTarget {
  readonly weight: number;
  readonly outstanding: number;
  /** False while ejected or failing its health check. */
  readonly available: boolean;
}

/**
 * Picks among the targets not in `tried`; among available ones if any is, else among all
 * (panic: with every target ejected or down, refusing everything would be worse than trying
 * them). Undefined only when every target was tried.
 */
export function pickTarget<T extends PickableTarget>(targets: readonly T[], random: () => number, tried: readonly T[] | null): T | undefined {
  let onlyAvailable = true;
  let total = totalWeight(targets, tried, true);
  if (total === 0) {
    onlyAvailable = false;
    total = totalWeight(targets, tried, false);
    if (total === 0) return undefined;
  }
  const first = draw(targets, tried, onlyAvailable, null, random() * total)!;
  const rest = total - first.weight;
  if (rest === 0) return first;
  const second = draw(targets, tried, onlyAvailable, first, random() * rest)!;
  return second.outstanding * first.weight < first.outstanding * second.weight ? second : first;
}

function eligible<T extends PickableTarget>(target: T, tried: readonly T[] | null, onlyAvailable: boolean): boolean {
  return (!onlyAvailable || target.available) && (tried === null || !tried.includes(target));
}

function totalWeight<T extends PickableTarget>(targets: readonly T[], tried: readonly T[] | null, onlyAvailable: boolean): number {
  let total = 0;
  for (const target of targets) if (eligible(target, tried, onlyAvailable)) total += target.weight;
  return total;
}

/** The eligible target (other than `skip`) where the running weight passes `point`. */
function draw<T extends PickableTarget>(targets: readonly T[], tried: readonly T[] | null, onlyAvailable: boolean, skip: T | null, point: number): T | undefined {
  let last: T | undefined;
  for (const target of targets) {
    if (target === skip || !eligible(target, tried, onlyAvailable)) continue;
    last = target;
    point -= target.weight;
    if (point < 0) return target;
  }
  // Rounding at the very end of the range.
  return last;
}
