#!/usr/bin/env bash
# Creates .venv inside the repository and installs kcontroller with its test extras into it.
# Checks Python 3.11+ and Java 17+ (PySpark needs a JVM) first and says what to do when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "kcontroller setup: $PYTHON not found. Install Python 3.11 or newer (Debian/Ubuntu: apt-get install python3 python3-venv)." >&2
  exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "kcontroller setup: Python 3.11 or newer is needed; $PYTHON is $("$PYTHON" -V 2>&1). Set PYTHON=/path/to/python3.11." >&2
  exit 1
fi

java_hint() {
  cat >&2 <<'MSG'
kcontroller setup: PySpark needs Java 17 or newer.
  Debian/Ubuntu:  sudo apt-get update && sudo apt-get install -y openjdk-17-jre-headless
  macOS:          brew install openjdk@17   (then put it on PATH or set JAVA_HOME)
  Other systems:  install any JDK/JRE 17+ and set JAVA_HOME to it.
MSG
}
JAVA=java
[ -n "${JAVA_HOME:-}" ] && JAVA="$JAVA_HOME/bin/java"
if ! command -v "$JAVA" >/dev/null 2>&1; then
  echo "kcontroller setup: no java found (looked for '$JAVA')." >&2
  java_hint; exit 1
fi
java_version=$("$JAVA" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
java_major=${java_version%%.*}
[ "$java_major" = "1" ] && java_major=$(echo "$java_version" | cut -d. -f2)
if ! [ "$java_major" -ge 17 ] 2>/dev/null; then
  echo "kcontroller setup: found Java '$java_version' at $(command -v "$JAVA"); Java 17 or newer is needed." >&2
  java_hint; exit 1
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.kcontroller-installed
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[test]'
  touch "$stamp"
fi
