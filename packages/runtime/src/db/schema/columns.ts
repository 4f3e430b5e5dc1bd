import type { ColumnType } from 'kysely';

// Column types the tables of every area share.
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type Json<T = Record<string, unknown>> = ColumnType<T, string, string>;
/** Offsets are int64 on the wire; pg returns bigint columns as strings. */
export type Int64 = ColumnType<string, string | bigint, string | bigint>;
