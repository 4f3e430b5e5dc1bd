import type { EventCodec } from '@leadline/events';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema';
import type { PositionedEvent } from '../log-records';
import {
  isTransientFailure,
  parkingFailure,
  pendingRecords,
  releasedStreams,
  type ParkedRecordNotice,
  type ParkingPlace,
} from '../parking';
import { CheckpointBehindError, decodeRecord } from './records';

export interface ParkingHandlerDeps {
  db: Kysely<Database>;
  codec: EventCodec;
  place: ParkingPlace;
  /** Names the consumer in logs. */
  label: string;
  /** Applies records in one transaction whose first step is `sortOutRecords` (or `freshRecords`). */
  handleBatch(topic: string, partition: number, records: PositionedEvent[]): Promise<void>;
  onParked?: ((notice: ParkedRecordNotice) => void) | undefined;
  pollMs?: number | undefined;
}

/**
 * Parking around a consumer's batch handler (see parking.ts). `handle` hands the records over as one
 * batch; if that fails for a reason that is not the infrastructure's, it hands them over again one at
 * a time, in log order, and a record that still fails is parked: its stream waits behind it while
 * every other stream moves on. `startReleasing` applies, through the same handler and in log order,
 * the streams an operator released (a retry requested, or the parked record skipped).
 */
export function parkingHandler(deps: ParkingHandlerDeps) {
  const { db, codec, place, label } = deps;
  const onParked =
    deps.onParked ??
    ((notice: ParkedRecordNotice) =>
      console.error(
        `${label}: parked ${notice.topic}[${notice.partition}]@${notice.offset} (${notice.eventType ?? 'undecodable'}, stream ${notice.streamKey ?? '-'}): ${notice.error}`,
      ));

  async function handle(topic: string, partition: number, records: PositionedEvent[]) {
    try {
      await deps.handleBatch(topic, partition, records);
      return;
    } catch (error) {
      // Postgres or the network failing is retried by the consumer as a whole, never parked; a batch
      // past the checkpoint is fetched again from it.
      if (isTransientFailure(error) || error instanceof CheckpointBehindError) throw error;
    }
    for (const record of records) {
      try {
        await deps.handleBatch(topic, partition, [record]);
      } catch (error) {
        if (isTransientFailure(error) || error instanceof CheckpointBehindError || record.failure)
          throw error;
        const failure = parkingFailure(error);
        await deps.handleBatch(topic, partition, [{ ...record, failure }]);
        onParked({
          topic,
          partition,
          offset: record.offset,
          streamKey: record.key ?? null,
          eventType: record.event?.type ?? null,
          error: failure,
        });
      }
    }
  }

  function reportDecodeFailures(topic: string, partition: number, records: readonly PositionedEvent[]) {
    for (const record of records) {
      if (record.failure)
        onParked({
          topic,
          partition,
          offset: record.offset,
          streamKey: record.key ?? null,
          eventType: null,
          error: record.failure,
        });
    }
  }

  function startReleasing() {
    let running = false;
    const release = async () => {
      if (running) return;
      running = true;
      try {
        for (const stream of await releasedStreams(db, place)) {
          const rows = await pendingRecords(db, place, stream);
          const records = await Promise.all(
            rows.map(async (row) => ({
              ...(await decodeRecord(codec, row.offset, row.stream_key, row.value)),
              replayed: true,
            })),
          );
          await handle(stream.topic, stream.partition, records);
        }
      } catch (error) {
        console.error(`${label}: applying released records failed`, error);
      } finally {
        running = false;
      }
    };
    const poll = setInterval(() => void release(), deps.pollMs ?? 1000);
    return { stop: () => clearInterval(poll) };
  }

  return { handle, reportDecodeFailures, startReleasing };
}
