# The API on Bun. Dependencies are installed from package-lock.json with npm, then run by Bun.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM oven/bun:1.4.5
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
COPY migrations ./migrations
ENV PORT=8000
EXPOSE 8000
CMD ["bun", "src/server.ts"]
