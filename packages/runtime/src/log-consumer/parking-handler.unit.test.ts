import { DomainError } from '@leadline/domain';
import type { EventCodec } from '@leadline/events';
import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Database } from '../db/schema';
import type { PositionedEvent } from '../log-records';
import { parkingHandler } from './parking-handler';

/** A consumer's handler around `handleBatch`; what it hands over is recorded. Only `handle` is used here. */
function consumerFailingWith(error: unknown) {
  const handedOver: PositionedEvent[][] = [];
  const parked: string[] = [];
  const handler = parkingHandler({
    db: {} as Kysely<Database>,
    codec: {} as EventCodec,
    place: { table: 'parked_records', consumer: 'test' },
    label: 'test',
    async handleBatch(_topic, _partition, records) {
      handedOver.push(records);
      if (!records.some((record) => record.failure)) throw error;
    },
    onParked: (notice) => parked.push(notice.offset),
  });
  return { handler, handedOver, parked };
}

const records: PositionedEvent[] = [
  { offset: '7', key: 'account-1', event: undefined },
  { offset: '8', key: 'account-1', event: undefined },
];

describe("a log consumer's parking", () => {
  it.each([
    [
      'the database did not answer in time',
      new DomainError(
        503,
        'database_busy',
        'The database did not answer in time; nothing was written, retry shortly.',
      ),
    ],
    [
      'a lock not granted in time',
      Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' }),
    ],
    [
      'the read models behind the log',
      new DomainError(
        503,
        'projection_lagging',
        'The read models are catching up with the event log; retry shortly.',
      ),
    ],
  ])('parks nothing when %s: the batch fails whole, and the consumer tries it again', async (_, error) => {
    const { handler, handedOver, parked } = consumerFailingWith(error);
    await expect(handler.handle('leadline.account', 0, records)).rejects.toBe(error);
    expect(handedOver).toEqual([records]);
    expect(parked).toEqual([]);
  });

  it("parks each record that fails for a reason of its own, and lets the stream's others through", async () => {
    const { handler, handedOver, parked } = consumerFailingWith(
      new DomainError(422, 'validation_failed', 'bad'),
    );
    await handler.handle('leadline.account', 0, records);
    expect(parked).toEqual(['7', '8']);
    expect(handedOver.at(-1)).toEqual([{ ...records[1], failure: 'DomainError validation_failed: bad' }]);
  });
});
