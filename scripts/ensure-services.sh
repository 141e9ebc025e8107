#!/usr/bin/env bash
# The tests talk to a real PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379).
# Starts whichever is installed here but not running.
set -uo pipefail

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up; then
  echo "PostgreSQL is not answering on 127.0.0.1:5432; starting it" >&2
  if [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
  fi
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  pg_up || { echo "PostgreSQL could not be started" >&2; exit 1; }
fi

if ! redis_up; then
  echo "Redis is not answering on 127.0.0.1:6379; starting it" >&2
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  redis_up || { echo "Redis could not be started" >&2; exit 1; }
fi
