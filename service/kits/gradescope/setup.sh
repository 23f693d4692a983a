#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image (Ubuntu, as root).
# Server mode needs nothing but python3; local mode installs kernelgrade and its sandbox.
set -euo pipefail
cd /autograder/source
apt-get install -y -qq python3 >/dev/null
if python3 -c 'import json,sys; sys.exit(json.load(open("kernelgrade.json")).get("mode") != "local")'; then
  apt-get install -y -qq python3-venv bubblewrap util-linux >/dev/null
  python3 -m venv /autograder/kernelgrade-venv
  /autograder/kernelgrade-venv/bin/pip install -q --upgrade pip
  # The kernelgrade source shipped in this zip (kernelgrade-src/), with the CPU pins it was tested with.
  /autograder/kernelgrade-venv/bin/pip install -q -c kernelgrade-src/constraints/cpu.txt ./kernelgrade-src
  ln -sf /autograder/kernelgrade-venv/bin/kernelgrade /usr/local/bin/kernelgrade
fi
