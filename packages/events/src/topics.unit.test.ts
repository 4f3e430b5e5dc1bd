import { describe, expect, it } from 'vitest';
import { parseTopicName, topicNames } from './topics';

describe("the log's topic names", () => {
  it('keep the original names for generation 1 and add the generation to later ones', () => {
    expect(topicNames('test-1.')).toEqual({
      account: 'test-1.leadline.account-events',
      partner: 'test-1.leadline.partner-events',
    });
    expect(topicNames('', 3)).toEqual({
      account: 'leadline.account-events.g3',
      partner: 'leadline.partner-events.g3',
    });
  });

  it('are read back into prefix, kind and generation; other topics are not the log', () => {
    for (const generation of [1, 2, 12]) {
      for (const [kind, topic] of Object.entries(topicNames('a.b-', generation))) {
        expect(parseTopicName(topic)).toEqual({ prefix: 'a.b-', kind, generation });
      }
    }
    expect(parseTopicName('leadline.account-events.g1')).toBeUndefined();
    expect(parseTopicName('leadline.account-events.g0')).toBeUndefined();
    expect(parseTopicName('leadline.lead-events')).toBeUndefined();
    expect(parseTopicName('test-1.scratch')).toBeUndefined();
  });
});
