export interface RankedOwner {
  owner: number;
  score: number;
}

/**
 * The `need` best owners seen so far, each at the score of its best doc: best first, ties to the
 * lower owner number. `accept` is asked once per owner, and only for owners good enough to enter.
 */
export class TopOwners {
  readonly ranked: RankedOwner[] = [];
  private readonly verdicts = new Map<number, boolean>();

  constructor(
    private readonly need: number,
    private readonly accept: (owner: number) => boolean,
  ) {}

  /** The score a new owner has to reach (and beat on owner number when equal); 0 until full. */
  get floor(): number {
    return this.ranked.length === this.need ? this.ranked[this.need - 1].score : 0;
  }

  /** Offers one doc of `owner` scoring `score`. */
  offer(owner: number, score: number): void {
    const ranked = this.ranked;
    let at = ranked.findIndex((r) => r.owner === owner);
    if (at >= 0) {
      if (score <= ranked[at].score) return;
      ranked.splice(at, 1);
    } else {
      const last = ranked.length === this.need ? ranked[this.need - 1] : undefined;
      if (last && (score < last.score || (score === last.score && owner > last.owner))) return;
      if (!this.accepts(owner)) return;
    }
    at = ranked.length;
    while (at > 0 && ranks(score, owner, ranked[at - 1])) at--;
    ranked.splice(at, 0, { owner, score });
    if (ranked.length > this.need) ranked.pop();
  }

  private accepts(owner: number): boolean {
    let verdict = this.verdicts.get(owner);
    if (verdict === undefined) {
      verdict = this.accept(owner);
      this.verdicts.set(owner, verdict);
    }
    return verdict;
  }
}

/** Whether (score, owner) ranks before `other`. */
function ranks(score: number, owner: number, other: RankedOwner): boolean {
  return score > other.score || (score === other.score && owner < other.owner);
}
