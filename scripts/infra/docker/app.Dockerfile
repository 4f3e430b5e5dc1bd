# Image for the Leadline Node services in docker-compose.yml (command-api, projector,
# migrate). One image, the command is chosen per service. Build context: repo root.
FROM node:24-bookworm-slim

WORKDIR /app

# The whole workspace (app.Dockerfile.dockerignore keeps node_modules, .git and
# local state out): npm workspaces need every package.json before `npm ci`.
COPY . .
RUN npm ci --no-audit --no-fund

# Services read their settings (DATABASE_URL, KAFKA_BROKERS, ...) from the environment.
CMD ["npx", "tsx", "services/command-api/src/main.ts"]
