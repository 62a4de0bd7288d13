# The worker on Node 20, the runtime Temporal supports for workers (TypeScript through tsx).
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# The heap flags of scripts/infra.mjs WORKER_NODE_ARGS (why: see there).
CMD ["node", "--max-old-space-size=192", "--max-semi-space-size=4", "--import", "tsx", "src/worker.ts"]
