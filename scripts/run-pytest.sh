#!/usr/bin/env bash
# Runs the Python test suites (PyTorch oracle, CLI) against $MTK_BIN.
# pytest's "no tests collected" (exit 5) is a failure here: every suite
# must run something.
set -uo pipefail
py=${1:-python3}
cd "$(dirname "$0")/.."
$py -m pytest -q -p no:cacheprovider tests
status=$?
if [ $status -eq 5 ]; then echo "run-pytest: no tests were collected" >&2; exit 1; fi
exit $status
