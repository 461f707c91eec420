#!/usr/bin/env bash
# Makes tests/fixtures/imports/lm_eval/ with the real lm-evaluation-harness (lm-eval[api], no
# torch): two runs of the tinyqa task (tests/fixtures/imports/lm_eval_task/) against a loopback
# OpenAI-compatible server, model tiny-a in full and tiny-b with --limit 4. Versions are
# recorded in tests/fixtures/imports/lm_eval/VERSIONS.json.
#   pip install 'lm-eval[api]==0.4.13' && scripts/imports/make_lm_eval_fixture.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python scripts/imports/make_fixtures.py lm-eval
