#!/usr/bin/env bash
# Makes tests/fixtures/imports/promptfoo/results.json with the real promptfoo (0.115: node >= 18;
# later releases want node >= 22): `promptfoo eval -o` on tests/fixtures/imports/promptfoo_config/
# against a loopback OpenAI-compatible server (OPENAI_BASE_URL, dummy key). Versions are
# recorded in tests/fixtures/imports/promptfoo/VERSIONS.json.
#   npm install --prefix /tmp/pf promptfoo@0.115   # PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 offline
#   PROMPTFOO_BIN=/tmp/pf/node_modules/.bin/promptfoo scripts/imports/make_promptfoo_fixture.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python scripts/imports/make_fixtures.py promptfoo
