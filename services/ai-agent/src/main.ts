import {
  connectWorkerServices,
  createDocumentStore,
  loadConfig,
  newUuid,
  systemClock,
  serveServiceMetrics,
} from '@leadline/runtime';
import { twilioCredentials } from '@leadline/telephony';
import { startAiAgent } from './agent';
import { agentConfigSchema } from './config';
import { createModelResponder } from './model';
import { offlineResponder } from './offline';

const config = loadConfig(agentConfigSchema);
// Its turns' queue and recordings on its own pool, their commands on theirs (README, "Connection budget").
const services = await connectWorkerServices(config, 'ai-agent', 5);
const agentDb = services.db;
const twilio = twilioCredentials(config);
// The model whenever a key is configured; the deterministic offline responder otherwise.
const responder = config.OPENAI_API_KEY
  ? createModelResponder({
      apiKey: config.OPENAI_API_KEY,
      baseURL: config.OPENAI_BASE_URL,
      model: config.OPENAI_MODEL,
      timeoutMs: config.AI_MODEL_TIMEOUT_SECONDS * 1000,
    })
  : offlineResponder;
const agent = await startAiAgent({
  ...services,
  db: agentDb,
  clock: systemClock,
  newId: newUuid,
  groupId: `${config.TOPIC_PREFIX}leadline.ai-agent`,
  responder,
  documents: createDocumentStore(config, agentDb, services.personalDataKeys),
  allowPrivateTargets: config.ALLOW_PRIVATE_TARGETS,
  twilio: twilio && { accountSid: twilio.accountSid, authToken: twilio.authToken },
  replyDelayMs: config.AI_REPLY_DELAY_SECONDS * 1000,
  maxMessagesPerLeadPerDay: config.AI_MAX_MESSAGES_PER_LEAD_PER_DAY,
  modelTimeoutMs: config.AI_MODEL_TIMEOUT_SECONDS * 1000,
  unavailableAfterMs: config.AI_UNAVAILABLE_AFTER_SECONDS * 1000,
  contextRefreshMs: config.CONTEXT_URL_REFRESH_HOURS * 3600_000,
});
console.warn(
  `ai-agent: running with the ${config.OPENAI_API_KEY ? `model ${config.OPENAI_MODEL}` : 'offline responder'}`,
);
const metrics = await serveServiceMetrics(config, agentDb);

const shutdown = async () => {
  await metrics?.close();
  await agent.stop();
  await services.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
