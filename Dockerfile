# syntax=docker/dockerfile:1
# Build stage: full dependencies (native modules compile here), TypeScript build.
FROM node:22-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev

# Runtime stage: production dependencies and the built service only, as a non-root user.
FROM node:22-bookworm-slim
ENV NODE_ENV=production PORT=3000 DATA_DIR=/tmp/results-data SEED_DEMO=false MIGRATIONS_RUN=false
# Buffers of 1 MB and more (pages of hundreds of visits) get memory of their own from the
# kernel and give it back when freed. By default glibc raises this threshold after the first
# large free and then keeps such buffers in its heap, which never shrinks: after 50 connections
# reading 1000-visit pages the process stayed at 450 MB instead of going back to about 220 MB.
# Below 1 MB (a 100-visit page is some 430 KB) glibc's heap serves them: a fresh mapping is
# faulted in page by page as it is written, which made pages read from the database a fifth
# slower with a threshold of 128 KB, for no lower idle figure (README "Performance", item 20).
ENV MALLOC_MMAP_THRESHOLD_=1048576
# A young generation of 4 MB per semi-space (16 by default) and an old generation capped at
# 256 MB (the live heap is some 60 MB; its caches are bounded well below the cap): V8 then
# collects before the heap grows far past what is live. Page bodies live outside the heap.
# After 50 connections on 1000-visit pages: peak 170 MB instead of 300 to 340 MB, the same
# rates (README "Performance").
ENV NODE_OPTIONS="--max-semi-space-size=4 --max-old-space-size=256"
WORKDIR /app
# Owned by root and only read by the user the service runs as: it cannot rewrite its own code,
# also where the root filesystem is not mounted read-only.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000 9464
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/main.js"]
