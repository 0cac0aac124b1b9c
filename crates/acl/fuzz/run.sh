#!/usr/bin/env bash
# Run every fuzz target of kvik-acl for SECONDS seconds each (default 600):
#   ./run.sh [SECONDS] [TARGET ...]   (see build/fuzz.sh)
exec "$(dirname "$0")/../../../build/fuzz.sh" "$(dirname "$0")" "$@"
