#!/usr/bin/env bash
# Install Debian's PostgreSQL, start a throwaway cluster on a free local port and print its URL.
#
#   export DAGSCHED_TEST_PG_URL="$(deploy/ci-postgres.sh)"
#   deploy/ci-postgres.sh stop     # stops the cluster in $PGDATA, if one runs there
#
# Safe to run as root (the server runs as the `postgres` user) and idempotent: a second run
# reuses the cluster in $PGDATA. Everything but the URL goes to stderr.
set -euo pipefail

PGDATA="${PGDATA:-/tmp/dagsched-pg}"
DB="${DAGSCHED_PG_DB:-dagsched_test}"
PGUSER_NAME="${DAGSCHED_PG_USER:-dagsched}"
PGPASS="${DAGSCHED_PG_PASSWORD:-dagsched}"

log() { echo "ci-postgres: $*" >&2; }

as_postgres() {
  if [ "$(id -u)" = 0 ]; then
    if command -v runuser >/dev/null; then runuser -u postgres -- "$@"; else su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; fi
  else
    "$@"
  fi
}

newest_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }  # the newest PostgreSQL installed

if [ "${1:-}" = stop ]; then
  BIN="$(newest_bin || true)"
  if [ -n "$BIN" ] && as_postgres "$BIN/pg_ctl" -D "$PGDATA/data" status >/dev/null 2>&1; then
    as_postgres "$BIN/pg_ctl" -D "$PGDATA/data" -m fast -w stop >/dev/null
    log "stopped the cluster in $PGDATA/data"
  fi
  exit 0
fi

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  log "installing postgresql from the Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi
BIN="$(newest_bin)"

if [ -f "$PGDATA/port" ] && as_postgres "$BIN/pg_ctl" -D "$PGDATA/data" status >/dev/null 2>&1; then
  PORT="$(cat "$PGDATA/port")"
  log "reusing the cluster on port $PORT"
else
  PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
  rm -rf "$PGDATA"
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA" 2>/dev/null || true
  as_postgres "$BIN/initdb" -D "$PGDATA/data" -A trust -U postgres >&2
  as_postgres "$BIN/pg_ctl" -D "$PGDATA/data" -l "$PGDATA/server.log" -w \
    -o "-p $PORT -k $PGDATA -c listen_addresses=127.0.0.1 -c fsync=off" start >&2
  echo "$PORT" >"$PGDATA/port"
  as_postgres psql -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -q \
    -c "CREATE ROLE $PGUSER_NAME LOGIN PASSWORD '$PGPASS'" \
    -c "CREATE DATABASE $DB OWNER $PGUSER_NAME" >&2
  log "started on 127.0.0.1:$PORT (data in $PGDATA/data, log in $PGDATA/server.log)"
fi
echo "postgresql://$PGUSER_NAME:$PGPASS@127.0.0.1:$PORT/$DB"
