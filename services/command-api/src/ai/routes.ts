import fastifyMultipart from '@fastify/multipart';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../app-deps';
import { contextFileRoutes } from './context-file-routes';
import { contextUrlRoutes } from './context-url-routes';
import { promptRoutes } from './prompt-routes';
import { MAX_CONTEXT_FILE_BYTES } from './schemas';

/**
 * The AI's configuration: its prompt and its company context (files and pages). The multipart parser
 * is registered here, around all three, so every AI route reads the same request bodies as before.
 */
export const aiRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(fastifyMultipart, {
    limits: { fileSize: MAX_CONTEXT_FILE_BYTES, files: 1, fields: 5, parts: 6 },
  });
  await app.register(promptRoutes, deps);
  await app.register(contextFileRoutes, deps);
  await app.register(contextUrlRoutes, deps);
};
