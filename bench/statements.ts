import pg from 'pg';

let counting: Map<string, number> | undefined;
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
  if (counting) {
    const first = args[0] as string | { text?: string } | undefined;
    const text = (typeof first === 'string' ? first : (first?.text ?? '?')).replace(/\s+/g, ' ').trim();
    counting.set(text, (counting.get(text) ?? 0) + 1);
  }
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

/**
 * Every SQL statement any `pg` client of this process sends from now until `stop`, by its text, `begin`
 * and `commit` included (pg_stat_statements is not loaded on the development server, so
 * `Client.query` is counted). One window at a time.
 */
export function countStatements(): { stop(): Map<string, number> } {
  const statements = new Map<string, number>();
  counting = statements;
  return {
    stop() {
      if (counting === statements) counting = undefined;
      return statements;
    },
  };
}

/** How many statements a count holds in all. */
export const statementTotal = (statements: Map<string, number>) =>
  [...statements.values()].reduce((sum, count) => sum + count, 0);

/**
 * The statements of a count per operation, most frequent first, one line each (`BENCH_STATEMENTS=1`
 * prints them for the rows that count statements): where a row's round trips go.
 */
export function statementsPer(statements: Map<string, number>, operations: number, operation: string) {
  const lines = [...statements]
    .sort((a, b) => b[1] - a[1])
    .map(([text, count]) => `${(count / operations).toFixed(2).padStart(7)}  ${text.slice(0, 160)}`);
  return [`SQL statements per ${operation}, by text:`, ...lines].join('\n');
}
