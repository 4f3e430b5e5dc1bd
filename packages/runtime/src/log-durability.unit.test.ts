import { describe, expect, it } from 'vitest';
import { ConfigError } from './config';
import { declaredDurability, durabilityShortfalls } from './log-durability';

describe('the durability a deployment declares', () => {
  it('is 1 and 1 on one broker, 3 and 2 on a cluster of three, unless set', () => {
    expect(declaredDurability({})).toEqual({ replicationFactor: 1, minInsyncReplicas: 1 });
    expect(declaredDurability({ KAFKA_REPLICATION_FACTOR: 3 })).toEqual({
      replicationFactor: 3,
      minInsyncReplicas: 2,
    });
    expect(declaredDurability({ KAFKA_REPLICATION_FACTOR: 5, KAFKA_MIN_INSYNC_REPLICAS: 3 })).toEqual({
      replicationFactor: 5,
      minInsyncReplicas: 3,
    });
    expect(() => declaredDurability({ KAFKA_REPLICATION_FACTOR: 1, KAFKA_MIN_INSYNC_REPLICAS: 2 })).toThrow(
      ConfigError,
    );
  });
});

describe('the shortfalls of the log against it', () => {
  const cluster = { replicationFactor: 3, minInsyncReplicas: 2 };

  it('name each topic below the declared replication or min.insync.replicas', () => {
    expect(
      durabilityShortfalls(cluster, [
        { topic: 'leadline.account.v1', replicationFactor: 3, minInsyncReplicas: 2 },
        { topic: 'leadline.partner.v1', replicationFactor: 1, minInsyncReplicas: 2 },
        { topic: 'leadline.inbound.v1', replicationFactor: 3, minInsyncReplicas: 1 },
      ]),
    ).toEqual([
      'leadline.partner.v1: replication factor 1, below the declared 3',
      'leadline.inbound.v1: min.insync.replicas 1, below the declared 2',
    ]);
  });

  it('accept topics at or above what is declared', () => {
    expect(
      durabilityShortfalls({ replicationFactor: 1, minInsyncReplicas: 1 }, [
        { topic: 'a', replicationFactor: 3, minInsyncReplicas: 2 },
      ]),
    ).toEqual([]);
  });

  it('name a producer that is not idempotent or does not wait for every in-sync replica', () => {
    expect(durabilityShortfalls(cluster, [], { idempotent: false, acks: 1 })).toEqual([
      'the event producer is not idempotent',
      'the event producer writes with acks=1, not all',
    ]);
    expect(durabilityShortfalls(cluster, [])).toEqual([]);
  });
});
