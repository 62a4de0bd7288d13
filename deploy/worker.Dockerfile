# The worker on Node 20, the runtime Temporal supports for workers (TypeScript through tsx).
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
CMD ["node", "--import", "tsx", "src/worker.ts"]
