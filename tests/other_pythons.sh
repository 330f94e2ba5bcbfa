#!/usr/bin/env bash
# Every chapter verifies under Python 3.12 and 3.13 as well as the book's 3.11 (issue 38).
# .ci/run calls this after the README's test command; by hand:
#
#     bash tests/other_pythons.sh            # 3.12 and 3.13
#     bash tests/other_pythons.sh 3.13       # one of them
#
# For each version: the newest build of it that pyenv has (or python3.X on PATH), a virtual
# environment of its own in _build/pythons/<version>/venv with the book's pins
# (requirements.txt: the runtime pins a reader's notebook needs, and the toolchain
# tests/verifier.py reads chapters with) and the project (pip install -e ., which makes
# book/_ext importable), then tests/verifier.py on every chapter of _toc.yml, with a build
# folder of its own (BOOK_BUILD_DIR=_build/pythons/<version>/build): a chapter's cached
# outputs are never another Python's. A venv is made again when the pins or the
# interpreter change. Any chapter that fails under any version fails the script.
# Not a pytest file (the name is no test_*.py): the test command does not collect it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -gt 0 ]; then versions=("$@"); else versions=(3.12 3.13); fi

pyenv_root() {
  if command -v pyenv >/dev/null 2>&1 && pyenv root 2>/dev/null; then return; fi
  local root
  for root in "${PYENV_ROOT:-}" "${HOME:-/root}/.pyenv" /root/.pyenv; do
    if [ -n "$root" ] && [ -d "$root/versions" ]; then echo "$root"; return; fi
  done
}

# The interpreter for version $1 (3.12): pyenv's newest 3.12.N, else python3.12 on PATH
# that really is 3.12 (not a pyenv shim that answers for another version).
interpreter() {
  local want=$1 root candidate
  root=$(pyenv_root || true)
  if [ -n "$root" ]; then
    candidate=$(find "$root/versions" -maxdepth 1 -name "$want.*" -printf '%f\n' 2>/dev/null |
                grep -E "^${want//./\\.}\.[0-9]+$" | sort -V | tail -n 1 || true)
    if [ -n "$candidate" ] && [ -x "$root/versions/$candidate/bin/python" ]; then
      echo "$root/versions/$candidate/bin/python"; return
    fi
  fi
  candidate=$(command -v "python$want" 2>/dev/null || true)
  if [ -n "$candidate" ] &&
     [ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$want" ]; then
    echo "$candidate"; return
  fi
  return 1
}

declare -A python venv
for version in "${versions[@]}"; do
  if ! python[$version]=$(interpreter "$version"); then
    echo "other_pythons: no Python $version (neither pyenv's versions/$version.N nor python$version on PATH)" >&2
    exit 1
  fi
done

# -- one venv per version: the pins in parallel, then the project one at a time ---------------
# (two `pip install -e .` at once would write the same engine.egg-info in this folder)
stamp_of() {  # what the venv was made from: the interpreter and every pin file
  { "${python[$1]}" -c 'import sys; print(sys.version)'; echo "${python[$1]}"
    cat requirements.txt book/runtime-requirements.txt pyproject.toml setup.py; } | sha256sum | cut -c1-64
}
declare -A installing
for version in "${versions[@]}"; do
  full=$("${python[$version]}" -c 'import platform; print(platform.python_version())')
  home=$PWD/_build/pythons/$full  # absolute: the kernels run in book/
  venv[$version]=$home/venv
  mkdir -p "$home"
  if [ -x "$home/venv/bin/python" ] && [ "$(cat "$home/venv/.stamp" 2>/dev/null)" = "$(stamp_of "$version")" ]; then
    echo "other_pythons: Python $full: $home/venv is up to date"
    continue
  fi
  echo "other_pythons: Python $full (${python[$version]}): making $home/venv"
  rm -rf "$home/venv" "$home/build"  # a cache made with other pins is not this venv's
  ( "${python[$version]}" -m venv "$home/venv" &&
    "$home/venv/bin/pip" install -q -r requirements.txt ) >"$home/pip.log" 2>&1 &
  installing[$version]=$!
done
for version in "${!installing[@]}"; do
  if ! wait "${installing[$version]}"; then
    echo "other_pythons: installing the pins into ${venv[$version]} failed:" >&2
    grep -v "is ignored: it is neither a file nor a directory" "$(dirname "${venv[$version]}")/pip.log" | tail -n 30 >&2
    exit 1
  fi
  if ! "${venv[$version]}/bin/pip" install -q --no-deps -e . >>"$(dirname "${venv[$version]}")/pip.log" 2>&1; then
    echo "other_pythons: pip install -e . into ${venv[$version]} failed:" >&2
    grep -v "is ignored: it is neither a file nor a directory" "$(dirname "${venv[$version]}")/pip.log" | tail -n 30 >&2
    exit 1
  fi
  "${venv[$version]}/bin/pip" check
  stamp_of "$version" >"${venv[$version]}/.stamp"
done

# -- every chapter under each version, one version at a time (two cores) ----------------------
passed=0 failed=0 failing=()
for version in "${versions[@]}"; do
  home=$(dirname "${venv[$version]}")
  echo "other_pythons: every chapter under $("${venv[$version]}/bin/python" -V)"
  rm -f "$home/verifier.json"
  status=0
  BOOK_BUILD_DIR=$home/build "${venv[$version]}/bin/python" tests/verifier.py \
    --json "$home/verifier.json" || status=$?
  if [ ! -f "$home/verifier.json" ]; then
    echo "other_pythons: the verifier under Python $version checked no chapter (exit $status)" >&2
    exit 1
  fi
  read -r ok bad < <("${venv[$version]}/bin/python" -c '
import json, sys
results = json.load(open(sys.argv[1]))
print(sum(r["ok"] for r in results.values()), sum(not r["ok"] for r in results.values()))
' "$home/verifier.json")
  passed=$((passed + ok)) failed=$((failed + bad))
  if [ "$status" -ne 0 ] || [ "$bad" -ne 0 ]; then failing+=("$version"); fi
done

echo "other_pythons: chapters under Python ${versions[*]}"
echo "verifier: $passed passed, $failed failed"
if [ "${#failing[@]}" -gt 0 ]; then
  echo "other_pythons: chapters fail under Python ${failing[*]} (the reports above)" >&2
  exit 1
fi
