/** One priority class of a mailbox: the ids kept in memory, in order, and below which it is not whole. */
interface KeptClass {
  /** Kept ids from `head` on, ascending (entries before `head` were dropped). */
  ids: number[];
  head: number;
  /**
   * The highest id of this class stored without being kept (too big, a delayed message that
   * became due): reads from it down go to the database.
   */
  floor: number;
}

/** Dropped entries at the front of a class's array before it is compacted. */
const COMPACT_AFTER = 1024;

/**
 * Which kept messages each mailbox holds, per priority class, and by key: the index that lets
 * RecentMessages answer a class read without SQLite. It is exact from a class's floor on: every
 * message stored since is listed, and every message deleted since is known to be deleted (the
 * store tells it of each delete; a SEND with a key replaces the message with its key here, as
 * the row writer does in the database).
 */
export class KeptClasses {
  private readonly classes = new Map<number, [KeptClass, KeptClass, KeptClass]>();
  /** Keys of kept messages, by mailbox: key → id. */
  private readonly keys = new Map<number, Map<string, number>>();

  /** Lists a kept message (ids come in ascending order). */
  add(mbox: number, rank: number, id: number): void {
    this.classOf(mbox, rank).ids.push(id);
  }

  /** A message of the class stored without being kept: the class is not whole up to it. */
  notKept(mbox: number, rank: number, id: number): void {
    const kept = this.classOf(mbox, rank);
    if (id > kept.floor) kept.floor = id;
  }

  /** The id of the message `id` replaces by its key (see MessageRowWriter.insertMessage), if one is kept. */
  replaceKey(mbox: number, key: string, id: number): number | undefined {
    let keys = this.keys.get(mbox);
    if (!keys) {
      keys = new Map();
      this.keys.set(mbox, keys);
    }
    const replaced = keys.get(key);
    keys.set(key, id);
    return replaced;
  }

  /** Unlists the oldest kept message (it must be the oldest of its class). */
  dropOldest(mbox: number, rank: number, id: number, key: string | null): void {
    const kept = this.classes.get(mbox)?.[rank];
    if (kept && kept.ids[kept.head] === id) {
      kept.head++;
      if (kept.head === kept.ids.length) {
        kept.ids.length = 0;
        kept.head = 0;
      } else if (kept.head >= COMPACT_AFTER && kept.head * 2 >= kept.ids.length) {
        kept.ids.splice(0, kept.head);
        kept.head = 0;
      }
    }
    if (key !== null) {
      const keys = this.keys.get(mbox);
      if (keys?.get(key) === id) keys.delete(key);
    }
  }

  /**
   * Forgets the messages of a mailbox being dropped or purged. Its classes keep a floor at their
   * newest id instead of becoming empty: should the delete not commit, reads of what it held
   * still ask the database.
   */
  forgetMailbox(mbox: number): void {
    const classes = this.classes.get(mbox);
    for (const kept of classes ?? []) {
      if (kept.ids.length > kept.head) kept.floor = Math.max(kept.floor, kept.ids[kept.ids.length - 1]);
      kept.ids.length = 0;
      kept.head = 0;
    }
    this.keys.delete(mbox);
  }

  /** Forgets everything. */
  clear(): void {
    this.classes.clear();
    this.keys.clear();
  }

  /**
   * The kept ids of the class from `fromId` on, ascending; undefined when the class is not whole
   * from there (the database must be asked).
   */
  idsFrom(mbox: number, rank: number, fromId: number): { ids: number[]; at: number } | undefined {
    const kept = this.classes.get(mbox)?.[rank];
    if (!kept) return { ids: [], at: 0 };
    if (fromId <= kept.floor) return undefined;
    const { ids } = kept;
    let low = kept.head;
    let high = ids.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (ids[mid] < fromId) low = mid + 1;
      else high = mid;
    }
    return { ids, at: low };
  }

  private classOf(mbox: number, rank: number): KeptClass {
    let classes = this.classes.get(mbox);
    if (!classes) {
      classes = [newClass(), newClass(), newClass()];
      this.classes.set(mbox, classes);
    }
    return classes[rank];
  }
}

function newClass(): KeptClass {
  return { ids: [], head: 0, floor: -1 };
}
