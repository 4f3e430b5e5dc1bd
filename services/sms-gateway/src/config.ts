import { infrastructureConfig, metricsConfig, projectionWaitSetting } from '@leadline/runtime';
import { registrationEnforcementConfig, telephonyConfig } from '@leadline/telephony';
import { z } from 'zod';

export const gatewayConfigSchema = infrastructureConfig.extend({
  ...metricsConfig,
  ...telephonyConfig.shape,
  ...registrationEnforcementConfig,
  PROJECTION_WAIT_MS: projectionWaitSetting,
  /** Bound on each call to Kafka when writing: past it a write answers 503 event_log_unavailable. */
  EVENT_LOG_TIMEOUT_MS: z.coerce.number().int().positive().default(3000),
  /** Accounts sent to at once; each account's messages go out one at a time, in order. */
  SMS_GATEWAY_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** How long an interrupted send waits for Twilio's status callback before it counts as failed. */
  SMS_SENDING_TIMEOUT_MINUTES: z.coerce.number().int().positive().default(10),
  /**
   * Bound on one call to the provider: past it the send's outcome is unknown (never retried) and the
   * row is left to reconciliation, which looks at sends older than twice this (`sendingGraceMs`).
   */
  SMS_SEND_TIMEOUT_SECONDS: z.coerce.number().int().positive().default(30),
  /**
   * A manual message or compliance reply older than this when its turn comes is failed (`expired`),
   * never sent: a backlog after an outage must not go out at night. Sequence and AI sends follow their
   * sending window instead.
   */
  SMS_MAX_QUEUE_AGE_MINUTES: z.coerce.number().int().positive().default(60),
  /**
   * Messages a second each sending number may carry: a US long code's campaign is typically given 1
   * (the carriers' tier for most brands); raise it to what the campaign was granted.
   */
  SMS_MESSAGES_PER_SECOND: z.coerce.number().positive().max(1000).default(1),
  /** Messages a day one brand (account) may send, on the carriers' day (Pacific); unset: no cap. */
  SMS_BRAND_DAILY_CAP: z.coerce.number().int().positive().optional(),
});
export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;

/** How long a send may be in flight before reconciliation takes it for interrupted: twice its call's bound. */
export const sendingGraceMs = (config: Pick<GatewayConfig, 'SMS_SEND_TIMEOUT_SECONDS'>) =>
  config.SMS_SEND_TIMEOUT_SECONDS * 2000;
