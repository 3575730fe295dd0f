import type { StoredDoc } from "./registry-store.js";

/** A `skill_docs` row as both registry schemas (SQLite and PostgreSQL) name its columns. */
export interface SkillDocRow {
  id: number;
  mailbox: string;
  agent_name: string;
  agent_description: string;
  skill_name: string;
  skill_description: string;
  tags: string;
  examples: string;
}

export function toStoredDoc(row: SkillDocRow): StoredDoc {
  return {
    id: row.id,
    mailbox: row.mailbox,
    agentName: row.agent_name,
    agentDescription: row.agent_description,
    skillName: row.skill_name,
    skillDescription: row.skill_description,
    tags: row.tags,
    examples: row.examples,
  };
}
