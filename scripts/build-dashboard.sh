#!/usr/bin/env bash
# Builds the embedded dashboard (apps/dashboard) unless its build is newer than every source file.
set -euo pipefail
cd "$(dirname "$0")/../apps/dashboard"
built=dist/index.html
if [ -f "$built" ] && [ -z "$(find src index.html vite.config.ts package.json -newer "$built" -print -quit)" ]; then
  exit 0
fi
npx vite build --logLevel warn
