import type { OwnedRegistrations } from "@mq9/broker";
import { Bm25Index } from "../search/bm25-index.js";
import { searchTerms } from "../search/text-search.js";
import { RegistrationIndex } from "./registration-index.js";
import type { AgentFilter, AgentRow, RankedAgent, SkillDoc } from "./registry-store.js";

/** BM25 field weights, in the order of fieldsOf: a skill's own words count most. */
const BM25_WEIGHTS = [2, 1, 3, 2, 2, 1];

function fieldsOf(doc: SkillDoc): string[] {
  return [doc.agentName, doc.agentDescription, doc.skillName, doc.skillDescription, doc.tags, doc.examples];
}

/**
 * What every registry store keeps in memory and answers reads from: a RegistrationIndex
 * (records, liveness, tags, name order) and a Bm25Index over the skills. A store loads them at
 * open and calls index/unindex after each change it commits (or follows from elsewhere), so the
 * reads below are the same whichever database holds the registrations.
 */
export abstract class IndexedRegistryReads {
  protected readonly registrations = new RegistrationIndex();
  protected readonly text = new Bm25Index(BM25_WEIGHTS);

  get(mailboxes: string[], nowMs: number): Promise<AgentRow[]> {
    const rows: AgentRow[] = [];
    for (const mailbox of mailboxes) {
      const entry = this.registrations.get(mailbox);
      if (entry !== undefined && this.registrations.isLive(entry, nowMs)) rows.push(entry.record);
    }
    return Promise.resolve(rows);
  }

  list(filter: AgentFilter, nowMs: number, offset: number, limit: number): Promise<AgentRow[]> {
    return Promise.resolve(
      this.registrations.page(filter, nowMs, offset, limit).map((entry) => entry.record),
    );
  }

  search(
    text: string,
    filter: AgentFilter,
    nowMs: number,
    offset: number,
    limit: number,
  ): Promise<RankedAgent[]> {
    const terms = searchTerms(text, this.text);
    if (terms.length === 0) return Promise.resolve([]);
    const accept = (owner: number) => this.accepted(owner, filter, nowMs);
    const ranked = this.text.search(terms, offset + limit, accept).slice(offset);
    return Promise.resolve(
      ranked.map(({ owner, score }) => ({ mailbox: this.registrations.ofOwner(owner)!.mailbox, score })),
    );
  }

  countMatching(filter: AgentFilter, nowMs: number): Promise<number> {
    return Promise.resolve(this.registrations.countMatching(filter, nowMs));
  }

  countSearch(text: string, filter: AgentFilter, nowMs: number): Promise<number> {
    const terms = searchTerms(text, this.text);
    if (terms.length === 0) return Promise.resolve(0);
    return Promise.resolve(this.text.countOwners(terms, (owner) => this.accepted(owner, filter, nowMs)));
  }

  candidates(filter: AgentFilter, nowMs: number): Promise<Set<string>> {
    return Promise.resolve(new Set(this.registrations.matching(filter, nowMs).map((entry) => entry.mailbox)));
  }

  namesakes(name: string, nowMs: number): Promise<AgentRow[]> {
    return Promise.resolve(
      this.registrations
        .namesakes(name)
        .filter((entry) => this.registrations.isLive(entry, nowMs))
        .map((entry) => entry.record),
    );
  }

  owners(nowMs: number, examples: number): Promise<OwnedRegistrations[]> {
    return Promise.resolve(this.registrations.userOwners(nowMs, examples));
  }

  count(nowMs: number): Promise<number> {
    return Promise.resolve(this.registrations.liveCount(nowMs));
  }

  /** Puts a registration and its skills into the in-memory indexes. */
  protected index(agent: AgentRow, ids: number[], docs: SkillDoc[]): void {
    const entry = this.registrations.put(agent, ids);
    for (const [i, doc] of docs.entries()) this.text.add(ids[i], entry.owner, fieldsOf(doc));
  }

  /** Drops a registration from the in-memory indexes (after its delete committed). */
  protected unindex(mailbox: string): void {
    const entry = this.registrations.remove(mailbox);
    for (const id of entry?.docIds ?? []) this.text.remove(id);
  }

  private accepted(owner: number, filter: AgentFilter, nowMs: number): boolean {
    const entry = this.registrations.ofOwner(owner);
    return entry !== undefined && this.registrations.accepts(entry, filter, nowMs);
  }
}
