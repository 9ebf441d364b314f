/**
 * Which generations of a dataset table stay readable: the newest `generations` (never fewer
 * than one: the latest is what clients plan from), and every one younger than `seconds`, so a
 * checkpoint of that age resumes from the generation it pins. The edge's collector and a
 * bucket's own (`ec index`) keep the same.
 */
export interface Retention {
  readonly generations: number;
  readonly seconds: number;
}

/** 16 generations, and every one younger than a week (EC_TABLE_KEEP_GENERATIONS, EC_TABLE_KEEP_SECONDS unset). */
export const DEFAULT_RETENTION: Retention = { generations: 16, seconds: 7 * 86_400 };
